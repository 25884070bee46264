#pragma once
// LAMM for an L1-penalized batch (shared/spec/method.md, "Solvers"): proximal gradient steps
// with a local quadratic majorizer whose curvature phi doubles until it majorizes f.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "rh/config.hpp"
#include "rh/ops.hpp"
#include "rh/solve_result.hpp"
#include "rh/trace.hpp"

namespace rh {

inline constexpr int max_phi_doublings = 100;

// After a refusal, an engine with FusedTrialOps tries this many next values of phi in one pass
// over X~; the first one accepted is taken, exactly as if they were tried in turn.
inline constexpr int phi_trials_per_pass = 8;

namespace detail {

// phi at the start of a solve (contract v4): the mean diagonal of the quadratic part's curvature,
// X~^T diag(w) X~ + J~, so the majorizer starts on the batch's scale (a sum objective's curvature
// grows with the weight) instead of doubling up to it from 1; 1 when that is not a finite
// positive number.
inline double first_phi(double diagonal_mean) {
  return std::isfinite(diagonal_mean) && diagonal_mean > 0.0 ? diagonal_mean : 1.0;
}

// The trial point for curvature phi: candidate = prox(beta - gradient / phi), step = candidate
// - beta.
template <SolverOps O>
void lamm_candidate(O& ops, const typename O::Vector& beta, const typename O::Vector& gradient,
                    double phi, double l1_strength, typename O::Vector& shifted,
                    typename O::Vector& candidate, typename O::Vector& step) {
  ops.copy(beta, shifted);
  ops.axpy(-1.0 / phi, gradient, shifted);
  ops.soft_threshold(shifted, l1_strength / phi, candidate);
  ops.copy(candidate, step);
  ops.axpy(-1.0, beta, step);
}

// changes[k] = dQ_smooth(steps[k]). One trial alone also prepares the evaluation at its
// candidate where the engine can, since the trial is usually accepted.
template <SolverOps O>
void lamm_trial_changes(O& ops, std::span<const typename O::Vector> steps,
                        const typename O::Vector& first_candidate, std::span<double> changes) {
  if constexpr (FusedTrialOps<O>) {
    if (steps.size() > 1) {
      ops.objective_changes(steps, changes);
      return;
    }
    ops.project_and_prepare(steps[0], first_candidate);
  } else {
    ops.project(steps[0]);  // one trial per pass: lamm_solve never asks this Ops for more
  }
  changes[0] = ops.objective_change(steps[0], 1.0);
}

// The majorizer's bound on dQ_smooth(step) for curvature phi: g^T step + phi/2 ||step||^2.
template <SolverOps O>
double lamm_majorizer(O& ops, const typename O::Vector& gradient, const typename O::Vector& step,
                      double phi) {
  return ops.dot(gradient, step) + 0.5 * phi * ops.dot(step, step);
}

// When LAMM shows an AnchoringOps engine a step, and how far it says the rest of the solve goes.
// A later batch's first step (near_start): its own length, the rest of a solve begun near the
// minimizer being about that long. Otherwise a step of length s after one of length s' leaves
// about s / (1 - q) of path, q = s/s' (at most max_contraction), if the steps keep contracting
// so (a geometric tail). The engine answers whether the current point is expanded about an
// anchor (one it has, or one it forms for that reach); asked again while it is, at no cost,
// so that where the path outruns the anchor and a pass is taken the point can anchor anew.
// Declined, the engine is asked again only once the reach has halved, so a solve pays a few of
// its row passes at most.
class AnchorSchedule {
 public:
  static constexpr double max_contraction = 0.75;

  explicit AnchorSchedule(bool near_start) : near_start_(near_start) {}

  // The reach factor to ask iteration k's first step with (its length given), or 0: not now.
  double factor(std::int64_t k, double length) const {
    double factor = 0.0;
    if (k == 0) {
      factor = near_start_ ? 1.0 : 0.0;
    } else if (last_length_ > 0.0) {
      factor = 1.0 / (1.0 - std::min(length / last_length_, max_contraction));
    }
    return factor > 0.0 && length * factor <= 0.5 * declined_reach_ ? factor : 0.0;
  }
  void asked(double length, double factor, bool expanded) {
    declined_reach_ = expanded ? std::numeric_limits<double>::infinity() : length * factor;
  }
  void accepted(double length) { last_length_ = length; }

