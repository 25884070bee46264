#pragma once
// Streams that change (shared/spec/method.md, contract v4): forgetting and the drift test.
//
// Forgetting: before batch b the history is discounted by gamma_b = 2^(-sum w_b / half_life),
// the information J~, the effective weight W and every inference sum (the state's counts stay
// counts). An engine builds its Ops from the discounted state (discounted_history), so that
// everything downstream (the objective, N_b, the scale average, the covariances) sees it.
//
// The drift test: at the state before the batch (beta~, J~ after any discounting) and the batch's
// tau_b, with r~ = y - X~ beta~: U = sum w psi(r~) x~ (minus the first Newton gradient when the
// history is unpenalized), A = X~' diag(w c(r~)) X~ (the first Newton matrix less J~ and ridge),
// v = sum w psi^2 / sum w c, V = v (A + A J~^-1 A), T = U' V^-1 U ~ chi2_d. The solve's first
// Newton iteration is at that very point, so the test reads what it computed there (DriftProbe):
// no pass over X of its own; on the host, in float64, J~^-1 A and V^-1 U by the equilibrated
// ladder (pseudo-inverse and numerical rank on its SVD rung).

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "rh/config.hpp"
#include "rh/error.hpp"
#include "rh/ladder.hpp"
#include "rh/ops.hpp"
#include "rh/square_root.hpp"
#include "rh/state.hpp"

namespace rh {

// The discount of the history before a batch of weight `weight_sum`, or none without forgetting.
inline std::optional<double> history_discount(const Config& config, double weight_sum) {
  if (!config.half_life) return std::nullopt;
  return std::pow(2.0, -weight_sum / *config.half_life);
}

// The sum of a batch's weights in float64, in row order (an empty span: unit weights).
template <std::floating_point T>
double batch_weight_sum(std::span<const T> weights, std::size_t rows) {
  if (weights.empty()) return static_cast<double>(rows);
  double sum = 0.0;
  for (const T w : weights) sum += static_cast<double>(w);
  return sum;
}

// `previous` with its history times gamma: J~, G and K in T (gamma rounded to T once; a
// square-root history's R~ and z~ times sqrt(gamma), J~ formed again from R~), W and the
// inference sums in float64. coef, scale, the previous lambda and the counters are kept.
template <std::floating_point T>
State<T> discounted(const StateView<T>& previous, double gamma) {
  const auto g = static_cast<T>(gamma);
  const auto times = [g](std::span<const T> values) {
    std::vector<T> out(values.begin(), values.end());
    for (T& value : out) value *= g;
    return out;
  };
  State<T> state;
  state.coef.assign(previous.coef.begin(), previous.coef.end());
  state.information = times(previous.information);
  state.n_samples_seen = previous.n_samples_seen;
  state.effective_weight = gamma * previous.effective_weight;
  state.batch_count = previous.batch_count;
  state.previous_lambda = previous.previous_lambda;
  state.scale = previous.scale;
  state.inference = previous.inference;
  state.inference.score_sq_sum = gamma * previous.inference.score_sq_sum;
  state.inference.curvature_sum = gamma * previous.inference.curvature_sum;
  state.inference.curvature_sq_sum = gamma * previous.inference.curvature_sq_sum;
  state.inference.inference_weight = gamma * previous.inference.inference_weight;
  state.gram = times(previous.gram);
  state.score_gram = times(previous.score_gram);
  if (previous.square_root()) {  // R~ and z~ times sqrt(gamma); J~ = R~^T R~ of the result
    const auto root = static_cast<T>(std::sqrt(gamma));
    state.information_factor.assign(previous.information_factor.begin(),
                                    previous.information_factor.end());
    for (T& value : state.information_factor) value *= root;
    state.information_vector.assign(previous.information_vector.begin(),
                                    previous.information_vector.end());
    for (T& value : state.information_vector) value *= root;
    factor_gram(std::span<const T>(state.information_factor), state.coef.size(),
                std::span<T>(state.information));
  }
  return state;
}

// The history an engine builds its Ops from: `previous` discounted for a batch of weight
// `weight_sum` when half_life is set and the state has seen a batch (kept in `storage`), else
// `previous` itself, untouched.
template <std::floating_point T>
StateView<T> history_for_batch(const StateView<T>& previous, const Config& config,
                               double weight_sum, State<T>& storage) {
  const auto gamma = history_discount(config, weight_sum);
  if (!gamma || previous.batch_count == 0) return previous;
  storage = discounted(previous, *gamma);
  return storage.view();
}

struct DriftResult {
  double statistic = std::numeric_limits<double>::quiet_NaN();
  double df = std::numeric_limits<double>::quiet_NaN();
  double pvalue = std::numeric_limits<double>::quiet_NaN();
};

// What an engine's Ops give the drift test at the current point (after form_hessian()): the
// batch Gram without J~ and ridge, the point's sums of w psi^2 and w c, and a float64 host solver
// with the ladder's rungs (cholesky / lu / min_norm on a row-major d x d matrix, cholesky_again /
// lu_again for more right-hand sides with the last factorization, and multiply_transposed, as
// rh::cpu::DenseSolver has them).
template <class O>
concept DriftOps = SolverOps<O> && requires(O& ops, std::span<double> host_out) {
  ops.batch_gram_to_host(host_out);
  { ops.point_sums() } -> std::same_as<InferenceSums>;
  ops.drift_solver();
};

// The first Newton iteration's point of an unpenalized later batch, in float64 on the host.
struct DriftProbe {
  bool captured = false;
  std::vector<double> score;  // U
  std::vector<double> gram;   // A, row-major
  double score_sq_sum = 0.0;
  double curvature_sum = 0.0;

