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

void HostSolver64::cholesky_again(const double* rhs, double* x, std::size_t columns) {
  solver_->cholesky_again(rhs, x, columns);
}

void HostSolver64::lu_again(const double* rhs, double* x, std::size_t columns) {
  solver_->lu_again(rhs, x, columns);
}

void HostSolver64::multiply_transposed(const double* A, const double* B, double* C) const {
  solver_->multiply_transposed(A, B, C);
}

}  // namespace rh::cuda
