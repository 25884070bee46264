// The batch objective on the device: residuals, the fused Huber pass, gradient, Newton matrix,
// the objective and its change along a step (docs/numerics.md), as rh::SolverOps.

#include <algorithm>
#include <cmath>
#include <vector>

#include "device_blas.hpp"
#include "kernels.hpp"
#include "objective.hpp"
#include "profiling.hpp"
#include "rh/drift.hpp"
#include "rh/ops.hpp"
#include "square_root_kernels.hpp"

namespace rh::cuda {

static_assert(SolverOps<DeviceOps<float>>);
static_assert(SolverOps<DeviceOps<double>>);
static_assert(DriftOps<DeviceOps<float>>);
static_assert(DriftOps<DeviceOps<double>>);

template <std::floating_point T>
DeviceOps<T>::DeviceOps(EngineCore& core, Workspace<T>& workspace, const StateView<T>& previous,
                        const T* previous_information, const DeviceBatch<T>& batch,
                        bool fit_intercept)
    : core_(core),
      prof_(core.profiler()),
      ws_(workspace),
      batch_(batch),
      solver_(core, workspace),
      stream_(core.stream()),
      intercept_(fit_intercept),
      features_(batch.features),
      dim_(batch.features + (fit_intercept ? 1 : 0)),
      blocks_(reduction_blocks(batch.rows)),
      information_(previous_information),
      information64_(nullptr),
      effective_weight_(previous.effective_weight),
      history_weight_(static_cast<double>(
          static_cast<T>(previous.effective_weight * previous.previous_lambda))) {
  // The previous coefficients up, their signs, J~ in float64.
  RH_CUDA_BRICK(prof_, stage, dim_ * dim_, dim_ * sizeof(T) + dim_ * dim_ * (sizeof(T) + 8), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.previous_coef.data(), previous.coef.data(), dim_ * sizeof(T),
                                cudaMemcpyHostToDevice, stream_));
  kernels::history_sign(stream_, dim_, features_, ws_.previous_coef.data(),
                        ws_.history_sign.data());
  if constexpr (std::same_as<T, double>) {
    information64_ = information_;
  } else {
    kernels::to_double(stream_, dim_ * dim_, information_, ws_.information64.data());
    information64_ = ws_.information64.data();
  }
  if (previous.square_root()) {
    square_root_ = true;
    factor_ = previous.information_factor;
    vector_ = previous.information_vector;
    upload_history(previous);
  }
}

template <std::floating_point T>
const DeviceScalars& DeviceOps<T>::fetch() {
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_scalars.data(), ws_.scalars.data(),
                                sizeof(DeviceScalars), cudaMemcpyDeviceToHost, stream_));
  core_.synchronize();
  return *ws_.host_scalars.data();
}

// --- coefficient-sized vectors -----------------------------------------------------------------

template <std::floating_point T>
auto DeviceOps<T>::make_vector() -> Vector {
  Vector v = ws_.vectors.lease(core_.allocations());
  RH_CUDA_CHECK(cudaMemsetAsync(v.data(), 0, dim_ * sizeof(T), stream_));
  return v;
}

template <std::floating_point T>
void DeviceOps<T>::assign(std::span<const T> host, Vector& out) {
  RH_CUDA_BRICK(prof_, stage, dim_, dim_ * sizeof(T), 0);
  std::copy(host.begin(), host.end(), ws_.host_vector.data());
  RH_CUDA_CHECK(cudaMemcpyAsync(out.data(), ws_.host_vector.data(), dim_ * sizeof(T),
                                cudaMemcpyHostToDevice, stream_));
  core_.synchronize();  // host_vector is reused by the next transfer
}

template <std::floating_point T>
void DeviceOps<T>::copy_to_host(const Vector& v, std::span<T> host) {
  RH_CUDA_BRICK(prof_, transfer, dim_, dim_ * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_vector.data(), v.data(), dim_ * sizeof(T),
                                cudaMemcpyDeviceToHost, stream_));
  core_.synchronize();
  std::copy_n(ws_.host_vector.data(), dim_, host.begin());
}