  template <SolverOps O>
  void capture(O& ops, const typename O::Vector& gradient) {
    if constexpr (DriftOps<O>) {
      using T = typename O::Scalar;
      const std::size_t d = ops.dim();
      std::vector<T> host(d);
      score.resize(d);
      if constexpr (requires { ops.score_to_host(std::span<T>(host)); }) {
        // The score itself: in factorization="qr" the gradient at beta~ also holds
        // R~^T (R~ beta~ - z~), the last solve's remainder, which U does not (method.md).
        ops.score_to_host(std::span<T>(host));
        for (std::size_t j = 0; j < d; ++j) score[j] = static_cast<double>(host[j]);
      } else {  // -gradient = U exactly where the history term vanishes at beta~ (J~ 0)
        ops.copy_to_host(gradient, std::span<T>(host));
        for (std::size_t j = 0; j < d; ++j) score[j] = -static_cast<double>(host[j]);
      }
      gram.resize(d * d);
      ops.batch_gram_to_host(std::span<double>(gram));
      const InferenceSums sums = ops.point_sums();
      score_sq_sum = sums.score_sq_sum;
      curvature_sum = sums.curvature_sum;
      captured = true;
    }
  }
};

namespace detail {

// P(chi2_df > x) = Q(df / 2, x / 2), the regularized upper incomplete gamma function: its series
// below a + 1, Lentz's continued fraction above (Numerical Recipes, 3rd ed., 6.2).
inline double chi2_survival(double x, double df) {
  const double a = 0.5 * df;
  const double z = 0.5 * x;
  if (!(z > 0.0)) return 1.0;
  // lgamma_r, not std::lgamma: glibc's lgamma writes the global signgam, a data race between
  // engines updating in threads (ThreadSanitizer, test_concurrency). a > 0: the sign is +.
  int sign = 0;
  const double log_prefix = a * std::log(z) - z - ::lgamma_r(a, &sign);
  constexpr double eps = 1e-16;
  if (z < a + 1.0) {
    double term = 1.0 / a;
    double sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= z / (a + n);
      sum += term;
      if (std::abs(term) < std::abs(sum) * eps) break;
    }
    return std::max(0.0, 1.0 - sum * std::exp(log_prefix));
  }
  constexpr double tiny = 1e-300;
  double b = z + 1.0 - a;
  double c = 1.0 / tiny;
  double d = 1.0 / b;
  double h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < eps) break;
  }
  return std::exp(log_prefix) * h;
}

