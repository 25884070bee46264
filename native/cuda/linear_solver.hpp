#pragma once
// The rungs of the linear-solver ladder (rh/ladder.hpp decides which to take) on the device:
// cuSOLVER's potrf/potrs and getrf/getrs with the condition estimate on the host
// (host_condition.hpp), and the minimum-norm solution from gesvd, whose buffers are created the
// first time that rung is reached.

#include <concepts>
#include <cstddef>

#include "engine_internal.hpp"
#include "rh/ops.hpp"

namespace rh::cuda {

template <std::floating_point T>
class LinearSolver {
 public:
  LinearSolver(EngineCore& core, Workspace<T>& workspace) : core_(core), ws_(workspace) {}

  // H is column-major d x d on the device and left untouched; each rung writes x only.
  SolveAttempt cholesky(const T* H, T one_norm, const T* rhs, T* x);
  SolveAttempt lu(const T* H, T one_norm, const T* rhs, T* x);
  // Singular values <= rcond * sigma_max count as zero; returns the number kept.
  std::size_t min_norm(const T* H, const T* rhs, double rcond, T* x);

 private:
  // Copies the factor, the info words and the finiteness flag back in one synchronization.
  const DeviceScalars& finish(const T* x, bool want_factor);
  void prepare_svd();

  EngineCore& core_;
  Workspace<T>& ws_;
};

extern template class LinearSolver<float>;
extern template class LinearSolver<double>;

}  // namespace rh::cuda
