#pragma once
// The elementwise loops of the CPU engine's passes over rows, one job each. They are compiled
// twice on x86-64 (for x86-64-v3, i.e. AVX2, and for the baseline) and the loader picks the
// clone the CPU runs: the branch-free selects of rh/huber.hpp vectorize only with AVX2's 64-bit
// lane compares. Both clones do the same IEEE operations in the same order (no contraction into
// FMAs: -ffp-contract=off), so results never depend on the CPU.

#include <array>
#include <concepts>
#include <cstddef>
#include <vector>

namespace rh::cpu {

// Per row: weighted_score = w psi(r), weighted_curvature = w c(r), with tau the bandwidth in T.
template <std::floating_point T>
void huber_rows(const T* residual, const T* weight, std::size_t rows, T tau, T* weighted_score,
                T* weighted_curvature);

// Per row: loss_terms = w rho(r) in float64 (rh::huber_rho).
template <std::floating_point T>
void loss_rows(const T* residual, const T* weight, std::size_t rows, double tau,
               double* loss_terms);

// Per row: terms = w (rho(r - factor a) - rho(r)) in float64 (rh::huber_rho_change), a the
// projection of a step.
template <std::floating_point T>
void loss_change_rows(const T* residual, const T* projection, const T* weight, std::size_t rows,
                      T factor, double tau, double* terms);

// Per row of the information pass (BatchOps::information), at bandwidth tau: the information
// update's curvature c (smoothed: c_h = clip(1/2 + (tau - |r|) / two_h, 0, 1); else the indicator
// 1{|r| <= tau}) and, in float64, the terms of the inference sums: score_sq = w psi^2,
// curvature = w c, curvature_sq = w c^2. `kept` is the Newton Gram's w c (non-zero: the row is in
// its set Q). With band_added (non-null) the smoothed J_b's row weights, w c off Q and w - w c on
// it (0 elsewhere); with outlier_weights (non-null) G's and K's, w off Q and w psi^2 on it.
// Steps by expansion (expansion.cpp). Per row of a row-major X (`features` columns): the
// squared 2-norm of x~ (1 for the intercept's column when `intercept`), as a float rounded up by
// a relative 4 (features + 3) eps of T and 2^-20 so that it bounds (x~ . v)^2 / ||v||^2 from
// above.
template <std::floating_point T>
void row_squared_norms(const T* X, std::size_t rows, std::size_t features, bool intercept,
                       float* squared_norms);
// The same from x . x (row_dots_and_squares' squares, in T).
template <std::floating_point T>
void finish_squared_norms(const T* squares, std::size_t rows, std::size_t features, bool intercept,
                          float* squared_norms);

// partial[j] += sum over the listed rows i of scores[i - lo] x_ij (j < features), in float64,
// rows in list order: the outside rows' score of an evaluation pass, from cache.
template <std::floating_point T>
void add_listed_rows(const T* X, std::size_t features, const std::size_t* rows, std::size_t count,
                     const T* scores, std::size_t lo, double* partial);

// Per row: the anchor's residual r0 = residual (copied), and its margin: the distance of |r0|
// from tau, less 16 eps (|r0| + tau) for the rounding, as a float rounded down (negative or NaN:
// none); and, summed in float64 by rows' lanes into sums[0], sums[1] and sums[2], w r0^2 over
// the rows within tau, w over the others, and w rho(r0) over all (rh::huber_rho).
template <std::floating_point T>
void anchor_rows(const T* residual, const T* weight, std::size_t rows, T tau, T* r0, float* margin,
                 double* sums);

// Per row: weighted_curvature = w 1{|r| <= tau} (huber_rows' curvature alone).
template <std::floating_point T>
void indicator_curvature_rows(const T* residual, const T* weight, std::size_t rows, T tau,
                              T* weighted_curvature);

// The near rows of steps by expansion (expansion.cpp), each with its weight w and its residual at
// the anchor r0, whose piece of rho (inside tau: r^2 / 2; outside: the line through it, of slope
// tau sign(r0)) the rest of the batch keeps. "Off its piece": rho(r) or psi(r) less that piece's.
// Per row, in float64: terms = w (off(r - t a) - off(r)), a the projection of the step.
template <std::floating_point T>
void near_loss_change_rows(const double* residual, const double* projection, const T* weight,
                           const T* r0, std::size_t rows, double t, T tau, double* terms);
// Per row, in float64: terms = w off(r) of rho.
template <std::floating_point T>
void near_loss_rows(const double* residual, const T* weight, const T* r0, std::size_t rows, T tau,
                    double* terms);
// Per row, from y and the products x~ . beta: residual = y - product (in float64; in place),
// curvature = w 1{|r| <= tau} and score = w psi(r) off its piece, both in T.
template <std::floating_point T>
void near_score_rows(const T* y, double* residual, const T* weight, const T* r0, std::size_t rows,
                     T tau, T* curvature, T* score);
// Per row, in float64: square = w (psi(r)^2 - psi_piece(r)^2), and change = +w where the row
// came inside tau, -w where it left, else 0.
template <std::floating_point T>
void near_sums_rows(const double* residual, const T* weight, const T* r0, std::size_t rows, T tau,
                    double* square, double* change);

// Per row: flags = 1 where the row may reach the bandwidth's edge: not margin > 0 with
// margin^2 > squared_norm * squared_radius (NaN included), else 0.
void near_flags(const float* margin, const float* squared_norms, std::size_t rows,
                float squared_radius, unsigned char* flags);

template <std::floating_point T>
void information_rows(const T* residual, const T* weight, const T* kept, std::size_t rows, T tau,
                      T two_h, bool smoothed, double* score_sq, double* curvature,
                      double* curvature_sq, T* band_added, T* band_removed, T* outlier_weights,
                      T* score_sq_weights);

// What the incremental Gram weighs before it corrects: of the rows whose weighted curvature
// `now` differs from the Gram's `kept` (flipped), how many, how many of the new set (now != 0)
// and of the kept set leaving it, and how many the Gram has with their whole weight (kept == w);
// and per row, flipped = 1 where it flipped, else 0.
struct FlipCounts {
  std::size_t flipped = 0;
  std::size_t in_set = 0;
  std::size_t leaving = 0;
  std::size_t whole = 0;

