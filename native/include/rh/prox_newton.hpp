#pragma once
// Proximal Newton for an L1-penalized batch: the opt-in variant that shared/spec/method.md
// ("Solvers") allows, for the same convex problem as LAMM. Each step minimizes the local
// quadratic model of f plus the L1 term (coordinate descent on the Newton matrix, in the
// engine), then backtracks on Q itself (Lee, Sun & Saunders, "Proximal Newton-type methods for
// minimizing composite functions", SIAM J. Optim. 24(3), 2014):
//   Q(beta + t s) - Q(beta) <= 1e-4 t D,   D = g^T s + c (||(beta + s)_S||_1 - ||beta_S||_1) < 0.
// A semismooth Huber f makes it converge in a few Newton-like iterations where LAMM takes tens,
// each a pass over the batch. If the model has no minimizer (a zero curvature direction) or its
// step does not descend (no halving accepted), the solve goes on with LAMM from the current point.

#include <algorithm>

#include "rh/config.hpp"
#include "rh/lamm.hpp"
#include "rh/newton.hpp"
#include "rh/ops.hpp"
#include "rh/solve_result.hpp"
#include "rh/trace.hpp"

namespace rh {

// The model's coordinate descent stops when a sweep moves no coordinate by more than this share
// of the outer tolerance, so an exact optimum gives a step that passes the outer test.
inline constexpr double model_tolerance_share = 0.1;

template <L1ModelOps O>
SolveResult prox_newton_solve(O& ops, typename O::Vector& beta, double tau, double lambda,
                              double weight_total, const Config& config, double tol,
                              TraceSink* trace = nullptr) {
  SolveResult result{.solver = Solver::prox_newton};
  auto gradient = ops.make_vector();
  auto step = ops.make_vector();
  auto full = ops.make_vector();
  auto trial = ops.make_vector();
  const double strength = weight_total * lambda;
  const auto continue_with_lamm = [&] {
    Config rest = config;
    rest.max_iter = config.max_iter - result.n_iter;
    if (rest.max_iter <= 0) return result;
    SolveResult lamm = lamm_solve(ops, beta, tau, lambda, weight_total, rest, tol, trace);
    lamm.n_iter += result.n_iter;
    lamm.halvings += result.halvings;
    return lamm;  // reports lamm: that is the solver which finished
  };
  for (std::int64_t k = 0; k < config.max_iter; ++k) {
    ++result.n_iter;
    detail::evaluate_for_hessian(ops, beta, tau);
    // A record whose model gives no descending step keeps step 0: LAMM goes on from this point.
    IterationTrace* record = detail::open_record(trace, ops, beta, lambda);
    if (record != nullptr) record->solver = Solver::prox_newton;
    ops.gradient(gradient);
    ops.form_hessian(config.ridge);
    detail::trace_hessian_diagonal(ops, record);
    if (!ops.solve_l1_model(gradient, beta, strength, model_tolerance_share * tol, step)) {
      return continue_with_lamm();
    }
    if (record != nullptr) {
      record->step_norm = detail::norm2(ops, step);
      record->step_scale = 1.0;
    }
    if (detail::take_negligible_step(ops, beta, step, full, tol)) {
      result.converged = true;
      return result;
    }
    const double decrease =
        ops.dot(gradient, step) + strength * ops.l1_norm_change(beta, full);
    if (!(decrease < 0.0)) {
      if (record != nullptr) record->step_scale = 0.0;
      return continue_with_lamm();
    }

    detail::project_for_search(ops, step, full);
    const std::int64_t halvings_before = result.halvings;
    const double t = detail::armijo_step(
        [&](double s) {
          ops.copy(beta, trial);
          ops.axpy(s, step, trial);
          return ops.objective_change(step, s) + strength * ops.l1_norm_change(beta, trial);
        },
        decrease, result.halvings);
    if (record != nullptr) {
      record->halvings = result.halvings - halvings_before;
      record->step_scale = t;
      record->search_exhausted = t == 0.0;
    }
    // No halving descends measurably: near the optimum the objective's rounding hides a step
    // the model still asks for (tol near machine precision); LAMM's step-size test decides.
    if (t == 0.0) return continue_with_lamm();
    ops.copy(trial, beta);  // beta + t step, as the accepted trial formed it
    if (t * ops.norm_inf(step) <= tol * std::max(1.0, ops.norm_inf(beta))) {
      result.converged = true;
      return result;
    }
  }
  return result;
}

}  // namespace rh
