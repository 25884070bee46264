#pragma once
// One batch transition (shared/spec/method.md): the scale and bandwidth, the solve(s), the
// information update, the inference sums and the new state. Written once over SolverOps; engines
// supply the Ops and validate the input first (rh/validation.hpp). The contract-v3 schedules
// (the lambda schedule, the smoothed curvature's bandwidth) are decided here, as the reference
// decides them (docs/method-v3.md), so every engine takes the same values.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rh/config.hpp"
#include "rh/diagnostics.hpp"
#include "rh/drift.hpp"
#include "rh/error.hpp"
#include "rh/huber.hpp"
#include "rh/lamm.hpp"
#include "rh/newton.hpp"
#include "rh/ops.hpp"
#include "rh/prox_newton.hpp"
#include "rh/square_root.hpp"
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
  double scale = 0.0;
  if constexpr (ScaleGuessOps<O>) {
    scale = mad_k * weighted_mad(ops.host_residuals(beta), weights, &ops.scale_guess());
  } else if constexpr (HostResidualOps<O>) {
    scale = mad_k * weighted_mad(ops.host_residuals(beta), weights);
  } else {
    // Not value-initialized: residuals_to_host writes every entry (a zeroed row-length vector
    // cost a memset and the first touch of its pages on every batch).
    const std::size_t rows = weights.size();
    const std::unique_ptr<T[]> residuals(new T[rows]);
    ops.residuals_to_host(beta, std::span<T>(residuals.get(), rows));
    scale = mad_k * weighted_mad(std::span<const T>(residuals.get(), rows), weights);
  }
  return finite_positive(scale) ? scale : fallback;
}

// The first batch's pilot scale: MAD of y, else its weighted standard deviation, else 1; and
// the weighted median of y that the MAD is taken about (the intercept's start where the solve
// starts from 0: one selection on y, not two).
struct PilotScale {
  double scale;
  double y_median;
};

template <class T>
PilotScale pilot_scale(std::span<const T> y, std::span<const T> weights) {
  const MedianAndMad found = weighted_median_and_mad(y, weights);
  const double mad = mad_k * found.mad;
  if (finite_positive(mad)) return {mad, found.median};
  const double deviation = weighted_std(y, weights);
  return {finite_positive(deviation) ? deviation : 1.0, found.median};
}

// The contract-v3 quantities of one batch, from N_b = W + sum w and q = log(max(p, 2)), p the
// features without the intercept, each formed in float64 in the reference's order.
class BatchSchedules {
 public:
  BatchSchedules(const Config& config, std::size_t features, double weight_total)
      : config_(config),
        q_(std::log(static_cast<double>(std::max<std::size_t>(features, 2)))),
        weight_total_(weight_total) {}

  // The batch's lambda: alpha, or lambda_scale * tau * sqrt(q / N_b) under the schedule.
  double lambda(double tau) const {
    if (!config_.lambda_scale) return config_.alpha;
    return *config_.lambda_scale * tau * std::sqrt(q_ / weight_total_);
  }

  // h_b = min(bandwidth_scale * s / (sqrt(N_b) * q), tau): s the batch's scale when tau adapts
  // (scale-equivariant), 1 when tau is fixed (the seed's absolute units).
  double bandwidth(double tau, double scale) const {
    const double unit = config_.tau ? 1.0 : scale;
    return std::min(config_.bandwidth_scale * unit / (std::sqrt(weight_total_) * q_), tau);
  }

 private:
  const Config& config_;
  double q_;
  double weight_total_;
};

