#pragma once
// One batch transition (shared/spec/method.md): the scale and bandwidth, the solve(s), the
// information update and the new state. Written once over SolverOps; engines supply the Ops and
// validate the input first (rh/validation.hpp).

#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rh/config.hpp"
#include "rh/diagnostics.hpp"
#include "rh/error.hpp"
#include "rh/lamm.hpp"
#include "rh/newton.hpp"
#include "rh/ops.hpp"
#include "rh/prox_newton.hpp"
#include "rh/state.hpp"
#include "rh/trace.hpp"
#include "rh/weighted_stats.hpp"

namespace rh {
namespace detail {

inline bool finite_positive(double value) { return std::isfinite(value) && value > 0.0; }

// tau enters the arrays, so it is rounded to the dtype once; the bandwidth reports that value.
template <class T>
double dtype_tau(double tau) {
  return static_cast<double>(static_cast<T>(tau));
}

// MAD_K * wMAD(y - X~ beta), or fallback when that is not a finite positive number.
template <SolverOps O>
double residual_scale(O& ops, const typename O::Vector& beta, double fallback) {
  using T = typename O::Scalar;
  const auto weights = ops.host_weights();
  std::vector<T> residuals(weights.size());
  ops.residuals_to_host(beta, residuals);
  const double scale = mad_k * weighted_mad(std::span<const T>(residuals), weights);
  return finite_positive(scale) ? scale : fallback;
}

// The first batch's pilot scale: MAD of y, else its weighted standard deviation, else 1.
template <class T>
double pilot_scale(std::span<const T> y, std::span<const T> weights) {
  const double mad = mad_k * weighted_mad(y, weights);
  if (finite_positive(mad)) return mad;
  const double deviation = weighted_std(y, weights);
  return finite_positive(deviation) ? deviation : 1.0;
}

template <SolverOps O>
SolveResult solve_batch(O& ops, typename O::Vector& beta, double tau, double weight_total,
                        const Config& config, double tol, TraceSink* trace, SolvePhase phase) {
  if (trace != nullptr) trace->begin_solve(phase);
  if (config.alpha > 0.0) {
    if (config.l1_solver == L1Solver::prox_newton) {
      if constexpr (L1ModelOps<O>) {
        return prox_newton_solve(ops, beta, tau, config.alpha, weight_total, config, tol, trace);
      } else {
        throw InvalidArgument("l1_solver 'prox_newton' is not available on this engine");
      }
    }
    return lamm_solve(ops, beta, tau, config.alpha, weight_total, config, tol, trace);
  }
  return newton_solve(ops, beta, tau, config, tol, trace);
}

template <class T>
void require_finite(std::span<const T> values, const char* what) {
  for (const T value : values) {
    if (!std::isfinite(value)) {
      throw NumericalError(std::string("the update produced a non-finite ") + what +
                           "; the state is unchanged");
    }
  }
}

}  // namespace detail

// Computes the state after one batch. The input must already be validated. With a trace sink,
// every iteration of the batch's solves appends its record (rh/trace.hpp; null: off).
template <SolverOps O>
std::pair<State<typename O::Scalar>, Diagnostics> renewable_update(
    O& ops, const StateView<typename O::Scalar>& previous, const Config& config,
    TraceSink* trace = nullptr) {
  using T = typename O::Scalar;
  const double tol = resolved_tol<T>(config);
  const double weight_sum = ops.weight_sum();
  const double weight_total = previous.effective_weight + weight_sum;
  const auto weights = ops.host_weights();

  auto beta = ops.make_vector();
  double scale = 0.0;
  SolveResult pilot;  // the first batch's pilot solve, counted in the diagnostics
  if (previous.batch_count == 0) {
    std::vector<T> start(ops.dim(), T{0});
    std::vector<T> y(weights.size());
    ops.residuals_to_host(beta, y);  // y - X~ 0 = y
    if (ops.intercept()) {
      start.back() = static_cast<T>(weighted_median(std::span<const T>(y), weights));
      ops.assign(start, beta);
    }
    if (config.tau) {
      scale = *config.tau / config.epsilon;
    } else {
      const double pilot_s = detail::pilot_scale(std::span<const T>(y), weights);
      pilot = detail::solve_batch(ops, beta, detail::dtype_tau<T>(config.epsilon * pilot_s),
                                  weight_total, config, tol, trace, SolvePhase::pilot);
      scale = detail::residual_scale(ops, beta, pilot_s);
    }
  } else {
    ops.assign(previous.coef, beta);
    if (config.tau) {
      scale = *config.tau / config.epsilon;
    } else {
      const double batch_scale = detail::residual_scale(ops, beta, previous.scale);
      scale =
          (previous.effective_weight * previous.scale + weight_sum * batch_scale) / weight_total;
    }
  }
  const double tau = detail::dtype_tau<T>(config.tau ? *config.tau : config.epsilon * scale);
  const SolveResult solve =
      detail::solve_batch(ops, beta, tau, weight_total, config, tol, trace, SolvePhase::main);

  detail::evaluate_for_hessian(ops, beta, tau);  // the information follows
  State<T> next;
  next.coef.resize(ops.dim());
  ops.copy_to_host(beta, next.coef);
  next.information.resize(ops.dim() * ops.dim());
  ops.information(next.information);
  next.n_samples_seen = previous.n_samples_seen + static_cast<std::int64_t>(weights.size());
  next.effective_weight = weight_total;
  next.batch_count = previous.batch_count + 1;
  next.previous_lambda = config.alpha;
  next.scale = scale;

  Diagnostics diagnostics{.converged = solve.converged,
                          .n_iter = pilot.n_iter + solve.n_iter,
                          .objective = ops.objective(config.alpha),
                          .lambda = config.alpha,
                          .bandwidth = tau,
                          .solver = solve.solver,
                          .line_search_halvings = pilot.halvings + solve.halvings,
                          .rcond = solve.rcond};

  detail::require_finite(std::span<const T>(next.coef), "coef");
  detail::require_finite(std::span<const T>(next.information), "information matrix");
  detail::require_finite(std::span<const double>(&diagnostics.objective, 1), "objective");
  detail::require_finite(std::span<const double>(&scale, 1), "scale");
  return {std::move(next), diagnostics};
}

}  // namespace rh
