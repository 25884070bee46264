#pragma once
// Everything an engine keeps on the device for one dtype, sized for the feature count and the
// largest batch seen so far: a stream of same-shaped batches allocates nothing after its first.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "resources.hpp"

namespace rh::cuda {

// Scalars the device hands to the host, gathered so that one copy and one synchronization bring
// back everything a decision of the solver driver needs.
struct DeviceScalars {
  double sums[18];                       // float64 reductions, indexed by Sum
  unsigned long long first_invalid[4];   // validation, indexed by Check; ~0ull: none
  double one_norm;                       // ||H||_1 (of Ĥ once equilibrated), in the dtype
  unsigned long long rank;               // singular values kept by the last minimum-norm solve
  int info;                              // cuSOLVER info of the last factorization
  int solve_info;                        // cuSOLVER info of the last triangular solve
  int asymmetric;                        // H != H^T somewhere
  int nonfinite;                         // the last solution has a non-finite entry
  int pattern_changed;                   // factorization="qr": a row left its Huber pattern
};

enum Sum : int {
  loss = 0,        // sum w rho(r) at the current point
  score_total,     // sum w psi(r): the intercept's score
  quadratic,       // delta^T J~ delta (float64)
  history,         // s~^T delta
  l1,              // ||beta_S||_1
  change,          // the loss part of dQ along a step: sum w h(r, a)
  delta_j_step,    // delta^T J~ s   (float64; J~ as stored, so not symmetric in general)
  step_j_delta,    // s^T J~ delta
  step_j_step,     // s^T J~ s
  step_history,    // s~^T s
  vector_result,   // dot / norm_inf of coefficient vectors
  score_sq,        // the inference sums of the information pass, in this order: sum w psi^2,
  curvature_total,  // sum w c,
  curvature_sq,    // sum w c^2,
  weight_total,    // sum w
  design_trace,    // sum w ||x||^2 + trace(J~): LAMM's first phi, once per batch
  linear_total,    // factorization="qr": sum (w psi - w c r), the intercept's linear term
  history_square,  // factorization="qr": ||R~ (beta - beta~)||^2 (float64)
};

enum Check : int { x_values = 0, y_values, weight_values, weight_signs };

// Row reductions run on a fixed grid and sum their per-block partials in block order, so results
// do not depend on scheduling (no floating-point atomics).
inline constexpr int reduction_threads = 256;
inline constexpr std::size_t max_reduction_blocks = 1024;
std::size_t reduction_blocks(std::size_t rows);

template <std::floating_point T>
class VectorPool;

// A coefficient-sized device vector leased from the workspace's pool: the drivers create a few
// vectors per solve, and this keeps that from allocating.
template <std::floating_point T>
class DeviceVector {
 public:
  DeviceVector(VectorPool<T>* pool, std::size_t slot, T* data) noexcept
      : pool_(pool), slot_(slot), data_(data) {}
  ~DeviceVector();
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  DeviceVector(DeviceVector&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)), slot_(other.slot_), data_(other.data_) {}
  DeviceVector& operator=(DeviceVector&&) = delete;

  T* data() const noexcept { return data_; }

 private:
  VectorPool<T>* pool_;
  std::size_t slot_;
  T* data_;
};

template <std::floating_point T>
class VectorPool {
 public:
  // Every lease must have been returned (they live within one update).
  void reset(std::size_t dim) {
    if (dim != dim_) slots_.clear();
    dim_ = dim;
    free_.clear();
    for (std::size_t k = slots_.size(); k-- > 0;) free_.push_back(k);
  }

  DeviceVector<T> lease(AllocationStats& stats) {
    if (free_.empty()) {
      slots_.emplace_back();
      slots_.back().reserve(dim_, stats);
      free_.push_back(slots_.size() - 1);
    }
    const std::size_t slot = free_.back();
    free_.pop_back();
    return DeviceVector<T>(this, slot, slots_[slot].data());
  }

  void give_back(std::size_t slot) noexcept { free_.push_back(slot); }

 private:
  std::size_t dim_ = 0;
  std::vector<DeviceBuffer<T>> slots_;
  std::vector<std::size_t> free_;  // reserved by reset(), so give_back() never allocates
};

template <std::floating_point T>
DeviceVector<T>::~DeviceVector() {
  if (pool_ != nullptr) pool_->give_back(slot_);
}

// The ladder's buffers (linear_solver.cu). The SVD buffers stay empty until that rung is reached.
template <std::floating_point T>
struct SolverWorkspace {
  DeviceBuffer<T> factor;                  // d x d, column-major
  DeviceBuffer<std::int64_t> pivots;
  DeviceBuffer<std::byte> device_work;     // potrf and getrf
  std::vector<std::byte> host_work;
  PinnedBuffer<T> host_factor;             // the factor, for the host condition estimate
  std::vector<T> condition_work;           // LAPACK pocon (3d) / gecon (4d)
  std::vector<int> condition_iwork;
  // Minimum-norm rung.
  bool svd_ready = false;
  DeviceBuffer<T> singular_values, left, right_t, projected;
  DeviceBuffer<std::byte> svd_device_work;
  std::vector<std::byte> svd_host_work;
};