template <std::floating_point T>
void DeviceOps<T>::copy(const Vector& v, Vector& out) {
  RH_CUDA_CHECK(cudaMemcpyAsync(out.data(), v.data(), dim_ * sizeof(T), cudaMemcpyDeviceToDevice,
                                stream_));
}

template <std::floating_point T>
void DeviceOps<T>::scale(double factor, Vector& out) {
  kernels::scale(stream_, dim_, static_cast<T>(factor), out.data());
}

template <std::floating_point T>
void DeviceOps<T>::axpy(double factor, const Vector& v, Vector& out) {
  kernels::axpy(stream_, dim_, static_cast<T>(factor), v.data(), out.data());
}

template <std::floating_point T>
double DeviceOps<T>::dot(const Vector& a, const Vector& b) {
  kernels::dot(stream_, dim_, a.data(), b.data(), &ws_.scalars.data()->sums[vector_result]);
  return fetch().sums[vector_result];
}

template <std::floating_point T>
double DeviceOps<T>::norm_inf(const Vector& v) {
  kernels::norm_inf(stream_, dim_, v.data(), &ws_.scalars.data()->sums[vector_result]);
  return fetch().sums[vector_result];
}

template <std::floating_point T>
void DeviceOps<T>::soft_threshold(const Vector& z, double level, Vector& out) {
  RH_CUDA_BRICK(prof_, prox, dim_, 2 * dim_ * sizeof(T), 2 * dim_);
  kernels::soft_threshold(stream_, dim_, features_, z.data(), static_cast<T>(level), out.data());
}

template <std::floating_point T>
double DeviceOps<T>::diagonal_mean() {
  if (!diagonal_mean_) {
    const std::size_t rows = batch_.rows;
    RH_CUDA_BRICK(prof_, score, rows * features_, rows * (features_ + 1) * sizeof(T),
                  3 * rows * features_);
    kernels::design_trace(stream_, rows, features_, batch_.X, batch_.w, dim_, information64_,
                          ws_.partials.data());
    kernels::sum_partials(stream_, ws_.partials.data(), blocks_, 1,
                          &ws_.scalars.data()->sums[design_trace]);
    const double trace = fetch().sums[design_trace] + (intercept_ ? batch_.weight_sum : 0.0);
    diagonal_mean_ = trace / static_cast<double>(dim_);
  }
  return *diagonal_mean_;
}

// --- per-row passes ----------------------------------------------------------------------------

template <std::floating_point T>
void DeviceOps<T>::residual_into(const T* beta, T* out) {
  const auto p = static_cast<std::int64_t>(features_);
  const auto n = static_cast<std::int64_t>(batch_.rows);
  blas::gemv(core_.cublas(), CUBLAS_OP_T, p, n, T{1}, batch_.X, p, beta, 1, T{0}, out, 1);
  kernels::finish_residual(stream_, batch_.rows, batch_.y, intercept_ ? beta + features_ : nullptr,
                           out);
}

template <std::floating_point T>
void DeviceOps<T>::residuals_to_host(const Vector& beta, std::span<T> out) {
  // The projection buffer is free here: the drivers ask for residuals outside line searches.
  {
    RH_CUDA_BRICK(prof_, residual, batch_.rows * dim_,
                  batch_.rows * (features_ + 2) * sizeof(T), 2 * batch_.rows * dim_);
    residual_into(beta.data(), ws_.projection.data());
  }
  RH_CUDA_BRICK(prof_, transfer, batch_.rows, batch_.rows * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_rows.data(), ws_.projection.data(),
                                batch_.rows * sizeof(T), cudaMemcpyDeviceToHost, stream_));
  core_.synchronize();
  std::copy_n(ws_.host_rows.data(), batch_.rows, out.begin());
}