// matrix^-1 rhs by the equilibrated ladder on the host, in float64: matrix d x d row-major, rhs
// and the solution `out` d x k column-major. The rung is chosen on the first column and its
// factorization serves the others in one call, as one factorization of the matrix serves every
// column in the reference. Returns the rank used (d unless the SVD rung cut singular values).
// `eps`: the precision the matrix's entries carry (the stream's dtype's), which rcond_min = d eps
// and the SVD's cut are relative to: a float32 batch's A of rank 1 has float32 rounding, not
// information, in its other eigenvalues (rhuber.core.drift.statistic).
template <class Solver>
std::size_t host_ladder_solve(Solver& solver, std::span<const double> matrix,
                              std::span<const double> rhs, std::size_t d, std::size_t k,
                              std::vector<double>& out, double eps) {
  std::vector<double> scales(d);
  for (std::size_t i = 0; i < d; ++i) scales[i] = matrix[i * d + i];
  require_finite_system(std::span<const double>(scales), "matrix");
  equilibration_scales(std::span<double>(scales));
  std::vector<double> equilibrated(d * d);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      equilibrated[i * d + j] = matrix[i * d + j] * (scales[i] * scales[j]);
    }
  }
  bool symmetric = true;
  for (std::size_t i = 0; i < d && symmetric; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (equilibrated[i * d + j] != equilibrated[j * d + i]) {
        symmetric = false;
        break;
      }
    }
  }
  std::vector<double> scaled(d * k);
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t i = 0; i < d; ++i) scaled[c * d + i] = scales[i] * rhs[c * d + i];
  }
  require_finite_system(std::span<const double>(scaled), "right-hand side");
  const double rcond_min = static_cast<double>(d) * eps;
  const auto accepted = [rcond_min](const SolveAttempt& attempt) {
    return attempt.factored && attempt.rcond >= rcond_min && attempt.finite;
  };
  out.assign(d * k, 0.0);
  const double* H = equilibrated.data();
  std::size_t rank = d;
  const std::size_t rest = k - 1;
  if (symmetric && accepted(solver.cholesky(H, scaled.data(), out.data()))) {
    if (rest > 0) solver.cholesky_again(scaled.data() + d, out.data() + d, rest);
  } else if (accepted(solver.lu(H, scaled.data(), out.data()))) {
    if (rest > 0) solver.lu_again(scaled.data() + d, out.data() + d, rest);
  } else {
    for (std::size_t c = 0; c < k; ++c) {
      rank = solver.min_norm(H, scaled.data() + c * d, rcond_min, out.data() + c * d);
    }
  }
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t i = 0; i < d; ++i) out[c * d + i] *= scales[i];
  }
  return rank;
}

// T, df and the p-value from a probe and the (discounted) information J~ of the state before the
// batch, by `solver` (float64, the ladder's rungs); NaN where its inputs are not finite.
template <class Solver, std::floating_point T>
DriftResult drift_statistic(const DriftProbe& probe, std::span<const T> information,
                            Solver& solver) {
  if (!probe.captured || !(probe.curvature_sum > 0.0)) return {};
  const std::size_t d = probe.score.size();
  const double v = probe.score_sq_sum / probe.curvature_sum;
  const auto finite = [](std::span<const double> values) {
    for (const double value : values) {
      if (!std::isfinite(value)) return false;
    }
    return true;
  };
  if (!std::isfinite(v) || !finite(probe.score) || !finite(probe.gram)) return {};
  std::vector<double> history(information.begin(), information.end());
  // J~^-1 A, column-major: A is symmetric, so its row-major array is its column-major one.
  std::vector<double> solved;
  const double eps = std::numeric_limits<T>::epsilon();  // what A and J~ carry, in float64
  detail::host_ladder_solve(solver, std::span<const double>(history),
                            std::span<const double>(probe.gram), d, d, solved, eps);
  // A (J~^-1 A): the column-major `solved` read row-major is its transpose.
  std::vector<double> variance(d * d);
  solver.multiply_transposed(probe.gram.data(), solved.data(), variance.data());
  for (std::size_t k = 0; k < d * d; ++k) variance[k] = v * (probe.gram[k] + variance[k]);
  // Symmetrized: the two triangles differ by rounding only, and the Cholesky rung needs it exact.
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const double mean = 0.5 * (variance[i * d + j] + variance[j * d + i]);
      variance[i * d + j] = mean;
      variance[j * d + i] = mean;
    }
  }
  std::vector<double> weights;  // V^-1 U
  const std::size_t rank = detail::host_ladder_solve(
      solver, std::span<const double>(variance), std::span<const double>(probe.score), d, 1,
      weights, eps);
  double statistic = 0.0;
  for (std::size_t j = 0; j < d; ++j) statistic += probe.score[j] * weights[j];
  if (!std::isfinite(statistic) || rank == 0) return {};
  const auto df = static_cast<double>(rank);
  return {.statistic = statistic, .df = df, .pvalue = chi2_survival(statistic, df)};
}

}  // namespace detail

// The drift test of a probe against the (discounted) information J~ of the state before the
// batch. A test that cannot be formed in float64 (a batch whose squares overflow, a ladder that
// fails) is NaN: the diagnostic never fails the batch it describes.
template <class Solver, std::floating_point T>
DriftResult drift_test(const DriftProbe& probe, std::span<const T> information, Solver& solver) {
  try {
    return detail::drift_statistic(probe, information, solver);
  } catch (const NumericalError&) {
    return {};
  }
}

}  // namespace rh