// factorization="qr" (square_root.cu): sized the first time a batch runs the mode, so the Cholesky
// mode holds none of it.
template <std::floating_point T>
struct SquareRootWorkspace {
  // Sizes the buffers, and geqrf's for (rows + dim + 2) x (dim + 2) stacked rows.
  void reserve(std::size_t dim, std::size_t features, std::size_t rows, AllocationStats& stats,
               cusolverDnHandle_t solver, cusolverDnParams_t params);

  std::size_t dim = 0;   // the shape geqrf's buffers were sized for
  std::size_t rows = 0;
  // The stacked rows, column-major with leading dimension rows + dim + 2: the batch's rows, the
  // history's dim rows, two zero rows (so that geqrf always has as many rows as columns).
  DeviceBuffer<T> stacked;
  DeviceBuffer<T> reflectors;             // geqrf's tau
  DeviceBuffer<std::byte> device_work;
  std::vector<std::byte> host_work;
  DeviceBuffer<T> linear_rows;            // w psi - w c r per row
  DeviceBuffer<T> linear;                 // X^T of them (features)
  DeviceBuffer<double> column_squares;    // the batch rows' columns' sums of squares (dim)
  DeviceBuffer<T> scales;                 // the columns' equilibration (dim)
  DeviceBuffer<std::uint8_t> pattern;       // the rows' pattern where pattern_repeats() last was
  DeviceBuffer<std::uint8_t> step_pattern;  // ... and where the kept Newton step was made
  PinnedBuffer<T> host_triangle;          // (dim + 2)^2: the top of geqrf's result
  PinnedBuffer<T> host_rows;              // the history's rows and two zero rows, (dim + 2)^2
  PinnedBuffer<T> host_linear;            // features
  PinnedBuffer<double> host_squares;      // dim
  PinnedBuffer<double> host_history;      // dim: R~ beta - z~ at the current point
  // The history of the batch: R~ (row-major) and u0 = R~ beta~ - z~ in float64, and per point
  // a = R~ (beta - beta~), R~ beta - z~ = a + u0, and u = R~ s along a step.
  DeviceBuffer<double> factor64;
  DeviceBuffer<double> history_offset64, history_a64, history_residual64, step_u64;
  std::vector<double> host_factor64, host_offset64;  // their uploads' sources
};

template <std::floating_point T>
struct Workspace {
  // Sizes every buffer for a batch; allocates only when the shape outgrows what is held.
  void reserve(std::size_t dim, std::size_t features, std::size_t rows, AllocationStats& stats,
               cusolverDnHandle_t solver, cusolverDnParams_t params);

  std::size_t dim = 0;
  std::size_t rows_capacity = 0;

  // One entry per row.
  DeviceBuffer<T> residual;             // r = y - X~ beta
  DeviceBuffer<T> weighted_score;       // w psi(r)
  DeviceBuffer<T> weighted_curvature;   // w c(r)
  DeviceBuffer<T> projection;           // X~ s for the step being tried
  DeviceBuffer<T> scaled_rows;          // sqrt(w c) x~, the SYRK operand (n x d)
  DeviceBuffer<T> staged_x, staged_y, staged_w;  // host-fed batches, and unit weights
  PinnedBuffer<T> host_rows;            // residual downloads
  PinnedBuffer<T> host_weights;         // weights of a device-fed batch
  DeviceBuffer<T> score_sq_weights;     // w psi^2: K's row weights (the information pass)
  DeviceBuffer<double> partials;        // 4 x max_reduction_blocks: row reductions (rows 0
                                        // and 1; 0 to 3 in the information pass), the
                                        // one-norm's block maxima (row 2)

  // Coefficient-sized.
  DeviceBuffer<T> previous_coef, history_sign, current, delta, information_delta, score;
  DeviceBuffer<double> delta64, information_delta64, trial64, information_trial64;
  PinnedBuffer<T> host_vector;
  DeviceBuffer<T> equilibration;        // the ladder's s_i = 1/sqrt(H_ii), uploaded per solve
  DeviceBuffer<T> gram;                 // d x d, column-major lower triangle
  DeviceBuffer<T> hessian;              // d x d, column-major
  DeviceBuffer<T> empty_information;    // zeros: the J~ of a first batch
  DeviceBuffer<double> information64;   // J~ in float64 for a float32 batch
  DeviceBuffer<T> next_information;     // J~ + J_b, swapped into the next state on success
  DeviceBuffer<T> inference_matrices;   // G_b then K_b, each d x d row-major, symmetric
  PinnedBuffer<T> host_matrices;        // their download
  DeviceBuffer<DeviceScalars> scalars;
  PinnedBuffer<DeviceScalars> host_scalars;
  VectorPool<T> vectors;
  SolverWorkspace<T> solver;
  SquareRootWorkspace<T> root;
};

extern template struct Workspace<float>;
extern template struct Workspace<double>;

}  // namespace rh::cuda
