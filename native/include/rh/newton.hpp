#pragma once
// Damped semismooth Newton for an unpenalized batch (shared/spec/method.md, "Solvers";
// docs/numerics.md): Newton direction from the ladder, Armijo backtracking on the objective
// difference along the step.

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "rh/config.hpp"
#include "rh/drift.hpp"
#include "rh/error.hpp"
#include "rh/ladder.hpp"
#include "rh/ops.hpp"
#include "rh/solve_result.hpp"
#include "rh/trace.hpp"

namespace rh {

inline constexpr double armijo_slope_fraction = 1e-4;
inline constexpr int max_armijo_halvings = 30;

namespace detail {

// full = beta + step; whether the step is below the tolerance relative to it.
template <SolverOps O>
bool negligible_step(O& ops, const typename O::Vector& beta, const typename O::Vector& step,
                     typename O::Vector& full, double tol) {
  ops.copy(beta, full);
  ops.axpy(1.0, step, full);
  return ops.norm_inf(step) <= tol * std::max(1.0, ops.norm_inf(full));
}

// A step that moves no coefficient by more than this many units in the last place of its own
// value is beta's rounding: take_negligible_newton_step leaves beta where it is.
inline constexpr double rounding_step_units = 32.0;

// Whether |step_j| <= rounding_step_units * eps * |beta_j| for every j: false for a NaN, and for
// any non-zero step of a coefficient at 0.
template <SolverOps O>
bool step_within_rounding(O& ops, const typename O::Vector& beta,
                          const typename O::Vector& step) {
  using T = typename O::Scalar;
  std::vector<T> b(ops.dim());
  std::vector<T> s(ops.dim());
  ops.copy_to_host(beta, b);
  ops.copy_to_host(step, s);
  const double units = rounding_step_units * std::numeric_limits<T>::epsilon();
  for (std::size_t j = 0; j < b.size(); ++j) {
    if (!(std::fabs(static_cast<double>(s[j])) <= units * std::fabs(static_cast<double>(b[j])))) {
      return false;
    }
  }
  return true;
}

// A full step already below the tolerance changes Q by less than its rounding, so Armijo would
// compare noise (and could refuse every halving at the optimum): such a step is taken without a
// search (beta = full) and the solve has converged (true).
template <SolverOps O>
bool take_negligible_step(O& ops, typename O::Vector& beta, const typename O::Vector& step,
                          typename O::Vector& full, double tol) {
  if (!negligible_step(ops, beta, step, full, tol)) return false;
  ops.copy(full, beta);
  return true;
}

// take_negligible_step for the Newton solve, except that a step within the rounding of every
// coefficient (step_within_rounding) is not taken: at a point whose pattern has settled the
// exact Newton step is 0 and the computed one is the rounding of the gradient's sums, beta + step
// would move beta by its own rounding only, and the point after it would cost a pass over X of
// its own (its residuals for the information), where beta's evaluation is the current one. Per
// coefficient, not in the tolerance's norm: a small coefficient beside large ones (a polynomial
// basis) is refined by steps far below the largest one's rounding.
template <SolverOps O>
bool take_negligible_newton_step(O& ops, typename O::Vector& beta,
                                 const typename O::Vector& step, typename O::Vector& full,
                                 double tol) {
  if (!negligible_step(ops, beta, step, full, tol)) return false;
  if (!step_within_rounding(ops, beta, step)) ops.copy(full, beta);
  return true;
}

// Whether the Ops run factorization="qr" (an engine without SquareRootOps never does).
template <SolverOps O>
bool square_root(O& ops) {
  if constexpr (SquareRootOps<O>) {
    return ops.square_root();
  } else {
    return false;
  }
}

// evaluate(beta, tau) for a caller whose next call forms the Newton matrix (or the information):
// where the engine can, it forms the point's Gram in the same pass over X. gram = false: the
// next step is a QR step, which reads the rows, not a Gram.
template <SolverOps O>
void evaluate_for_hessian(O& ops, const typename O::Vector& beta, double tau, bool gram = true) {
  if (!gram) {
    ops.evaluate(beta, tau);
    return;
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
template <SolverOps O>
LadderResult ladder_step(O& ops, const typename O::Vector& gradient, typename O::Vector& rhs,
                         typename O::Vector& step, LadderScratch<typename O::Scalar>& scratch,
                         double ridge, IterationTrace* record, DriftProbe* probe) {
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

// The square-root mode's step (factorization="qr"): the minimizer of the local model by QR of
// stacked rows, the ridge decided inside as above (the undamped factor first). The drift probe
// still reads the point's Gram, formed for it alone.
template <SolverOps O>
LadderResult square_root_newton_step(O& ops, const typename O::Vector& gradient,
                                     typename O::Vector& step, double ridge, DriftProbe* probe) {
  if constexpr (SquareRootOps<O>) {
    if (probe != nullptr) {
      ops.form_hessian(0.0);
      probe->capture(ops, gradient);
    }
    const SquareRootStep s = ops.square_root_step(ridge, step);
    return {.rung = s.rung, .rcond = s.rcond, .rank = s.rank};
  } else {
    throw std::logic_error("internal error: a QR step on an engine without factorization='qr'");
  }
}

// Whether a step in Cholesky form is good enough for the qr mode to take: the Cholesky rung at
// an rcond the estimator does not warn about (python/rhuber/core/ladder.py, RCOND_WARNING).
template <class T>
bool reliable_cholesky_form(const LadderResult& ladder) {
  const double warning = sizeof(T) == sizeof(float) ? 1e-4 : 1e-10;
  return ladder.rung == Solver::cholesky && ladder.rcond >= warning;
}

// The qr mode's step in Cholesky form (ladder_step), or nothing where it is not
// reliable_cholesky_form or its Newton matrix overflows (the rows may not): a QR step is due.
template <SolverOps O>
std::optional<LadderResult> cholesky_form_step(O& ops, const typename O::Vector& gradient,
                                               typename O::Vector& rhs, typename O::Vector& step,
                                               LadderScratch<typename O::Scalar>& scratch,
                                               double ridge, IterationTrace* record,
                                               DriftProbe* probe) {
  try {
    const LadderResult ladder = ladder_step(ops, gradient, rhs, step, scratch, ridge, record, probe);
    if (reliable_cholesky_form<typename O::Scalar>(ladder)) return ladder;
  } catch (const NumericalError&) {
  }
  return std::nullopt;
}

// The Newton step of a caller outside the solve (the first batch's start): through the ladder;
// in the qr mode a QR step where the Cholesky form's is not to be had.
template <SolverOps O>
LadderResult newton_step(O& ops, const typename O::Vector& gradient, typename O::Vector& rhs,
                         typename O::Vector& step, LadderScratch<typename O::Scalar>& scratch,
                         double ridge, IterationTrace* record, DriftProbe* probe) {
  if (!square_root(ops)) return ladder_step(ops, gradient, rhs, step, scratch, ridge, record, probe);
  if (const auto ladder = cholesky_form_step(ops, gradient, rhs, step, scratch, ridge, record, probe))
    return *ladder;
  return square_root_newton_step(ops, gradient, step, ridge, nullptr);
}

template <SolverOps O>
bool pattern_repeats(O& ops) {
  if constexpr (SquareRootOps<O>) {
    return ops.pattern_repeats();
  } else {
    return false;
  }
}

// Where the qr mode's Newton solve is (newton_solve): its steps start in Cholesky form and
// become QR steps for good once the pattern settles.
struct SquareRootPhase {
  bool cholesky_form;        // the next step may be in Cholesky form
  bool full_step = false;    // the last step was taken in full (t = 1)
  bool last_qr = false;      // the last step was a QR step
};

}  // namespace detail

// Minimizes the smooth batch objective from beta (updated in place) with bandwidth tau. With a
// trace sink, each iteration appends its record (rh/trace.hpp). With a drift probe, the first
// iteration's point (the start) is captured for the drift test (rh/drift.hpp).
//
// factorization="qr" (docs/numerics.md): the steps start in Cholesky form (the ladder on
// X~^T W_c X~ + R~^T R~, R~^T (R~ beta - z~) in the gradient: the same Newton step in exact
// arithmetic, from the kept Gram corrected by the flipped rows) while they find the pattern (the
// inside rows and the outside rows' signs, which fix the local model). Once a full step leaves
// the pattern as it was, or a Cholesky-form step is not reliable_cholesky_form, negligible or
// refused by the line search, the steps are the contract's QR steps (the pilot solve, which gives
// only the scale and the main solve's start, stays in Cholesky form where that is reliable, as
// the Cholesky mode solves it). Without a ridge (which damps a step short of the model's
// minimizer), a full QR step that leaves the pattern as it was landed on the minimizer of a model
// that is still the point's own: the step from there is zero and the solve has converged,
// without factorizing again.
template <SolverOps O>
SolveResult newton_solve(O& ops, typename O::Vector& beta, double tau, const Config& config,
                         double tol, TraceSink* trace = nullptr, DriftProbe* probe = nullptr,
                         SolvePhase solve_phase = SolvePhase::main) {
  SolveResult result;
  auto gradient = ops.make_vector();
  auto rhs = ops.make_vector();
  auto step = ops.make_vector();
  auto full = ops.make_vector();
  LadderScratch<typename O::Scalar> scratch;
  const bool qr = detail::square_root(ops);
  detail::SquareRootPhase phase{.cholesky_form = qr};
  // The pilot solve only gives the scale and the main solve's start: where the Cholesky form is
  // reliable it finishes the pilot as it does in the Cholesky mode (one QR a batch less).
  const bool finish_with_qr = qr && solve_phase == SolvePhase::main;
  for (std::int64_t k = 0; k < config.max_iter; ++k) {
    ++result.n_iter;
    detail::evaluate_for_hessian(ops, beta, tau, !qr || phase.cholesky_form);
    IterationTrace* record = detail::open_record(trace, ops, beta, 0.0);
    ops.gradient(gradient);
    DriftProbe* point_probe = k == 0 ? probe : nullptr;
    LadderResult ladder;
    if (qr) {
      const bool settled = detail::pattern_repeats(ops) && phase.full_step;
      if (settled && phase.last_qr && config.ridge == 0.0) {  // at the model's minimizer
        if (record != nullptr) {
          record->solver = result.solver;
          record->rcond = result.rcond;
          record->step_norm = 0.0;
          record->step_scale = 1.0;
        }
        result.converged = true;
        return result;
      }
      bool qr_step = !phase.cholesky_form || (settled && finish_with_qr);
      if (!qr_step) {
        const auto cholesky = detail::cholesky_form_step(ops, gradient, rhs, step, scratch,
                                                         config.ridge, record, point_probe);
        point_probe = nullptr;  // captured at this point
        if (cholesky) ladder = *cholesky;
        // A negligible Cholesky-form step leaves convergence to a QR step.
        qr_step = !cholesky ||
                  (finish_with_qr && detail::negligible_step(ops, beta, step, full, tol));
      }
      if (qr_step) {
        phase.cholesky_form = false;
        ladder = detail::square_root_newton_step(ops, gradient, step, config.ridge, point_probe);
      }
      phase.last_qr = qr_step;
    } else {
      ladder = detail::ladder_step(ops, gradient, rhs, step, scratch, config.ridge, record,
                                   point_probe);
    }
    result.solver = ladder.rung;
    result.rcond = ladder.rcond;
    if (record != nullptr) {
      record->solver = ladder.rung;
      record->rcond = ladder.rcond;
      record->step_norm = detail::norm2(ops, step);
      record->step_scale = 1.0;  // unless the search below says otherwise
    }

    if (detail::take_negligible_newton_step(ops, beta, step, full, tol)) {
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
    if (t == 0.0) {
      if (!phase.cholesky_form) return result;  // no acceptable step: keep beta, not converged
      phase.cholesky_form = false;  // a Cholesky-form step refused: a QR step from here next
      phase.full_step = false;
      continue;
    }
    ops.axpy(t, step, beta);
    phase.full_step = t == 1.0;
    if (t * ops.norm_inf(step) <= tol * std::max(1.0, ops.norm_inf(beta))) {
      if (!(phase.cholesky_form && finish_with_qr)) {
        result.converged = true;
        return result;
      }
      phase.cholesky_form = false;  // a QR step decides convergence
    }
  }
  return result;
}

}  // namespace rh