template <std::floating_point T>
void DeviceOps<T>::evaluate(const Vector& beta, double tau) {
  prof_.set_iteration(evaluations_++);
  const std::size_t rows = batch_.rows;
  tau_ = static_cast<T>(tau);
  const auto p = static_cast<std::int64_t>(features_);
  const auto n = static_cast<std::int64_t>(batch_.rows);
  DeviceScalars* scalars = ws_.scalars.data();
  {
    RH_CUDA_BRICK(prof_, residual, rows * dim_, rows * (features_ + 2) * sizeof(T),
                  2 * rows * dim_);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.current.data(), beta.data(), dim_ * sizeof(T),
                                  cudaMemcpyDeviceToDevice, stream_));
    residual_into(ws_.current.data(), ws_.residual.data());
  }
  {
    RH_CUDA_BRICK(prof_, huber, rows, 5 * rows * sizeof(T), 8 * rows);
    kernels::huber_terms(stream_, batch_.rows, ws_.residual.data(), batch_.w, tau_,
                         ws_.weighted_score.data(), ws_.weighted_curvature.data(),
                         ws_.partials.data());
    kernels::sum_partials(stream_, ws_.partials.data(), blocks_, 2, &scalars->sums[loss]);
  }
  // X~^T (w psi), then J~ (beta - beta~) in T and in float64: the history part of the score.
  RH_CUDA_BRICK(prof_, score, rows * dim_ + 2 * dim_ * dim_,
                rows * (features_ + 1) * sizeof(T) + dim_ * dim_ * (sizeof(T) + 8),
                2 * rows * dim_ + 4 * dim_ * dim_);
  blas::gemv(core_.cublas(), CUBLAS_OP_N, p, n, T{1}, batch_.X, p, ws_.weighted_score.data(), 1,
             T{0}, ws_.score.data(), 1);
  if (intercept_) kernels::store_sum(stream_, &scalars->sums[score_total], ws_.score.data() + p);

  const auto d = static_cast<std::int64_t>(dim_);
  kernels::delta(stream_, dim_, ws_.current.data(), ws_.previous_coef.data(), ws_.delta.data(),
                 ws_.delta64.data());
  if (square_root_) {
    // The history's gradient R~^T (R~ beta - z~) from the factor in float64 (R~^T R~ formed would
    // square its condition): a = R~ (beta - beta~), R~ beta - z~ = a + u0. R~ is row-major, i.e.
    // the column-major R~^T: R~ v is the transposed product, R~^T v the plain one.
    SquareRootWorkspace<T>& root = ws_.root;
    blas::gemv(core_.cublas(), CUBLAS_OP_T, d, d, 1.0, root.factor64.data(), d,
               ws_.delta64.data(), 1, 0.0, root.history_a64.data(), 1);
    RH_CUDA_CHECK(cudaMemcpyAsync(root.history_residual64.data(), root.history_offset64.data(),
                                  dim_ * sizeof(double), cudaMemcpyDeviceToDevice, stream_));
    kernels::axpy(stream_, dim_, 1.0, root.history_a64.data(), root.history_residual64.data());
    blas::gemv(core_.cublas(), CUBLAS_OP_N, d, d, 1.0, root.factor64.data(), d,
               root.history_residual64.data(), 1, 0.0, ws_.information_delta64.data(), 1);
    kernels::from_double(stream_, dim_, ws_.information_delta64.data(),
                         ws_.information_delta.data());
    return;
  }
  // J~ is row-major, i.e. the column-major J~^T: J~ v is the transposed product.
  blas::gemv(core_.cublas(), CUBLAS_OP_T, d, d, T{1}, information_, d, ws_.delta.data(), 1, T{0},
             ws_.information_delta.data(), 1);
  blas::gemv(core_.cublas(), CUBLAS_OP_T, d, d, 1.0, information64_, d, ws_.delta64.data(), 1,
             0.0, ws_.information_delta64.data(), 1);
}

template <std::floating_point T>
void DeviceOps<T>::gradient(Vector& out) {
  RH_CUDA_BRICK(prof_, score, dim_, 4 * dim_ * sizeof(T), 3 * dim_);
  kernels::gradient(stream_, dim_, ws_.score.data(), ws_.information_delta.data(),
                    ws_.history_sign.data(), static_cast<T>(history_weight_), out.data());
}