// The first batch's start point of an unpenalized stream (contract v4): the weighted
// least-squares fit, (X~^T W X~ + ridge I) beta = X~^T W y, which is the Newton step from 0 with
// every residual inside (an infinite bandwidth), the ridge taken as every Newton step takes it
// (detail::newton_step). It costs one Gram and one pass, and starts the solves close to the
// answer (on Student-t noise 4 Newton iterations and no halving instead of 7 and 3). False, beta
// untouched, when the fit is not finite, its system overflows, or its objective at the first
// solve's bandwidth tau is above the zero point's (an outlier can pull a least-squares fit so far
// that no residual is inside: the Newton matrix there is zero and the solve could not leave it);
// the old start then applies. Comparing objectives, not counting rows, keeps weight-2 rows and
// duplicated rows on the same start. y: the batch's targets (the residuals at 0) on the host.
template <SolverOps O>
bool least_squares_start(O& ops, typename O::Vector& beta, const Config& config, double tau,
                         std::span<const typename O::Scalar> y,
                         std::span<const typename O::Scalar> weights) {
  using T = typename O::Scalar;
  auto zero = ops.make_vector();
  evaluate_for_hessian(ops, zero, std::numeric_limits<double>::infinity());
  auto gradient = ops.make_vector();
  ops.gradient(gradient);
  auto rhs = ops.make_vector();
  auto fit = ops.make_vector();
  LadderScratch<T> scratch;
  try {
    newton_step(ops, gradient, rhs, fit, scratch, config.ridge, nullptr, nullptr);
  } catch (const NumericalError&) {  // every row's square or product overflows: start at 0
    return false;
  }
  std::vector<T> host(ops.dim());
  ops.copy_to_host(fit, host);
  for (const T value : host) {
    if (!std::isfinite(value)) return false;
  }
  double at_zero = 0.0;  // Q(0) from the residuals at 0, without a pass over X
  for (std::size_t i = 0; i < y.size(); ++i) {
    at_zero += static_cast<double>(weights[i]) * huber_rho(static_cast<double>(y[i]), tau);
  }
  ops.evaluate(fit, tau);
  if (!(ops.objective(0.0) <= at_zero)) return false;
  ops.copy(fit, beta);
  return true;
}

// Diagnostics::stationarity_step: the Newton step on a LAMM solve's gradient mapping G along
// each coefficient, max_j |G_j| / J_jj over the coefficients whose information J_jj (row-major
// d x d) is finite and positive, and with an intercept (the last coefficient) along each slope
// together with it: the 2 x 2 Newton step on (j, intercept), since a column far from centred
// moves with the intercept and alone understates the distance. A pair whose determinant is not
// above 1e-12 of its diagonal's product counts alone. NaN without a mapping. The reference's
// update.stationarity_step, in the same order.
template <class T>
double stationarity_step(const std::vector<double>& mapping, std::span<const T> information,
                         std::size_t d, bool intercept) {
  double step = std::numeric_limits<double>::quiet_NaN();
  if (mapping.size() != d) return step;
  const auto usable = [&](std::size_t j) {
    const auto curvature = static_cast<double>(information[j * d + j]);
    return std::isfinite(curvature) && curvature > 0.0;
  };
  for (std::size_t j = 0; j < d; ++j) {
    if (!usable(j)) continue;
    const double along = std::fabs(mapping[j]) / static_cast<double>(information[j * d + j]);
    step = std::isnan(step) ? along : std::max(step, along);
  }
  const std::size_t last = d - 1;
  if (!intercept || d == 0 || !usable(last)) return step;
  const auto c = static_cast<double>(information[last * d + last]);
  for (std::size_t j = 0; j < last; ++j) {
    if (!usable(j)) continue;
    const auto a = static_cast<double>(information[j * d + j]);
    const auto b = static_cast<double>(information[j * d + last]);
    const double det = a * c - b * b;
    if (!(std::isfinite(det) && det > 1e-12 * (a * c))) continue;
    const double along = std::fabs(c * mapping[j] - b * mapping[last]) / det;
    const double with_intercept = std::fabs(a * mapping[last] - b * mapping[j]) / det;
    step = std::max({step, along, with_intercept});
  }
  return step;
}

