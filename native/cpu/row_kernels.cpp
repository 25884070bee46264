#include "row_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <limits>

#include "rh/huber.hpp"
#include "rh/validation.hpp"

// Function multiversioning is a GCC/Clang feature on x86-64; elsewhere one plain build. Not
// under ThreadSanitizer: its ifunc resolvers run before the sanitizer's runtime is up and crash.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_THREAD__)
#define RH_ROW_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RH_ROW_KERNEL
#endif

namespace rh::cpu {

template <std::floating_point T>
RH_ROW_KERNEL void huber_rows(const T* residual, const T* weight, std::size_t rows, T tau,
                              T* weighted_score, T* weighted_curvature) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T r = residual[i];
    const T w = weight[i];
    weighted_score[i] = w * std::clamp(r, -tau, tau);
    weighted_curvature[i] = select(std::fabs(r) <= tau, w, T{0});
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void loss_rows(const T* residual, const T* weight, std::size_t rows, double tau,
                             double* loss_terms) {
  for (std::size_t i = 0; i < rows; ++i) {
    loss_terms[i] = static_cast<double>(weight[i]) * huber_rho(static_cast<double>(residual[i]), tau);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void loss_change_rows(const T* residual, const T* projection, const T* weight,
                                    std::size_t rows, T factor, double tau, double* terms) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T a = factor * projection[i];
    terms[i] = static_cast<double>(weight[i]) *
               huber_rho_change(static_cast<double>(residual[i]), static_cast<double>(a), tau);
  }
}

namespace {

// std::clamp(v, lo, hi) exactly (v < lo ? lo : hi < v ? hi : v, signed zeros and all), as
// selects: std::clamp's branches kept the loops below scalar.
template <std::floating_point T>
inline T clamp_select(T v, T lo, T hi) {
  return select(v < lo, lo, select(hi < v, hi, v));
}

}  // namespace

namespace {

// The anchor's piece of a row (row_kernels.hpp, "near rows"): whether r0 is inside tau, and the
// sign of the line outside it.
struct Piece {
  bool inside;
  double sign;
};

template <std::floating_point T>
inline Piece piece_of(T r0, T tau) {
  return {.inside = std::fabs(r0) <= tau, .sign = select(r0 > T{0}, 1.0, -1.0)};
}

inline double loss_off_piece(double r, double tau, Piece piece) {
  const double on_piece = select(piece.inside, 0.5 * r * r, tau * piece.sign * r - 0.5 * tau * tau);
  return huber_rho(r, tau) - on_piece;
}

}  // namespace

template <std::floating_point T>
RH_ROW_KERNEL void near_loss_change_rows(const double* residual, const double* projection,
                                         const T* weight, const T* r0, std::size_t rows, double t,
                                         T tau, double* terms) {
  const auto tau64 = static_cast<double>(tau);
  for (std::size_t k = 0; k < rows; ++k) {
    const Piece piece = piece_of(r0[k], tau);
    const double r = residual[k];
    terms[k] = static_cast<double>(weight[k]) *
               (loss_off_piece(r - t * projection[k], tau64, piece) - loss_off_piece(r, tau64, piece));
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void near_loss_rows(const double* residual, const T* weight, const T* r0,
                                  std::size_t rows, T tau, double* terms) {
  const auto tau64 = static_cast<double>(tau);
  for (std::size_t k = 0; k < rows; ++k) {
    terms[k] = static_cast<double>(weight[k]) * loss_off_piece(residual[k], tau64, piece_of(r0[k], tau));
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void near_score_rows(const T* y, double* residual, const T* weight, const T* r0,
                                   std::size_t rows, T tau, T* curvature, T* score) {
  const auto tau64 = static_cast<double>(tau);
  for (std::size_t k = 0; k < rows; ++k) {
    const double r = static_cast<double>(y[k]) - residual[k];
    residual[k] = r;
    const T w = weight[k];
    curvature[k] = select(std::fabs(static_cast<T>(r)) <= tau, w, T{0});
    const Piece piece = piece_of(r0[k], tau);
    const double psi_off =
        clamp_select(r, -tau64, tau64) - select(piece.inside, r, tau64 * piece.sign);
    score[k] = static_cast<T>(static_cast<double>(w) * psi_off);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void near_sums_rows(const double* residual, const T* weight, const T* r0,
                                  std::size_t rows, T tau, double* square, double* change) {
  const auto tau64 = static_cast<double>(tau);
  for (std::size_t k = 0; k < rows; ++k) {
    const double r = residual[k];
    const auto w = static_cast<double>(weight[k]);
    const Piece piece = piece_of(r0[k], tau);
    const double psi = clamp_select(r, -tau64, tau64);
    const double on_piece = select(piece.inside, r, tau64 * piece.sign);
    square[k] = w * (psi * psi - on_piece * on_piece);
    const bool inside = std::fabs(static_cast<T>(r)) <= tau;
    change[k] = select(inside == piece.inside, 0.0, select(inside, w, -w));
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void information_rows(const T* residual, const T* weight, const T* kept,
                                    std::size_t rows, T tau, T two_h, bool smoothed,
                                    double* score_sq, double* curvature, double* curvature_sq,
                                    T* band_added, T* band_removed, T* outlier_weights,
                                    T* score_sq_weights) {
  // One loop per output group, each branch-free over rows, so that each vectorizes.
  for (std::size_t i = 0; i < rows; ++i) {
    const T r = residual[i];
    const T magnitude = std::fabs(r);
    const T c = smoothed ? clamp_select(T{0.5} + (tau - magnitude) / two_h, T{0}, T{1})
                         : select(magnitude <= tau, T{1}, T{0});
    const auto w64 = static_cast<double>(weight[i]);
    const auto psi64 = static_cast<double>(clamp_select(r, -tau, tau));
    const auto c64 = static_cast<double>(c);
    score_sq[i] = w64 * psi64 * psi64;
    const double wc = w64 * c64;
    curvature[i] = wc;
    curvature_sq[i] = wc * c64;
  }
  if (band_added != nullptr) {
    for (std::size_t i = 0; i < rows; ++i) {
      const T w = weight[i];
      const T c = clamp_select(T{0.5} + (tau - std::fabs(residual[i])) / two_h, T{0}, T{1});
      const bool in_q = kept[i] != T{0};
      band_added[i] = select(in_q, T{0}, w * c);
      band_removed[i] = select(in_q, w - w * c, T{0});
    }
  }
  if (outlier_weights != nullptr) {
    for (std::size_t i = 0; i < rows; ++i) {
      const T w = weight[i];
      const T psi = clamp_select(residual[i], -tau, tau);
      const bool in_q = kept[i] != T{0};
      outlier_weights[i] = select(in_q, T{0}, w);
      score_sq_weights[i] = select(in_q, w * psi * psi, T{0});
    }
  }
}

// Counted in 64-bit lanes from branch-free compares: the flipped rows fall at random, and a
// branch per row (or a compiler keeping the NaN-aware scalar compares) cost 3 ns a row.
template <std::floating_point T>
RH_ROW_KERNEL FlipCounts count_flips(const T* now, const T* kept, const T* weight,
                                     std::size_t rows, unsigned char* flipped) {
  std::uint64_t flips = 0;
  std::uint64_t in_set = 0;
  std::uint64_t leaving = 0;
  std::uint64_t whole = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint64_t moved = now[i] != kept[i];
    const std::uint64_t inside = now[i] != T{0};
    flipped[i] = static_cast<unsigned char>(moved);
    flips += moved;
    in_set += inside;
    leaving += moved & (kept[i] != T{0}) & (inside ^ 1u);
    whole += kept[i] == weight[i];
  }
  return {.flipped = flips, .in_set = in_set, .leaving = leaving, .whole = whole};
}

void append_flagged(const unsigned char* flags, std::size_t rows, std::size_t first_row,
                    std::vector<std::size_t>& list) {
  std::size_t k = 0;
  for (; k + 8 <= rows; k += 8) {
    std::uint64_t word;
    std::memcpy(&word, flags + k, sizeof word);
    while (word != 0) {
      const auto byte = static_cast<std::size_t>(std::countr_zero(word)) / 8;
      list.push_back(first_row + k + byte);
      word &= ~(std::uint64_t{0xff} << (8 * byte));
    }
  }
  for (; k < rows; ++k) {
    if (flags[k] != 0) list.push_back(first_row + k);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL bool any_non_finite_rows(const T* values, std::size_t n) {
  return any_non_finite(values, n);
}

namespace {

// The squared norm's bound as a float: T's rounding of the sum (4 (features + 3) eps) and the
// conversion's (2^-20) rounded up.
template <std::floating_point T>
float squared_norm_bound(T sum, std::size_t features) {
  const T round_up = T{1} + T{4} * static_cast<T>(features + 3) * std::numeric_limits<T>::epsilon();
  return static_cast<float>(sum * round_up) * (1.0f + 0x1p-20f);
}

}  // namespace

// Eight independent sums of squares per row, in the dtype (the bound's rounding-up covers
// them): the loop over the lanes vectorizes.
template <std::floating_point T>
RH_ROW_KERNEL void row_squared_norms(const T* X, std::size_t rows, std::size_t features,
                                     bool intercept, float* squared_norms) {
  constexpr std::size_t lanes = 8;
  for (std::size_t i = 0; i < rows; ++i) {
    const T* row = X + i * features;
    std::array<T, lanes> sums{};
    std::size_t j = 0;
    for (; j + lanes <= features; j += lanes) {
      for (std::size_t k = 0; k < lanes; ++k) sums[k] += row[j + k] * row[j + k];
    }
    T sum = intercept ? T{1} : T{0};
    for (; j < features; ++j) sum += row[j] * row[j];
    // A tree, not a chain: the row's sum waits 3 adds, not 8.
    sum += ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
    squared_norms[i] = squared_norm_bound(sum, features);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void finish_squared_norms(const T* squares, std::size_t rows, std::size_t features,
                                        bool intercept, float* squared_norms) {
  const T one = intercept ? T{1} : T{0};
  for (std::size_t i = 0; i < rows; ++i) {
    squared_norms[i] = squared_norm_bound(squares[i] + one, features);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void add_listed_rows(const T* X, std::size_t features, const std::size_t* rows,
                                   std::size_t count, const T* scores, std::size_t lo,
                                   double* partial) {
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = rows[k];
    const auto s = static_cast<double>(scores[i - lo]);
    const T* x = X + i * features;
    for (std::size_t j = 0; j < features; ++j) partial[j] += s * static_cast<double>(x[j]);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void anchor_rows(const T* residual, const T* weight, std::size_t rows, T tau, T* r0,
                               float* margin, double* sums) {
  constexpr std::size_t lanes = 8;
  const T rounding = T{16} * std::numeric_limits<T>::epsilon();
  constexpr float round_down = 1.0f - 0x1p-20f;
  std::array<double, lanes> square{};
  std::array<double, lanes> outside{};
  std::array<double, lanes> loss{};
  const auto tau64 = static_cast<double>(tau);
  const auto row = [&](std::size_t k, std::size_t lane) {
    const T r = residual[k];
    r0[k] = r;
    const T magnitude = std::fabs(r);
    margin[k] = static_cast<float>(std::fabs(magnitude - tau) - rounding * (magnitude + tau)) *
                round_down;
    const bool inside = magnitude <= tau;
    const auto w = static_cast<double>(weight[k]);
    const auto r64 = static_cast<double>(r);
    square[lane] += select(inside, w * (r64 * r64), 0.0);
    outside[lane] += select(inside, 0.0, w);
    loss[lane] += w * huber_rho(r64, tau64);
  };
  std::size_t i = 0;
  for (; i + lanes <= rows; i += lanes) {
    for (std::size_t k = 0; k < lanes; ++k) row(i + k, k);
  }
  for (std::size_t k = 0; i < rows; ++i, ++k) row(i, k);
  sums[0] = ((square[0] + square[1]) + (square[2] + square[3])) +
            ((square[4] + square[5]) + (square[6] + square[7]));
  sums[1] = ((outside[0] + outside[1]) + (outside[2] + outside[3])) +
            ((outside[4] + outside[5]) + (outside[6] + outside[7]));
  sums[2] = ((loss[0] + loss[1]) + (loss[2] + loss[3])) + ((loss[4] + loss[5]) + (loss[6] + loss[7]));
}

template <std::floating_point T>
RH_ROW_KERNEL void indicator_curvature_rows(const T* residual, const T* weight, std::size_t rows,
                                            T tau, T* weighted_curvature) {
  for (std::size_t i = 0; i < rows; ++i) {
    weighted_curvature[i] = select(std::fabs(residual[i]) <= tau, weight[i], T{0});
  }
}

RH_ROW_KERNEL void near_flags(const float* margin, const float* squared_norms, std::size_t rows,
                              float squared_radius, unsigned char* flags) {
  for (std::size_t i = 0; i < rows; ++i) {
    const float m = margin[i];
    flags[i] = static_cast<unsigned char>(!(m > 0.0f && m * m > squared_norms[i] * squared_radius));
  }
}

template void huber_rows<float>(const float*, const float*, std::size_t, float, float*, float*);
template void huber_rows<double>(const double*, const double*, std::size_t, double, double*,
                                 double*);
template void loss_rows<float>(const float*, const float*, std::size_t, double, double*);
template void loss_rows<double>(const double*, const double*, std::size_t, double, double*);
template void loss_change_rows<float>(const float*, const float*, const float*, std::size_t, float,
                                      double, double*);
template void loss_change_rows<double>(const double*, const double*, const double*, std::size_t,
                                       double, double, double*);
#define RH_NEAR_ROWS_INSTANTIATE(T)                                                              \
  template void near_loss_change_rows<T>(const double*, const double*, const T*, const T*,       \
                                         std::size_t, double, T, double*);                       \
  template void near_loss_rows<T>(const double*, const T*, const T*, std::size_t, T, double*);   \
  template void near_score_rows<T>(const T*, double*, const T*, const T*, std::size_t, T, T*,   \
                                   T*);                                                          \
  template void near_sums_rows<T>(const double*, const T*, const T*, std::size_t, T, double*,    \
                                  double*);
RH_NEAR_ROWS_INSTANTIATE(float)
RH_NEAR_ROWS_INSTANTIATE(double)
#undef RH_NEAR_ROWS_INSTANTIATE
template void information_rows<float>(const float*, const float*, const float*, std::size_t,
                                      float, float, bool, double*, double*, double*, float*,
                                      float*, float*, float*);
template void information_rows<double>(const double*, const double*, const double*, std::size_t,
                                       double, double, bool, double*, double*, double*, double*,
                                       double*, double*, double*);
template FlipCounts count_flips<float>(const float*, const float*, const float*, std::size_t,
                                        unsigned char*);
template FlipCounts count_flips<double>(const double*, const double*, const double*, std::size_t,
                                         unsigned char*);
template bool any_non_finite_rows<float>(const float*, std::size_t);
template bool any_non_finite_rows<double>(const double*, std::size_t);
template void add_listed_rows<float>(const float*, std::size_t, const std::size_t*, std::size_t,
                                     const float*, std::size_t, double*);
template void add_listed_rows<double>(const double*, std::size_t, const std::size_t*, std::size_t,
                                      const double*, std::size_t, double*);
template void row_squared_norms<float>(const float*, std::size_t, std::size_t, bool, float*);
template void row_squared_norms<double>(const double*, std::size_t, std::size_t, bool, float*);
template void finish_squared_norms<float>(const float*, std::size_t, std::size_t, bool, float*);
template void finish_squared_norms<double>(const double*, std::size_t, std::size_t, bool, float*);
template void anchor_rows<float>(const float*, const float*, std::size_t, float, float*, float*,
                                 double*);
template void anchor_rows<double>(const double*, const double*, std::size_t, double, double*,
                                  float*, double*);
template void indicator_curvature_rows<float>(const float*, const float*, std::size_t, float,
                                              float*);
template void indicator_curvature_rows<double>(const double*, const double*, std::size_t, double,
                                               double*);

}  // namespace rh::cpu