template <std::floating_point T>
double DeviceOps<T>::objective(double lambda) {
  // The objective at the current point: reductions over d, and the scalars back.
  RH_CUDA_BRICK(prof_, line_search, dim_, 4 * dim_ * 8, 8 * dim_);
  kernels::objective_terms(stream_, dim_, features_, ws_.delta64.data(),
                           ws_.information_delta64.data(), ws_.history_sign.data(),
                           ws_.current.data(), &ws_.scalars.data()->sums[quadratic]);
  if (square_root_) {
    kernels::dot(stream_, dim_, ws_.root.history_a64.data(), ws_.root.history_a64.data(),
                 &ws_.scalars.data()->sums[history_square]);
  }
  const DeviceScalars& s = fetch();
  // factorization="qr": the history's h(beta) - h(beta~), h = 1/2 ||R~ beta - z~||^2, doubled
  // (as delta^T J~ delta): with a = R~ (beta - beta~) and u0 = R~ beta~ - z~ it is
  // 2 u0^T a + a^T a = 2 delta^T R~^T (R~ beta - z~) - a^T a, without the cancellation of the
  // difference of the two squares.
  const double quadratic_term =
      square_root_ ? 2.0 * s.sums[quadratic] - s.sums[history_square] : s.sums[quadratic];
  return s.sums[loss] + 0.5 * quadratic_term - history_weight_ * s.sums[history] +
         (effective_weight_ + batch_.weight_sum) * lambda * s.sums[l1];
}

// --- the Newton system -------------------------------------------------------------------------

// As the CPU engine: the rows scaled by sqrt(w c) into an n x d buffer whose intercept column is
// sqrt(w c) itself, and one SYRK over all d columns. Every entry, intercept row and corner
// included, then comes from one kernel with one summation order, so a column equal to the
// intercept's (a constant 1, whatever the weights) gives an exactly singular Gram, as on the CPU.
template <std::floating_point T>
void DeviceOps<T>::gram_into(T* gram) {
  gram_into(ws_.weighted_curvature.data(), gram);
}

template <std::floating_point T>
void DeviceOps<T>::gram_into(const T* row_weights, T* gram) {
  const auto n = static_cast<std::int64_t>(batch_.rows);
  const auto d = static_cast<std::int64_t>(dim_);
  kernels::scale_rows(stream_, batch_.rows, features_, dim_, batch_.X, row_weights,
                      ws_.scaled_rows.data());
  // The row-major n x d buffer is the column-major d x n matrix A: the Gram is A A^T.
  blas::syrk_lower(core_.cublas(), d, n, ws_.scaled_rows.data(), d, gram, d);
}

template <std::floating_point T>
void DeviceOps<T>::form_hessian(double ridge) {
  const std::size_t rows = batch_.rows;
  RH_CUDA_BRICK(prof_, gram, rows * dim_, (2 * rows * dim_ + 3 * dim_ * dim_) * sizeof(T),
                rows * dim_ * (dim_ + 2) + dim_ * dim_);
  DeviceScalars* scalars = ws_.scalars.data();
  gram_into(ws_.gram.data());
  RH_CUDA_CHECK(cudaMemsetAsync(&scalars->asymmetric, 0, sizeof(int), stream_));
  kernels::assemble_hessian(stream_, dim_, ws_.gram.data(), information_, static_cast<T>(ridge),
                            ws_.hessian.data(), &scalars->asymmetric);
  facts_known_ = false;
}

template <std::floating_point T>
void DeviceOps<T>::hessian_diagonal(std::span<T> out) {
  // H_ii lies every d + 1 entries of the column-major H: one strided copy of d values.
  RH_CUDA_BRICK(prof_, transfer, dim_, dim_ * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpy2DAsync(ws_.host_vector.data(), sizeof(T), ws_.hessian.data(),
                                  (dim_ + 1) * sizeof(T), sizeof(T), dim_,
                                  cudaMemcpyDeviceToHost, stream_));
  core_.synchronize();
  std::copy_n(ws_.host_vector.data(), dim_, out.begin());
}