 private:
  bool near_start_;
  double last_length_ = 0.0;
  double declined_reach_ = std::numeric_limits<double>::infinity();
};

}  // namespace detail

// Minimizes f(beta) + weight_total * lambda * ||beta_S||_1 from beta (updated in place). With a
// trace sink, each iteration appends its record (rh/trace.hpp). An AnchoringOps engine is shown
// steps (detail::AnchorSchedule) and may form the current point's Gram, which the batch's
// information needs at the end anyway (brought there by the rows whose curvature changed), to
// take the later iterations by expansion about it, without a pass over X~ (docs/native.md):
// the first step where beta is close to the minimizer (near_start: a later batch starting from
// the previous coefficients), else once the steps have shrunk. Far from the minimizer the steps
// outrun the expansion and the Gram would be formed twice, so not there.
template <SolverOps O>
SolveResult lamm_solve(O& ops, typename O::Vector& beta, double tau, double lambda,
                       double weight_total, const Config& config, double tol,
                       TraceSink* trace = nullptr, bool near_start = false) {
  using Vector = typename O::Vector;
  constexpr int slots = FusedTrialOps<O> ? phi_trials_per_pass : 1;
  SolveResult result{.solver = Solver::lamm};
  auto gradient = ops.make_vector();
  auto shifted = ops.make_vector();
  std::vector<Vector> candidates;
  std::vector<Vector> steps;
  candidates.reserve(slots);
  steps.reserve(slots);
  for (int k = 0; k < slots; ++k) {
    candidates.push_back(ops.make_vector());
    steps.push_back(ops.make_vector());
  }
  std::array<double, slots> changes{};
  const double l1_strength = weight_total * lambda;
  double phi = 0.0;  // set after the first evaluation (which may form it); never decreases
  detail::AnchorSchedule anchor_schedule(near_start);
  // The last accepted step's slot and phi: its gradient mapping is reported once, on return.
  int last_slot = -1;
  double last_phi = 0.0;
  const auto keep_gradient_mapping = [&] {
    if (last_slot >= 0) {
      std::vector<typename O::Scalar> step(ops.dim());
      ops.copy_to_host(steps[static_cast<std::size_t>(last_slot)], step);
      result.gradient_mapping.resize(step.size());
      for (std::size_t j = 0; j < step.size(); ++j) {
        result.gradient_mapping[j] = last_phi * static_cast<double>(step[j]);
      }
    }
  };
  for (std::int64_t k = 0; k < config.max_iter; ++k) {
    ++result.n_iter;
    ops.evaluate(beta, tau);
    if (k == 0) phi = detail::first_phi(ops.diagonal_mean());
    IterationTrace* record = detail::open_record(trace, ops, beta, lambda);
    if (record != nullptr) record->solver = Solver::lamm;
    ops.gradient(gradient);
    int doublings = 0;
    int accepted = -1;
    bool alone = true;
    while (accepted < 0) {
      // The first value of phi alone (after the first iterations it is nearly always accepted),
      // then several per pass, never past the last doubling allowed.
      const int count = alone ? 1 : std::min(slots, max_phi_doublings - doublings + 1);
      alone = false;
      double trial_phi = phi;
      for (int i = 0; i < count; ++i, trial_phi *= 2.0) {
        detail::lamm_candidate(ops, beta, gradient, trial_phi, l1_strength, shifted,
                               candidates[i], steps[i]);
      }
      if constexpr (AnchoringOps<O>) {
        if (count == 1) {
          const double length = detail::norm2(ops, steps[0]);
          const double factor = anchor_schedule.factor(k, length);
          if (factor > 0.0) {
            anchor_schedule.asked(length, factor, ops.anchor_if_expanding(steps[0], factor));
          }
        }
      }
      detail::lamm_trial_changes(ops, std::span<const Vector>(steps).first(count), candidates[0],
                                 std::span<double>(changes).first(count));
      for (int i = 0; i < count; ++i) {
        if (changes[i] <= detail::lamm_majorizer(ops, gradient, steps[i], phi)) {
          accepted = i;
          break;
        }
        if (doublings == max_phi_doublings) {
          result.halvings += doublings;
          if (record != nullptr) {
            record->halvings = doublings;
            record->search_exhausted = true;
          }
          // phi cannot majorize f: keep beta, not converged (the trials overwrote the steps,
          // so no gradient mapping is reported)
          return result;
        }
        phi *= 2.0;
        ++doublings;
      }
    }
    result.halvings += doublings;
    if (record != nullptr) {
      record->halvings = doublings;
      record->step_norm = detail::norm2(ops, steps[accepted]);
      record->step_scale = 1.0;
    }
    if constexpr (AnchoringOps<O>) anchor_schedule.accepted(detail::norm2(ops, steps[accepted]));
    const double moved = ops.norm_inf(steps[accepted]);
    ops.copy(candidates[accepted], beta);
    last_slot = accepted;
    last_phi = phi;
    if (moved <= tol * std::max(1.0, ops.norm_inf(beta))) {
      result.converged = true;
      keep_gradient_mapping();
      return result;
    }
  }
  keep_gradient_mapping();
  return result;
}

}  // namespace rh
