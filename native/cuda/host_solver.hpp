#pragma once
// The drift test's float64 solves on the host (rh/drift.hpp): the CPU engine's dense solver, the
// same LAPACK rungs as the reference, behind a header that keeps LAPACKE out of the CUDA units.

#include <cstddef>
#include <memory>

#include "rh/ops.hpp"

namespace rh::cpu {
template <std::floating_point T>
class DenseSolver;
}  // namespace rh::cpu

namespace rh::cuda {

class HostSolver64 {
 public:
  HostSolver64();
  ~HostSolver64();
  HostSolver64(const HostSolver64&) = delete;
  HostSolver64& operator=(const HostSolver64&) = delete;

  void resize(std::size_t dim);
  SolveAttempt cholesky(const double* H, const double* rhs, double* x);
  SolveAttempt lu(const double* H, const double* rhs, double* x);
  std::size_t min_norm(const double* H, const double* rhs, double rcond, double* x);
  void cholesky_again(const double* rhs, double* x, std::size_t columns = 1);
  void lu_again(const double* rhs, double* x, std::size_t columns = 1);
  void multiply_transposed(const double* A, const double* B, double* C) const;

 private:
  std::unique_ptr<rh::cpu::DenseSolver<double>> solver_;
};

}  // namespace rh::cuda