template <std::floating_point T>
void DeviceOps<T>::equilibrate_hessian(std::span<const T> scales) {
  // The scales up, H read and written, then read again for ||Ĥ||_1, the facts back; a product
  // s_i s_j per pair, a multiplication per entry, and the one-norm's sums.
  RH_CUDA_BRICK(prof_, solve, dim_ * dim_,
                (3 * dim_ * dim_ + dim_) * sizeof(T) + sizeof(DeviceScalars),
                5 * dim_ * dim_ / 2);
  DeviceScalars* scalars = ws_.scalars.data();
  std::copy_n(scales.begin(), dim_, ws_.host_vector.data());
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.equilibration.data(), ws_.host_vector.data(),
                                dim_ * sizeof(T), cudaMemcpyHostToDevice, stream_));
  RH_CUDA_CHECK(cudaMemsetAsync(&scalars->asymmetric, 0, sizeof(int), stream_));
  kernels::equilibrate_hessian(stream_, dim_, ws_.equilibration.data(), ws_.hessian.data(),
                               &scalars->asymmetric);
  facts_known_ = false;
  // Ĥ's facts now rather than at the first rung: the ladder asks for them next anyway, and this
  // synchronization frees host_vector for the next transfer.
  hessian_facts();
}

template <std::floating_point T>
const DeviceScalars& DeviceOps<T>::hessian_facts() {
  if (!facts_known_) {
    kernels::one_norm(stream_, dim_, ws_.hessian.data(),
                      ws_.partials.data() + 2 * max_reduction_blocks,
                      &ws_.scalars.data()->one_norm);
    facts_ = fetch();
    facts_known_ = true;
  }
  return facts_;
}

template <std::floating_point T>
bool DeviceOps<T>::hessian_symmetric() {
  // Known since equilibrate_hessian(), whose brick timed their fetch.
  return hessian_facts().asymmetric == 0;
}

template <std::floating_point T>
SolveAttempt DeviceOps<T>::solve_cholesky(const Vector& rhs, Vector& out) {
  RH_CUDA_BRICK(prof_, solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                dim_ * dim_ * dim_ / 3 + 2 * dim_ * dim_);
  const auto one_norm = static_cast<T>(hessian_facts().one_norm);
  return solver_.cholesky(ws_.hessian.data(), one_norm, rhs.data(), out.data());
}

template <std::floating_point T>
SolveAttempt DeviceOps<T>::solve_lu(const Vector& rhs, Vector& out) {
  RH_CUDA_BRICK(prof_, solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                2 * dim_ * dim_ * dim_ / 3 + 2 * dim_ * dim_);
  const auto one_norm = static_cast<T>(hessian_facts().one_norm);
  return solver_.lu(ws_.hessian.data(), one_norm, rhs.data(), out.data());
}

template <std::floating_point T>
std::size_t DeviceOps<T>::solve_min_norm(const Vector& rhs, double rcond, Vector& out) {
  // SVD-based least squares: of the order of 4 d^3 flops.
  RH_CUDA_BRICK(prof_, solve, dim_ * dim_, dim_ * dim_ * sizeof(T), 4 * dim_ * dim_ * dim_);
  return solver_.min_norm(ws_.hessian.data(), rhs.data(), rcond, out.data());
}

// --- the objective along a step ----------------------------------------------------------------

template <std::floating_point T>
void DeviceOps<T>::project(const Vector& step) {
  RH_CUDA_BRICK(prof_, line_search, batch_.rows, batch_.rows * (features_ + 1) * sizeof(T),
                2 * batch_.rows * dim_);
  const auto p = static_cast<std::int64_t>(features_);
  const auto n = static_cast<std::int64_t>(batch_.rows);
  blas::gemv(core_.cublas(), CUBLAS_OP_T, p, n, T{1}, batch_.X, p, step.data(), 1, T{0},
             ws_.projection.data(), 1);
  if (intercept_) {
    kernels::add_scalar(stream_, batch_.rows, step.data() + features_, ws_.projection.data());
  }
}

