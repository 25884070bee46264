#include "linear_solver.hpp"

#include <string>

#include "device_blas.hpp"
#include "host_condition.hpp"
#include "kernels.hpp"
#include "rh/error.hpp"

namespace rh::cuda {
namespace {

void check_arguments(int info, const char* routine) {
  if (info < 0) {
    throw Error(std::string("internal error: cuSOLVER ") + routine + " rejected argument " +
                std::to_string(-info));
  }
}

}  // namespace

template <std::floating_point T>
const DeviceScalars& LinearSolver<T>::finish(const T* x, bool want_factor) {
  const cudaStream_t stream = core_.stream();
  const std::size_t d = ws_.dim;
  kernels::flag_nonfinite(stream, d, x, &ws_.scalars.data()->nonfinite);
  if (want_factor) {
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.solver.host_factor.data(), ws_.solver.factor.data(),
                                  d * d * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  RH_CUDA_CHECK(cudaMemcpyAsync(ws_.host_scalars.data(), ws_.scalars.data(),
                                sizeof(DeviceScalars), cudaMemcpyDeviceToHost, stream));
  core_.synchronize();
  return *ws_.host_scalars.data();
}

template <std::floating_point T>
SolveAttempt LinearSolver<T>::cholesky(const T* H, T one_norm, const T* rhs, T* x) {
  const cudaStream_t stream = core_.stream();
  const std::size_t d = ws_.dim;
  const auto n = static_cast<std::int64_t>(d);
  SolverWorkspace<T>& s = ws_.solver;
  DeviceScalars* scalars = ws_.scalars.data();
  RH_CUDA_CHECK(cudaMemsetAsync(&scalars->nonfinite, 0, sizeof(int), stream));
  RH_CUDA_CHECK(cudaMemcpyAsync(s.factor.data(), H, d * d * sizeof(T), cudaMemcpyDeviceToDevice,
                                stream));
  RH_CUSOLVER_CHECK(cusolverDnXpotrf(core_.cusolver(), core_.cusolver_params(),
                                     CUBLAS_FILL_MODE_LOWER, n, cuda_type<T>, s.factor.data(), n,
                                     cuda_type<T>, s.device_work.data(), s.device_work.capacity(),
                                     s.host_work.data(), s.host_work.size(), &scalars->info));
  // The solve is queued before the factorization's outcome is known, so that one
  // synchronization settles the rung; its result is ignored when the factorization failed.
  RH_CUDA_CHECK(cudaMemcpyAsync(x, rhs, d * sizeof(T), cudaMemcpyDeviceToDevice, stream));
  RH_CUSOLVER_CHECK(cusolverDnXpotrs(core_.cusolver(), core_.cusolver_params(),
                                     CUBLAS_FILL_MODE_LOWER, n, 1, cuda_type<T>, s.factor.data(),
                                     n, cuda_type<T>, x, n, &scalars->solve_info));
  const DeviceScalars& result = finish(x, true);
  check_arguments(result.info, "potrf");
  check_arguments(result.solve_info, "potrs");
  if (result.info > 0) return {};  // not positive definite
  const double rcond = cholesky_rcond(d, s.host_factor.data(), one_norm, s.condition_work.data(),
                                      s.condition_iwork.data());
  return {.factored = true, .rcond = rcond, .finite = result.nonfinite == 0};
}

template <std::floating_point T>
SolveAttempt LinearSolver<T>::lu(const T* H, T one_norm, const T* rhs, T* x) {
  const cudaStream_t stream = core_.stream();
  const std::size_t d = ws_.dim;
  const auto n = static_cast<std::int64_t>(d);
  SolverWorkspace<T>& s = ws_.solver;
  DeviceScalars* scalars = ws_.scalars.data();
  RH_CUDA_CHECK(cudaMemsetAsync(&scalars->nonfinite, 0, sizeof(int), stream));
  RH_CUDA_CHECK(cudaMemcpyAsync(s.factor.data(), H, d * d * sizeof(T), cudaMemcpyDeviceToDevice,
                                stream));
  RH_CUSOLVER_CHECK(cusolverDnXgetrf(core_.cusolver(), core_.cusolver_params(), n, n,
                                     cuda_type<T>, s.factor.data(), n, s.pivots.data(),
                                     cuda_type<T>, s.device_work.data(), s.device_work.capacity(),
                                     s.host_work.data(), s.host_work.size(), &scalars->info));
  RH_CUDA_CHECK(cudaMemcpyAsync(x, rhs, d * sizeof(T), cudaMemcpyDeviceToDevice, stream));
  RH_CUSOLVER_CHECK(cusolverDnXgetrs(core_.cusolver(), core_.cusolver_params(), CUBLAS_OP_N, n,
                                     1, cuda_type<T>, s.factor.data(), n, s.pivots.data(),
                                     cuda_type<T>, x, n, &scalars->solve_info));
  const DeviceScalars& result = finish(x, true);
  check_arguments(result.info, "getrf");
  check_arguments(result.solve_info, "getrs");
  if (result.info > 0) return {};  // an exact zero pivot
  const double rcond = lu_rcond(d, s.host_factor.data(), one_norm, s.condition_work.data(),
                                s.condition_iwork.data());
  return {.factored = true, .rcond = rcond, .finite = result.nonfinite == 0};
}

template <std::floating_point T>
void LinearSolver<T>::prepare_svd() {
  SolverWorkspace<T>& s = ws_.solver;
  if (s.svd_ready) return;
  const std::size_t d = ws_.dim;
  const auto n = static_cast<std::int64_t>(d);
  AllocationStats& stats = core_.allocations();
  s.singular_values.reserve(d, stats);
  s.left.reserve(d * d, stats);
  s.right_t.reserve(d * d, stats);
  s.projected.reserve(d, stats);
  std::size_t device_bytes = 0;
  std::size_t host_bytes = 0;
  RH_CUSOLVER_CHECK(cusolverDnXgesvd_bufferSize(
      core_.cusolver(), core_.cusolver_params(), 'A', 'A', n, n, cuda_type<T>, s.factor.data(), n,
      cuda_type<T>, s.singular_values.data(), cuda_type<T>, s.left.data(), n, cuda_type<T>,
      s.right_t.data(), n, cuda_type<T>, &device_bytes, &host_bytes));
  s.svd_device_work.reserve(device_bytes, stats);
  s.svd_host_work.resize(host_bytes);
  s.svd_ready = true;
}

template <std::floating_point T>
std::size_t LinearSolver<T>::min_norm(const T* H, const T* rhs, double rcond, T* x) {
  prepare_svd();
  const cudaStream_t stream = core_.stream();
  const std::size_t d = ws_.dim;
  const auto n = static_cast<std::int64_t>(d);
  SolverWorkspace<T>& s = ws_.solver;
  DeviceScalars* scalars = ws_.scalars.data();
  RH_CUDA_CHECK(cudaMemsetAsync(&scalars->nonfinite, 0, sizeof(int), stream));
  RH_CUDA_CHECK(cudaMemcpyAsync(s.factor.data(), H, d * d * sizeof(T), cudaMemcpyDeviceToDevice,
                                stream));
  RH_CUSOLVER_CHECK(cusolverDnXgesvd(
      core_.cusolver(), core_.cusolver_params(), 'A', 'A', n, n, cuda_type<T>, s.factor.data(), n,
      cuda_type<T>, s.singular_values.data(), cuda_type<T>, s.left.data(), n, cuda_type<T>,
      s.right_t.data(), n, cuda_type<T>, s.svd_device_work.data(), s.svd_device_work.capacity(),
      s.svd_host_work.data(), s.svd_host_work.size(), &scalars->info));
  // x = V diag(1/sigma, cut off) U^T rhs.
  blas::gemv(core_.cublas(), CUBLAS_OP_T, n, n, T{1}, s.left.data(), n, rhs, 1, T{0},
             s.projected.data(), 1);
  kernels::pseudo_inverse_scale(stream, d, s.singular_values.data(), static_cast<T>(rcond),
                                s.projected.data(), &scalars->rank);
  blas::gemv(core_.cublas(), CUBLAS_OP_T, n, n, T{1}, s.right_t.data(), n, s.projected.data(), 1,
             T{0}, x, 1);
  const DeviceScalars& result = finish(x, false);
  check_arguments(result.info, "gesvd");
  if (result.info > 0 || result.nonfinite != 0) {
    throw NumericalError("the minimum-norm (SVD) solve of the Newton system failed to converge");
  }
  return static_cast<std::size_t>(result.rank);
}

template class LinearSolver<float>;
template class LinearSolver<double>;

}  // namespace rh::cuda
