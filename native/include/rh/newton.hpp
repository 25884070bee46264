#pragma once
// Damped semismooth Newton for an unpenalized batch (shared/spec/method.md, "Solvers";
// docs/numerics.md): Newton direction from the ladder, Armijo backtracking on the objective
// difference along the step.

#include <algorithm>

#include "rh/config.hpp"
#include "rh/drift.hpp"
#include "rh/ladder.hpp"
#include "rh/ops.hpp"
#include "rh/solve_result.hpp"
#include "rh/trace.hpp"

namespace rh {

inline constexpr double armijo_slope_fraction = 1e-4;
inline constexpr int max_armijo_halvings = 30;

namespace detail {

// full = beta + step. A full step already below the tolerance changes Q by less than its
// rounding, so Armijo would compare noise (and could refuse every halving at the optimum): such
// a step is taken without a search (beta = full) and the solve has converged (true).
template <SolverOps O>
bool take_negligible_step(O& ops, typename O::Vector& beta, const typename O::Vector& step,
                          typename O::Vector& full, double tol) {
  ops.copy(beta, full);
  ops.axpy(1.0, step, full);
  if (ops.norm_inf(step) > tol * std::max(1.0, ops.norm_inf(full))) return false;
  ops.copy(full, beta);
  return true;
}

// evaluate(beta, tau) for a caller whose next call forms the Newton matrix (or the information):
// where the engine can, it forms the point's Gram in the same pass over X.
template <SolverOps O>
void evaluate_for_hessian(O& ops, const typename O::Vector& beta, double tau) {
  if constexpr (SquareRootOps<O>) {
    if (ops.square_root()) {  // its steps read the rows, not a Gram
      ops.evaluate(beta, tau);
      return;
    }
  }
  if constexpr (FusedTrialOps<O>) {
    ops.evaluate_with_gram(beta, tau);
  } else {
    ops.evaluate(beta, tau);
  }
}

// Readies the line search along `step`: projects it and, where the engine can, evaluates the
// full step's point `full` in the same pass (it is usually taken).
template <SolverOps O>
void project_for_search(O& ops, const typename O::Vector& step, const typename O::Vector& full) {
  if constexpr (FusedTrialOps<O>) {
    ops.project_and_prepare(step, full);
  } else {
    ops.project(step);
  }
}

// Armijo backtracking from t = 1: halves t until change(t) <= 1e-4 t slope, at most
// max_armijo_halvings times, adding the halvings made to `halvings`. Returns the accepted t, or 0
// when none is accepted.
template <class Change>
double armijo_step(Change&& change, double slope, std::int64_t& halvings) {
  double t = 1.0;
  for (int k = 0;; ++k) {
    // <=, not <: a step that changes nothing in floating point is accepted.
    if (change(t) <= armijo_slope_fraction * t * slope) {
      halvings += k;
      return t;
    }
    if (k == max_armijo_halvings) {
      halvings += k;
      return 0.0;
    }
    t *= 0.5;
  }
}

// The Newton step -H^-1 g through the ladder (method.md, "ridge"). With a ridge, the undamped H
// decides first: singular even after equilibration (the SVD rung), its minimum-norm step is
// taken, as without a ridge. The ridge alone would make such a system regular with eigenvalues of
// only `ridge` in the directions no row determines, and the solve would put its rounding there
// multiplied by 1/ridge (docs/numerics.md). The ladder equilibrates H in place, so the damped
// matrix is formed anew. A drift probe captures the point once its Gram is formed.
// The square-root mode's step (factorization="qr"): the minimizer of the local model by QR of
// stacked rows, the ridge decided inside as above (the undamped factor first). The drift probe
// still reads the point's Gram, formed for it alone.
template <SquareRootOps O>
LadderResult square_root_newton_step(O& ops, const typename O::Vector& gradient,
                                     typename O::Vector& step, double ridge, DriftProbe* probe) {
  if (probe != nullptr) {
    ops.form_hessian(0.0);
    probe->capture(ops, gradient);
  }
  const SquareRootStep s = ops.square_root_step(ridge, step);
  return {.rung = s.rung, .rcond = s.rcond, .rank = s.rank};
}

template <SolverOps O>
LadderResult newton_step(O& ops, const typename O::Vector& gradient, typename O::Vector& rhs,
                         typename O::Vector& step, LadderScratch<typename O::Scalar>& scratch,
                         double ridge, IterationTrace* record, DriftProbe* probe) {
  if constexpr (SquareRootOps<O>) {
    if (ops.square_root()) return square_root_newton_step(ops, gradient, step, ridge, probe);
  }
  if (ridge > 0.0) {
    ops.form_hessian(0.0);
    if (probe != nullptr) probe->capture(ops, gradient);
    detail::trace_hessian_diagonal(ops, record);
    ops.copy(gradient, rhs);
    ops.scale(-1.0, rhs);
    const LadderResult undamped = solve_ladder(ops, rhs, step, scratch);
    if (undamped.rung == Solver::svd) return undamped;
  }
  ops.form_hessian(ridge);
  if (probe != nullptr && ridge == 0.0) probe->capture(ops, gradient);
  detail::trace_hessian_diagonal(ops, record);
  ops.copy(gradient, rhs);
  ops.scale(-1.0, rhs);
  return solve_ladder(ops, rhs, step, scratch);
}

}  // namespace detail

// Minimizes the smooth batch objective from beta (updated in place) with bandwidth tau. With a
// trace sink, each iteration appends its record (rh/trace.hpp). With a drift probe, the first
// iteration's point (the start) is captured for the drift test (rh/drift.hpp).
template <SolverOps O>
SolveResult newton_solve(O& ops, typename O::Vector& beta, double tau, const Config& config,
                         double tol, TraceSink* trace = nullptr, DriftProbe* probe = nullptr) {
  SolveResult result;
  auto gradient = ops.make_vector();
  auto rhs = ops.make_vector();
  auto step = ops.make_vector();
  auto full = ops.make_vector();
  LadderScratch<typename O::Scalar> scratch;
  for (std::int64_t k = 0; k < config.max_iter; ++k) {
    ++result.n_iter;
    detail::evaluate_for_hessian(ops, beta, tau);
    IterationTrace* record = detail::open_record(trace, ops, beta, 0.0);
    ops.gradient(gradient);
    const LadderResult ladder = detail::newton_step(ops, gradient, rhs, step, scratch,
                                                    config.ridge, record, k == 0 ? probe : nullptr);
    result.solver = ladder.rung;
    result.rcond = ladder.rcond;
    if (record != nullptr) {
      record->solver = ladder.rung;
      record->rcond = ladder.rcond;
      record->step_norm = detail::norm2(ops, step);
      record->step_scale = 1.0;  // unless the search below says otherwise
    }

    if (detail::take_negligible_step(ops, beta, step, full, tol)) {
      result.converged = true;
      return result;
    }
    detail::project_for_search(ops, step, full);
    const std::int64_t halvings_before = result.halvings;
    const double t = detail::armijo_step(
        [&](double s) { return ops.objective_change(step, s); }, ops.dot(gradient, step),
        result.halvings);
    if (record != nullptr) {
      record->halvings = result.halvings - halvings_before;
      record->step_scale = t;
      record->search_exhausted = t == 0.0;
    }
    if (t == 0.0) return result;  // no acceptable step: keep beta, not converged
    ops.axpy(t, step, beta);
    if (t * ops.norm_inf(step) <= tol * std::max(1.0, ops.norm_inf(beta))) {
      result.converged = true;
      return result;
    }
  }
  return result;
}

}  // namespace rh
