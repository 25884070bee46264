#include "host_solver.hpp"

#include "../cpu/dense_solver.hpp"

namespace rh::cuda {

HostSolver64::HostSolver64() : solver_(std::make_unique<rh::cpu::DenseSolver<double>>()) {}
HostSolver64::~HostSolver64() = default;

void HostSolver64::resize(std::size_t dim) { solver_->resize(dim); }

SolveAttempt HostSolver64::cholesky(const double* H, const double* rhs, double* x) {
  return solver_->cholesky(H, rhs, x);
}

SolveAttempt HostSolver64::lu(const double* H, const double* rhs, double* x) {
  return solver_->lu(H, rhs, x);
}

std::size_t HostSolver64::min_norm(const double* H, const double* rhs, double rcond, double* x) {
  return solver_->min_norm(H, rhs, rcond, x);
}

void HostSolver64::cholesky_again(const double* rhs, double* x) {
  solver_->cholesky_again(rhs, x);
}

void HostSolver64::lu_again(const double* rhs, double* x) { solver_->lu_again(rhs, x); }

}  // namespace rh::cuda
