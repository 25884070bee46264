#pragma once
// LAMM for an L1-penalized batch (shared/spec/method.md, "Solvers"): proximal gradient steps
// with a local quadratic majorizer whose curvature phi doubles until it majorizes f.

#include <algorithm>

#include "rh/config.hpp"
#include "rh/ops.hpp"
#include "rh/solve_result.hpp"

namespace rh {

inline constexpr int max_phi_doublings = 100;

// Minimizes f(beta) + weight_total * lambda * ||beta_S||_1 from beta (updated in place).
template <SolverOps O>
SolveResult lamm_solve(O& ops, typename O::Vector& beta, double tau, double lambda,
                       double weight_total, const Config& config, double tol) {
  SolveResult result{.solver = Solver::lamm};
  auto gradient = ops.make_vector();
  auto shifted = ops.make_vector();
  auto candidate = ops.make_vector();
  auto step = ops.make_vector();
  double phi = 1.0;  // never decreases within a solve
  for (std::int64_t k = 0; k < config.max_iter; ++k) {
    ++result.n_iter;
    ops.evaluate(beta, tau);
    ops.gradient(gradient);
    int doublings = 0;
    for (;;) {
      ops.copy(beta, shifted);
      ops.axpy(-1.0 / phi, gradient, shifted);
      ops.soft_threshold(shifted, weight_total * lambda / phi, candidate);
      ops.copy(candidate, step);
      ops.axpy(-1.0, beta, step);
      ops.project(step);
      const double majorizer = ops.dot(gradient, step) + 0.5 * phi * ops.dot(step, step);
      if (ops.objective_change(step, 1.0) <= majorizer) break;
      if (doublings == max_phi_doublings) {
        result.halvings += doublings;
        return result;  // phi cannot majorize f: keep beta, not converged
      }
      phi *= 2.0;
      ++doublings;
    }
    result.halvings += doublings;
    const double moved = ops.norm_inf(step);
    ops.copy(candidate, beta);
    if (moved <= tol * std::max(1.0, ops.norm_inf(beta))) {
      result.converged = true;
      return result;
    }
  }
  return result;
}

}  // namespace rh