  FlipCounts& operator+=(const FlipCounts& other) {
    flipped += other.flipped;
    in_set += other.in_set;
    leaving += other.leaving;
    whole += other.whole;
    return *this;
  }
};
template <std::floating_point T>
FlipCounts count_flips(const T* now, const T* kept, const T* weight, std::size_t rows,
                       unsigned char* flipped);

// Appends first_row + k to `list` for every flags[k] != 0, k < rows, in order: eight flags at a
// time, where most words of a sparse set are 0.
void append_flagged(const unsigned char* flags, std::size_t rows, std::size_t first_row,
                    std::vector<std::size_t>& list);

// A sum of per-row values in float64 whose order does not depend on how the rows are cut into
// calls: row i goes to lane i % lanes (i its index in the batch), each lane adds its rows in row
// order, and total() combines the lanes pairwise in lane order. Eight running sums instead of one
// chain: a pass's reduction costs an add's throughput per row, not its latency (one chain over a
// 4,096-row chunk took about as long as the chunk's Huber loop).
class LaneSum {
 public:
  static constexpr std::size_t lanes = 8;

  // values[k] is row first_row + k.
  template <class V>
  void add(const V* values, std::size_t first_row, std::size_t rows) {
    std::size_t k = 0;
    for (std::size_t lane = first_row % lanes; k < rows && lane != 0; ++k, lane = (lane + 1) % lanes) {
      lane_[lane] += static_cast<double>(values[k]);
    }
    // From here row first_row + k is in lane 0.
    for (; k + lanes <= rows; k += lanes) {
      for (std::size_t j = 0; j < lanes; ++j) lane_[j] += static_cast<double>(values[k + j]);
    }
    for (std::size_t j = 0; j < lanes && k < rows; ++j, ++k) {
      lane_[j] += static_cast<double>(values[k]);
    }
  }

  double total() const {
    return ((lane_[0] + lane_[1]) + (lane_[2] + lane_[3])) +
           ((lane_[4] + lane_[5]) + (lane_[6] + lane_[7]));
  }

 private:
  std::array<double, lanes> lane_{};
};

// Whether any of n values is NaN or infinite (rh::any_non_finite, vectorized by the AVX2 clone):
// the deferred scan of X's values, a chunk at a time.
template <std::floating_point T>
bool any_non_finite_rows(const T* values, std::size_t n);

}  // namespace rh::cpu