// dQ_smooth(t * step) (docs/numerics.md): the per-row Huber differences without cancellation,
// plus the exact change of the quadratic and linear history terms, all reduced on the device
// and brought back together.
template <std::floating_point T>
double DeviceOps<T>::objective_change(const Vector& step, double t) {
  RH_CUDA_BRICK(prof_, line_search, batch_.rows + dim_,
                3 * batch_.rows * sizeof(T) + dim_ * dim_ * 8,
                12 * batch_.rows + 2 * dim_ * dim_ + 8 * dim_);
  const auto factor = static_cast<T>(t);
  const auto d = static_cast<std::int64_t>(dim_);
  DeviceScalars* scalars = ws_.scalars.data();
  kernels::huber_change(stream_, batch_.rows, ws_.residual.data(), ws_.projection.data(),
                        batch_.w, factor, static_cast<double>(tau_), ws_.partials.data());
  kernels::sum_partials(stream_, ws_.partials.data(), blocks_, 1, &scalars->sums[change]);
  kernels::trial(stream_, dim_, step.data(), factor, ws_.trial64.data());
  if (square_root_) {
    // R~^T (R~ s) from the factor: then s^T R~^T (R~ beta - z~) = u^T (R~ beta - z~) and
    // s^T R~^T u = u^T u with u = R~ s, and the history's change is the first plus half the
    // second.
    blas::gemv(core_.cublas(), CUBLAS_OP_T, d, d, 1.0, ws_.root.factor64.data(), d,
               ws_.trial64.data(), 1, 0.0, ws_.root.step_u64.data(), 1);
    blas::gemv(core_.cublas(), CUBLAS_OP_N, d, d, 1.0, ws_.root.factor64.data(), d,
               ws_.root.step_u64.data(), 1, 0.0, ws_.information_trial64.data(), 1);
  } else {
    blas::gemv(core_.cublas(), CUBLAS_OP_T, d, d, 1.0, information64_, d, ws_.trial64.data(), 1,
               0.0, ws_.information_trial64.data(), 1);
  }
  kernels::change_terms(stream_, dim_, ws_.delta64.data(), ws_.information_trial64.data(),
                        ws_.trial64.data(), ws_.information_delta64.data(),
                        ws_.history_sign.data(), &scalars->sums[delta_j_step]);
  const DeviceScalars& s = fetch();
  if (square_root_) {
    return s.sums[change] + s.sums[step_j_delta] + 0.5 * s.sums[step_j_step] -
           history_weight_ * s.sums[step_history];
  }
  return s.sums[change] +
         0.5 * (s.sums[delta_j_step] + s.sums[step_j_delta] + s.sums[step_j_step]) -
         history_weight_ * s.sums[step_history];
}