template <SolverOps O>
SolveResult solve_batch(O& ops, typename O::Vector& beta, double tau, double lambda,
                        double weight_total, const Config& config, double tol, TraceSink* trace,
                        SolvePhase phase, DriftProbe* probe = nullptr, bool near_start = false) {
  if (trace != nullptr) trace->begin_solve(phase);
  if (lambda > 0.0) {
    if (config.l1_solver == L1Solver::prox_newton) {
      if constexpr (L1ModelOps<O>) {
        return prox_newton_solve(ops, beta, tau, lambda, weight_total, config, tol, trace);
      } else {
        throw InvalidArgument("l1_solver 'prox_newton' is not available on this engine");
      }
    }
    return lamm_solve(ops, beta, tau, lambda, weight_total, config, tol, trace, near_start);
  }
  return newton_solve(ops, beta, tau, config, tol, trace, probe, phase);
}

// The inference matrices the next state keeps: G and K start at zero when the sums cover no
// batch yet, are kept while every batch asks for them, and are dropped otherwise (a state whose
// sums cover batches without them keeps none: the coverage would differ from the scalars').
template <class T>
bool keeps_matrices(const StateView<T>& previous, const Config& config) {
  return config.inference_matrices &&
         (!previous.gram.empty() || previous.inference.inference_batches == 0);
}

template <class T>
std::vector<T> matrix_or_zeros(std::span<const T> previous, std::size_t dim) {
  if (previous.empty()) return std::vector<T>(dim * dim, T{0});
  return {previous.begin(), previous.end()};
}

