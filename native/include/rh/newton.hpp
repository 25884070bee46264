#pragma once
// Damped semismooth Newton for an unpenalized batch (shared/spec/method.md, "Solvers";
// docs/numerics.md): Newton direction from the ladder, Armijo backtracking on the objective
// difference along the step.

#include <algorithm>

#include "rh/config.hpp"
#include "rh/ladder.hpp"
#include "rh/ops.hpp"
#include "rh/solve_result.hpp"

namespace rh {

inline constexpr double armijo_slope_fraction = 1e-4;
inline constexpr int max_armijo_halvings = 30;

// Minimizes the smooth batch objective from beta (updated in place) with bandwidth tau.
template <SolverOps O>
SolveResult newton_solve(O& ops, typename O::Vector& beta, double tau, const Config& config,
                         double tol) {
  SolveResult result;
  auto gradient = ops.make_vector();
  auto rhs = ops.make_vector();
  auto step = ops.make_vector();
  auto full = ops.make_vector();
  for (std::int64_t k = 0; k < config.max_iter; ++k) {
    ++result.n_iter;
    ops.evaluate(beta, tau);
    ops.gradient(gradient);
    ops.form_hessian(config.ridge);
    ops.copy(gradient, rhs);
    ops.scale(-1.0, rhs);
    result.solver = solve_ladder(ops, rhs, step);

    // A full step already below the tolerance changes Q by less than its rounding, so Armijo
    // would compare noise (and could refuse every halving at the optimum): take it and stop.
    ops.copy(beta, full);
    ops.axpy(1.0, step, full);
    if (ops.norm_inf(step) <= tol * std::max(1.0, ops.norm_inf(full))) {
      ops.copy(full, beta);
      result.converged = true;
      return result;
    }

    if constexpr (FusedTrialOps<O>) {
      ops.project_and_prepare(step, full);  // the full step is usually taken: evaluate it now
    } else {
      ops.project(step);
    }
    const double slope = ops.dot(gradient, step);
    double t = 1.0;
    int halvings = 0;
    // <=, not <: a step that changes nothing in floating point is accepted.
    while (!(ops.objective_change(step, t) <= armijo_slope_fraction * t * slope)) {
      if (halvings == max_armijo_halvings) {
        result.halvings += halvings;
        return result;  // no acceptable step: keep beta, not converged
      }
      t *= 0.5;
      ++halvings;
    }
    result.halvings += halvings;
    ops.axpy(t, step, beta);
    if (t * ops.norm_inf(step) <= tol * std::max(1.0, ops.norm_inf(beta))) {
      result.converged = true;
      return result;
    }
  }
  return result;
}

}  // namespace rh