template <std::floating_point T>
InferenceSums DeviceOps<T>::information(const InformationRequest& request,
                                        InformationOutputs<T> out) {
  const std::size_t rows = batch_.rows;
  const std::size_t square = dim_ * dim_;
  const std::size_t grams = request.matrices ? 3 : 1;
  DeviceScalars* scalars = ws_.scalars.data();
  {
    RH_CUDA_BRICK(prof_, info_update, grams * rows * dim_,
                  (4 * rows + grams * (2 * rows * dim_ + 3 * square)) * sizeof(T),
                  16 * rows + grams * rows * dim_ * (dim_ + 2));
    // The curvature of the information update replaces the Newton one in weighted_curvature:
    // the solve is over.
    kernels::information_terms(stream_, rows, ws_.residual.data(), batch_.w, tau_,
                               static_cast<T>(2.0 * request.bandwidth), request.bandwidth > 0.0,
                               ws_.weighted_curvature.data(), ws_.score_sq_weights.data(),
                               ws_.partials.data());
    kernels::sum_partials(stream_, ws_.partials.data(), blocks_, 4, &scalars->sums[score_sq]);
    gram_into(ws_.gram.data());
    kernels::add_information(stream_, dim_, ws_.gram.data(), information_,
                             ws_.next_information.data());
    if (request.matrices) {
      T* matrices = ws_.inference_matrices.data();
      gram_into(batch_.w, ws_.gram.data());
      kernels::mirror_lower(stream_, dim_, ws_.gram.data(), matrices);
      gram_into(ws_.score_sq_weights.data(), ws_.gram.data());
      kernels::mirror_lower(stream_, dim_, ws_.gram.data(), matrices + square);
    }
  }
  RH_CUDA_BRICK(prof_, transfer, grams * square, grams * square * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(out.information.data(), ws_.next_information.data(),
                                square * sizeof(T), cudaMemcpyDeviceToHost, stream_));
  if (request.matrices) {
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_matrices.data(), ws_.inference_matrices.data(),
                                  2 * square * sizeof(T), cudaMemcpyDeviceToHost, stream_));
  }
  const DeviceScalars& s = fetch();  // the pass's one synchronization
  if (request.matrices) {
    const T* host = ws_.host_matrices.data();
    for (std::size_t k = 0; k < square; ++k) out.gram[k] += host[k];
    for (std::size_t k = 0; k < square; ++k) out.score_gram[k] += host[square + k];
  }
  return {.score_sq_sum = s.sums[score_sq],
          .curvature_sum = s.sums[curvature_total],
          .curvature_sq_sum = s.sums[curvature_sq],
          .inference_weight = s.sums[weight_total],
          .inference_batches = 1};
}

// --- the drift test's reads of the current point ------------------------------------------------

template <std::floating_point T>
void DeviceOps<T>::batch_gram_to_host(std::span<double> out) {
  // The Gram of the last form_hessian(): its lower triangle, column-major (SYRK's).
  const std::size_t square = dim_ * dim_;
  std::vector<T> gram(square);
  RH_CUDA_BRICK(prof_, transfer, square, square * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(gram.data(), ws_.gram.data(), square * sizeof(T),
                                cudaMemcpyDeviceToHost, stream_));
  core_.synchronize();
  for (std::size_t j = 0; j < dim_; ++j) {
    for (std::size_t i = j; i < dim_; ++i) {
      const auto value = static_cast<double>(gram[i + j * dim_]);
      out[i * dim_ + j] = value;
      out[j * dim_ + i] = value;
    }
  }
}

template <std::floating_point T>
void DeviceOps<T>::score_to_host(std::span<T> out) {
  RH_CUDA_BRICK(prof_, transfer, dim_, dim_ * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_vector.data(), ws_.score.data(), dim_ * sizeof(T),
                                cudaMemcpyDeviceToHost, stream_));
  core_.synchronize();
  std::copy_n(ws_.host_vector.data(), dim_, out.begin());
}

template <std::floating_point T>
InferenceSums DeviceOps<T>::point_sums() {
  const std::size_t rows = batch_.rows;
  {
    RH_CUDA_BRICK(prof_, transfer, rows, rows * sizeof(T), 0);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_rows.data(), ws_.residual.data(), rows * sizeof(T),
                                  cudaMemcpyDeviceToHost, stream_));
    core_.synchronize();
  }
  const T tau = tau_;
  const T* residual = ws_.host_rows.data();
  InferenceSums sums{.inference_batches = 1};
  for (std::size_t i = 0; i < rows; ++i) {
    const auto w = static_cast<double>(batch_.host_weights[i]);
    const auto psi = static_cast<double>(std::clamp(residual[i], -tau, tau));
    sums.score_sq_sum += w * psi * psi;
    sums.curvature_sum += std::abs(residual[i]) <= tau ? w : 0.0;
    sums.inference_weight += w;
  }
  return sums;
}

template class DeviceOps<float>;
template class DeviceOps<double>;

}  // namespace rh::cuda