inline InferenceSums add_sums(const InferenceSums& previous, const InferenceSums& batch) {
  return {.score_sq_sum = previous.score_sq_sum + batch.score_sq_sum,
          .curvature_sum = previous.curvature_sum + batch.curvature_sum,
          .curvature_sq_sum = previous.curvature_sq_sum + batch.curvature_sq_sum,
          .inference_weight = previous.inference_weight + batch.inference_weight,
          .inference_batches = previous.inference_batches + 1};
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
  const detail::BatchSchedules schedules(config, ops.dim() - (ops.intercept() ? 1 : 0),
                                         weight_total);

  auto beta = ops.make_vector();
  double scale = 0.0;
  SolveResult pilot;  // the first batch's pilot solve, counted in the diagnostics
  if (previous.batch_count == 0) {
    std::vector<T> start(ops.dim(), T{0});
    std::vector<T> y(weights.size());
    ops.residuals_to_host(beta, y);  // y - X~ 0 = y
    const std::optional<detail::PilotScale> y_pilot =
        config.tau ? std::nullopt
                   : std::optional(detail::pilot_scale(std::span<const T>(y), weights));
    const double pilot_s = y_pilot ? y_pilot->scale : 0.0;
    const double first_tau = detail::dtype_tau<T>(config.tau ? *config.tau
                                                             : config.epsilon * pilot_s);
    const bool penalized = config.alpha > 0.0 || config.lambda_scale.value_or(0.0) != 0.0;
    if (penalized || !detail::least_squares_start(ops, beta, config, first_tau,
                                                         std::span<const T>(y), weights)) {
      if (ops.intercept()) {
        start.back() = static_cast<T>(y_pilot ? y_pilot->y_median
                                              : weighted_median(std::span<const T>(y), weights));
        ops.assign(start, beta);
      }
    }
    std::vector<T>().swap(y);  // the solves do not need it: a row vector less at the peak
    if (config.tau) {
      scale = *config.tau / config.epsilon;
    } else {
      const double pilot_tau = detail::dtype_tau<T>(config.epsilon * pilot_s);
      pilot = detail::solve_batch(ops, beta, pilot_tau, schedules.lambda(pilot_tau), weight_total,
                                  config, tol, trace, SolvePhase::pilot);
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
  const double lambda = schedules.lambda(tau);
  // The drift test reads the main solve's first Newton point, which is (beta~, tau_b).
  DriftProbe probe;
  const bool drift = previous.batch_count > 0 && previous.previous_lambda == 0.0 && lambda == 0.0;
  const SolveResult solve =
      detail::solve_batch(ops, beta, tau, lambda, weight_total, config, tol, trace,
                          SolvePhase::main, drift ? &probe : nullptr, previous.batch_count > 0);
  DriftResult drift_result;
  if constexpr (DriftOps<O>) {
    if (drift) drift_result = drift_test(probe, previous.information, ops.drift_solver());
  }

  const bool smoothed = config.curvature == Curvature::smoothed;
  // h_b in the dtype, as the information pass uses it; 0: the indicator.
  const double bandwidth = smoothed ? detail::dtype_tau<T>(schedules.bandwidth(tau, scale)) : 0.0;
  const bool matrices = detail::keeps_matrices(previous, config);
  if (smoothed || detail::square_root(ops)) {
    ops.evaluate(beta, tau);  // J_b is formed afresh (or R~ from the rows): no Newton Gram
  } else {
    detail::evaluate_for_hessian(ops, beta, tau);  // J_b is the Newton Gram of this point
  }
  const std::size_t d = ops.dim();
  State<T> next;
  next.coef.resize(d);
  ops.copy_to_host(beta, next.coef);
  next.information.resize(d * d);
  if (matrices) {
    next.gram = detail::matrix_or_zeros(previous.gram, d);
    next.score_gram = detail::matrix_or_zeros(previous.score_gram, d);
  }
  const InformationRequest request{
      .bandwidth = bandwidth, .matrices = matrices, .anchor = lambda > 0.0};
  InferenceSums batch_sums;
  if (detail::square_root(ops)) {
    if constexpr (SquareRootOps<O>) {
      next.information_factor.resize(d * d);
      next.information_vector.resize(d);
      batch_sums = ops.square_root_information(
          request, SquareRootOutputs<T>{next.information_factor, next.information_vector,
                                        next.gram, next.score_gram});
      factor_gram(std::span<const T>(next.information_factor), d, std::span<T>(next.information));
    }
  } else {
    batch_sums = ops.information(
        request, InformationOutputs<T>{next.information, next.gram, next.score_gram});
  }
  next.inference = detail::add_sums(previous.inference, batch_sums);
  next.n_samples_seen = previous.n_samples_seen + static_cast<std::int64_t>(weights.size());
  next.effective_weight = weight_total;
  next.batch_count = previous.batch_count + 1;
  next.previous_lambda = lambda;
  next.scale = scale;

  Diagnostics diagnostics{.converged = solve.converged,
                          .n_iter = pilot.n_iter + solve.n_iter,
                          .objective = ops.objective(lambda),
                          .lambda = lambda,
                          .bandwidth = smoothed ? bandwidth : tau,
                          .solver = solve.solver,
                          .line_search_halvings = pilot.halvings + solve.halvings,
                          .rcond = solve.rcond,
                          .drift_statistic = drift_result.statistic,
                          .drift_df = drift_result.df,
                          .drift_pvalue = drift_result.pvalue,
                          .stationarity_step = detail::stationarity_step(
                              solve.gradient_mapping, std::span<const T>(next.information), d,
                              ops.intercept())};

  detail::require_finite(std::span<const T>(next.coef), "coef");
  detail::require_finite(std::span<const T>(next.information), "information matrix");
  detail::require_finite(std::span<const T>(next.information_factor), "information factor");
  detail::require_finite(std::span<const T>(next.information_vector), "information vector");
  // The estimate before what is derived from it: a batch whose objective overflows is reported
  // as that, not as the inference sums that overflow with it.
  detail::require_finite(std::span<const double>(&diagnostics.objective, 1), "objective");
  detail::require_finite(std::span<const double>(&scale, 1), "scale");
  detail::require_finite(std::span<const T>(next.gram), "inference matrix G");
  detail::require_finite(std::span<const T>(next.score_gram), "inference matrix K");
  const double sums[] = {next.inference.score_sq_sum, next.inference.curvature_sum,
                         next.inference.curvature_sq_sum, next.inference.inference_weight};
  detail::require_finite(std::span<const double>(sums), "inference sum");
  return {std::move(next), diagnostics};
}

}  // namespace rh
