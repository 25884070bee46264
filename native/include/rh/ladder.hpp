#pragma once
// The linear-solver ladder (docs/numerics.md): Cholesky when H is exactly symmetric, then LU,
// then the minimum-norm SVD solution. A rung is accepted only when it factored, its reciprocal
// condition estimate is at least d * eps(dtype), and the solution is finite.

#include <limits>

#include "rh/diagnostics.hpp"
#include "rh/ops.hpp"

namespace rh {

template <LadderOps O>
Solver solve_ladder(O& ops, const typename O::Vector& rhs, typename O::Vector& solution) {
  using T = typename O::Scalar;
  const double rcond_min = static_cast<double>(ops.dim()) * std::numeric_limits<T>::epsilon();
  const auto accepted = [rcond_min](const SolveAttempt& attempt) {
    return attempt.factored && attempt.rcond >= rcond_min && attempt.finite;
  };
  if (ops.hessian_symmetric() && accepted(ops.solve_cholesky(rhs, solution))) {
    return Solver::cholesky;
  }
  if (accepted(ops.solve_lu(rhs, solution))) return Solver::lu;
  ops.solve_min_norm(rhs, rcond_min, solution);
  return Solver::svd;
}

}  // namespace rh
