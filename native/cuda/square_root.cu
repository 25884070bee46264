// factorization="qr" on the device (shared/spec/method.md, contract v4; rh/square_root.hpp): the
// Newton steps and the information update by Householder QR of stacked rows, as the CPU engine
// takes them (native/cpu/square_root.cpp), with the rows' QR made by cuSOLVER's geqrf.
//
// The batch's rows sqrt(w c) [x~ | rhs], the history's [R~ S | rhs] and two zero rows are written
// into one column-major buffer, their first d columns equilibrated (S, from the columns' sums of
// squares, batch and history together, as on the CPU); one geqrf reduces it, and the top
// (d+1) x (d+1) or (d+2) x (d+2) of its R, [R_H | q (| q_y)], comes back to the host. What follows
// is O(d^3) work on that triangle: the CPU engine's own code (square_root_triangle.hpp), so the
// rung, rcond and the new (R~, z~) are decided by one implementation for both engines.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../cpu/square_root_triangle.hpp"
#include "device_blas.hpp"
#include "kernels.hpp"
#include "objective.hpp"
#include "profiling.hpp"
#include "rh/error.hpp"
#include "square_root_kernels.hpp"

namespace rh::cuda {

static_assert(SquareRootOps<DeviceOps<float>>);
static_assert(SquareRootOps<DeviceOps<double>>);

template <std::floating_point T>
void DeviceOps<T>::upload_history(const StateView<T>& previous) {
  RH_CUDA_BRICK(prof_, stage, dim_ * dim_, dim_ * dim_ * (sizeof(T) + 8) + 2 * dim_ * 8,
                2 * dim_ * dim_);
  SquareRootWorkspace<T>& root = ws_.root;
  root.reserve(dim_, features_, batch_.rows, core_.allocations(), core_.cusolver(),
               core_.cusolver_params());
  root.host_factor64.assign(factor_.begin(), factor_.end());
  root.host_offset64.assign(dim_, 0.0);
  for (std::size_t i = 0; i < dim_; ++i) {
    double sum = -static_cast<double>(vector_[i]);
    for (std::size_t j = i; j < dim_; ++j) {
      sum += root.host_factor64[i * dim_ + j] * static_cast<double>(previous.coef[j]);
    }
    root.host_offset64[i] = sum;
  }
  RH_CUDA_CHECK(cudaMemcpyAsync(root.factor64.data(), root.host_factor64.data(),
                                dim_ * dim_ * sizeof(double), cudaMemcpyHostToDevice, stream_));
  RH_CUDA_CHECK(cudaMemcpyAsync(root.history_offset64.data(), root.host_offset64.data(),
                                dim_ * sizeof(double), cudaMemcpyHostToDevice, stream_));
}

template <std::floating_point T>
bool DeviceOps<T>::pattern_matches(std::uint8_t* pattern, bool write) {
  RH_CUDA_BRICK(prof_, huber, batch_.rows, 3 * batch_.rows * sizeof(T), batch_.rows);
  DeviceScalars* scalars = ws_.scalars.data();
  RH_CUDA_CHECK(cudaMemsetAsync(&scalars->pattern_changed, 0, sizeof(int), stream_));
  kernels::huber_pattern(stream_, batch_.rows, ws_.residual.data(), batch_.w, tau_, pattern, write,
                         &scalars->pattern_changed);
  return fetch().pattern_changed == 0;
}

template <std::floating_point T>
bool DeviceOps<T>::pattern_repeats() {
  const bool same = pattern_matches(ws_.root.pattern.data(), /*write=*/true) && pattern_known_;
  pattern_known_ = true;
  return same;
}

template <std::floating_point T>
std::size_t DeviceOps<T>::stack_rows(bool step, double bandwidth, std::vector<T>& scales,
                                     std::vector<double>& linear) {
  const std::size_t d = dim_;
  const std::size_t rows = batch_.rows;
  const std::size_t n = d + (step ? 2 : 1);
  const std::size_t m = rows + d + 2;  // the leading dimension: batch, history, two zero rows
  SquareRootWorkspace<T>& root = ws_.root;
  DeviceScalars* scalars = ws_.scalars.data();
  T* A = root.stacked.data();
  {
    // The batch's rows and their linear term, the columns' sums of squares; back with the
    // history's residual (a step's right-hand side) in one synchronization.
    RH_CUDA_BRICK(prof_, gram, rows * n, (rows * (features_ + 3) + rows * n) * sizeof(T),
                  4 * rows * n);
    kernels::square_root_rows(stream_, rows, features_, d, batch_.X, batch_.y, batch_.w,
                              ws_.residual.data(), tau_, static_cast<T>(2.0 * bandwidth),
                              bandwidth > 0.0, step, A, m, root.linear_rows.data(),
                              ws_.partials.data());
    kernels::sum_partials(stream_, ws_.partials.data(), blocks_, 1, &scalars->sums[linear_total]);
    kernels::column_squares(stream_, rows, d, A, m, root.column_squares.data());
    if (features_ > 0) {
      const auto p = static_cast<std::int64_t>(features_);
      blas::gemv(core_.cublas(), CUBLAS_OP_N, p, static_cast<std::int64_t>(rows), T{1}, batch_.X,
                 p, root.linear_rows.data(), 1, T{0}, root.linear.data(), 1);
      RH_CUDA_CHECK(cudaMemcpyAsync(root.host_linear.data(), root.linear.data(),
                                    features_ * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    }
    RH_CUDA_CHECK(cudaMemcpyAsync(root.host_squares.data(), root.column_squares.data(),
                                  d * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    if (step) {
      RH_CUDA_CHECK(cudaMemcpyAsync(root.host_history.data(), root.history_residual64.data(),
                                    d * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    }
  }
  const DeviceScalars& sums = fetch();
  linear.assign(d, 0.0);
  for (std::size_t j = 0; j < features_; ++j) linear[j] = static_cast<double>(root.host_linear.data()[j]);
  if (intercept_) linear[features_] = sums.sums[linear_total];
  {
    RH_CUDA_BRICK(prof_, solve, m * n, 2 * m * n * sizeof(T), 2 * m * n * n);
    std::vector<double> squares(root.host_squares.data(), root.host_squares.data() + d);
    rh::cpu::add_history_squares(factor_, d, squares);
    scales = rh::cpu::column_scales<T>(squares);
    RH_CUDA_CHECK(cudaMemcpyAsync(root.scales.data(), scales.data(), d * sizeof(T),
                                  cudaMemcpyHostToDevice, stream_));
    kernels::scale_columns(stream_, rows, d, root.scales.data(), A, m);
    // The history's rows and the two zero rows under the batch's, in one copy.
    const std::size_t below = d + 2;
    T* history = root.host_rows.data();
    std::fill_n(history, below * n, T{0});
    rh::cpu::history_rows(factor_, vector_, step ? root.host_history.data() : nullptr,
                          scales.data(), d, n, history, below);
    RH_CUDA_CHECK(cudaMemcpy2DAsync(A + rows, m * sizeof(T), history, below * sizeof(T),
                                    below * sizeof(T), n, cudaMemcpyHostToDevice, stream_));
    RH_CUSOLVER_CHECK(cusolverDnXgeqrf(
        core_.cusolver(), core_.cusolver_params(), static_cast<std::int64_t>(m),
        static_cast<std::int64_t>(n), cuda_type<T>, A, static_cast<std::int64_t>(m), cuda_type<T>,
        root.reflectors.data(), cuda_type<T>, root.device_work.data(),
        root.device_work.capacity(), root.host_work.data(), root.host_work.size(),
        &scalars->info));
    RH_CUDA_CHECK(cudaMemcpy2DAsync(root.host_triangle.data(), n * sizeof(T), A, m * sizeof(T),
                                    n * sizeof(T), n, cudaMemcpyDeviceToHost, stream_));
    const DeviceScalars& result = fetch();  // also waits for the scales' and rows' uploads
    if (result.info < 0) {
      throw Error("internal error: cuSOLVER geqrf rejected argument " +
                  std::to_string(-result.info));
    }
  }
  // Below the diagonal geqrf leaves its reflectors: the triangle is the upper part.
  T* triangle = root.host_triangle.data();
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = j + 1; i < n; ++i) triangle[j * n + i] = T{0};
  }
  rh::cpu::require_finite_triangle(std::span<const T>(triangle, n * n));
  return n;
}

template <std::floating_point T>
SquareRootStep DeviceOps<T>::square_root_step(double ridge, Vector& out) {
  std::vector<T> scales;
  std::vector<double> linear;
  const std::size_t n = stack_rows(/*step=*/true, 0.0, scales, linear);
  RH_CUDA_BRICK(prof_, solve, dim_ * dim_, dim_ * dim_ * sizeof(T), 2 * dim_ * dim_);
  // The step's factorization, before any ridge rows, for an information update at a final point
  // of this pattern and bandwidth.
  const T* triangle = ws_.root.host_triangle.data();
  step_triangle_.assign(triangle, triangle + n * n);
  step_scales_ = scales;
  step_linear_ = linear;
  step_tau_ = tau_;
  pattern_matches(ws_.root.step_pattern.data(), /*write=*/true);
  step_kept_ = true;
  std::vector<T> working(step_triangle_);
  std::vector<T> host(dim_);
  const SquareRootStep result = rh::cpu::triangle_step(working.data(), n, dim_, std::move(scales),
                                                       linear, ridge, host.data());
  assign(std::span<const T>(host), out);
  return result;
}

template <std::floating_point T>
InferenceSums DeviceOps<T>::square_root_information(const InformationRequest& request,
                                                    SquareRootOutputs<T> out) {
  const bool smoothed = request.bandwidth > 0.0;
  InferenceSums batch{.inference_batches = 1};
  if (request.matrices) {
    // G_b and K_b (and the sums) as the Cholesky mode forms them; its J~ + J_b goes to scratch.
    std::vector<T> scratch(dim_ * dim_);
    batch = information(request, InformationOutputs<T>{scratch, out.gram, out.score_gram});
  } else {
    RH_CUDA_BRICK(prof_, info_update, batch_.rows, 4 * batch_.rows * sizeof(T),
                  16 * batch_.rows);
    DeviceScalars* scalars = ws_.scalars.data();
    kernels::information_terms(stream_, batch_.rows, ws_.residual.data(), batch_.w, tau_,
                               static_cast<T>(2.0 * request.bandwidth), smoothed,
                               ws_.weighted_curvature.data(), ws_.score_sq_weights.data(),
                               ws_.partials.data());
    kernels::sum_partials(stream_, ws_.partials.data(), blocks_, 4, &scalars->sums[score_sq]);
    const DeviceScalars& s = fetch();
    batch.score_sq_sum = s.sums[score_sq];
    batch.curvature_sum = s.sums[curvature_total];
    batch.curvature_sq_sum = s.sums[curvature_sq];
    batch.inference_weight = s.sums[weight_total];
  }

  const std::size_t d = dim_;
  std::vector<double> linear;
  std::vector<T> scales;
  const T* stacked = nullptr;
  std::size_t n = 0;    // the triangle's columns
  std::size_t rhs = 0;  // the column of the update's right-hand side in it
  if (!smoothed && !request.anchor && step_kept_ && tau_ == step_tau_ &&
      pattern_matches(ws_.root.step_pattern.data(), /*write=*/false)) {
    // The final point has the last Newton step's pattern and bandwidth: the update's rows and
    // linear term are that step's, and its factorization carried the update's right-hand side
    // [sqrt(w c) y; z~] along (no second QR of the batch).
    linear = step_linear_;
    scales = step_scales_;
    stacked = step_triangle_.data();
    n = d + 2;
    rhs = d + 1;
  } else {
    n = stack_rows(/*step=*/false, request.bandwidth, scales, linear);
    if (request.anchor) {
      // + the smooth gradient without the pull: -X~^T (w psi) + R~^T (R~ beta - z~).
      std::vector<T> score(d);
      std::vector<double> history(d);
      RH_CUDA_CHECK(cudaMemcpyAsync(score.data(), ws_.score.data(), d * sizeof(T),
                                    cudaMemcpyDeviceToHost, stream_));
      RH_CUDA_CHECK(cudaMemcpyAsync(history.data(), ws_.information_delta64.data(),
                                    d * sizeof(double), cudaMemcpyDeviceToHost, stream_));
      core_.synchronize();
      for (std::size_t j = 0; j < d; ++j) {
        linear[j] += history[j] - static_cast<double>(score[j]);
      }
    }
    stacked = ws_.root.host_triangle.data();
    rhs = d;
  }
  RH_CUDA_BRICK(prof_, info_update, d * d, d * d * sizeof(T), 2 * d * d);
  rh::cpu::triangle_information(stacked, n, rhs, d, std::move(scales), linear,
                                out.factor.data(), out.vector.data());
  return batch;
}

#define RH_SQUARE_ROOT_INSTANTIATE(T)                                                           \
  template void DeviceOps<T>::upload_history(const StateView<T>&);                              \
  template bool DeviceOps<T>::pattern_matches(std::uint8_t*, bool);                             \
  template bool DeviceOps<T>::pattern_repeats();                                                \
  template std::size_t DeviceOps<T>::stack_rows(bool, double, std::vector<T>&,                  \
                                                std::vector<double>&);                          \
  template SquareRootStep DeviceOps<T>::square_root_step(double, Vector&);                      \
  template InferenceSums DeviceOps<T>::square_root_information(const InformationRequest&,       \
                                                               SquareRootOutputs<T>);
RH_SQUARE_ROOT_INSTANTIATE(float)
RH_SQUARE_ROOT_INSTANTIATE(double)
#undef RH_SQUARE_ROOT_INSTANTIATE

}  // namespace rh::cuda
