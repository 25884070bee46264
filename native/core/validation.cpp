#include "rh/validation.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "rh/error.hpp"

// The scans of y and the weights (every batch reads them once) are compiled twice on x86-64, as
// the CPU engine's row kernels are: for x86-64-v3 (AVX2: their 64-bit compares vectorize) and the
// baseline, the loader picks the clone. Integer and comparison work only: no rounding differs.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_THREAD__)
#define RH_SCAN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RH_SCAN_CLONES
#endif

namespace rh {
namespace {

void require_at_least(const char* name, double value, double bound) {
  if (!std::isfinite(value) || value < bound) {
    fail(name, " must be a finite number >= ", bound, ", got ", value);
  }
}

void require_positive(const char* name, double value) {
  if (!std::isfinite(value) || value <= 0.0) {
    fail(name, " must be a finite number > 0, got ", value);
  }
}

template <class T>
RH_SCAN_CLONES bool any_non_finite_scan(const T* values, std::size_t n) {
  return any_non_finite(values, n);
}

// Whether any weight is non-finite or negative (bad), any positive, and every one exactly 1, in
// one branch-free pass.
template <class T>
RH_SCAN_CLONES void scan_weights(const T* weights, std::size_t n, ValueScan& out) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  constexpr Bits exponent = sizeof(T) == 8 ? Bits(0x7ff0000000000000) : Bits(0x7f800000);
  constexpr Bits one = std::bit_cast<Bits>(T{1});
  Bits found_bad = 0;
  Bits found_positive = 0;
  Bits found_other = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T w = weights[i];
    found_bad |= static_cast<Bits>((std::bit_cast<Bits>(w) & exponent) == exponent) |
                 static_cast<Bits>(w < T{0});
    found_positive |= static_cast<Bits>(w > T{0});
    found_other |= std::bit_cast<Bits>(w) ^ one;
  }
  out.weights_bad = found_bad != 0;
  out.weights_positive = found_positive != 0;
  out.weights_units = found_other == 0;
}

template <class T>
void locate_non_finite(const char* name, std::span<const T> values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) fail(name, " contains a non-finite value at index ", i);
  }
}

template <class T>
void require_finite_vector(const char* name, std::span<const T> values) {
  if (any_non_finite_scan(values.data(), values.size())) locate_non_finite(name, values);
}

template <class T>
void validate_design_shape(MatrixView<T> X) {
  if (X.rows == 0) fail("X has 0 rows; a batch needs at least 1 sample");
  if (X.cols == 0) fail("X has 0 features; at least 1 is required");
}

// The weights' values as `facts` found them (validate_update's scan or the engine's): the first
// offending entry named, for the message.
template <class T>
void validate_weights(std::span<const T> weights, const ValueScan& facts) {
  if (facts.weights_bad) {
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (!std::isfinite(weights[i])) {
        fail("sample_weight contains a non-finite value at index ", i);
      }
      if (weights[i] < T{0}) {
        fail("sample_weight must be >= 0, but entry ", i, " is ", weights[i]);
      }
    }
  }
  // The sum of finite non-negative weights is positive exactly when one of them is.
  if (!facts.weights_positive) {
    fail("sample_weight sums to 0; at least one weight must be positive");
  }
}

// R~ (d x d, upper triangular, diagonal >= 0, finite) and z~ (d, finite).
template <class T>
void validate_factor(const StateView<T>& state, std::size_t d) {
  if (state.information_factor.size() != d * d) {
    fail("the state's information_factor has ", state.information_factor.size(),
         " entries, expected ", d, " x ", d);
  }
  if (state.information_vector.size() != d) {
    fail("the state's information_vector has ", state.information_vector.size(),
         " entries, expected ", d);
  }
  require_finite_vector("the state's information_factor", state.information_factor);
  require_finite_vector("the state's information_vector", state.information_vector);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (state.information_factor[i * d + j] != T{0}) {
        fail("the state's information_factor is not upper triangular: entry (", i, ", ", j,
             ") is ", state.information_factor[i * d + j]);
      }
    }
    if (state.information_factor[i * d + i] < T{0}) {
      fail("the state's information_factor has a negative diagonal entry at ", i, ": ",
           state.information_factor[i * d + i]);
    }
  }
}

template <class T>
void validate_state(const StateView<T>& state, std::size_t features, bool fit_intercept) {
  const std::size_t intercept = fit_intercept ? 1 : 0;
  const std::size_t d = state.dim();
  if (d != features + intercept) {
    if (d < intercept) {
      fail("the state has ", d, " coefficients, but fit_intercept=True needs at least 1");
    }
    fail("X has ", features, " features, but the state has ", d - intercept, " (its coef has ", d,
         " entries with fit_intercept=", fit_intercept ? "True" : "False", ")");
  }
  // A square-root state's information is R~^T R~, derived: it may be absent.
  if (!(state.square_root() && state.information.empty()) && state.information.size() != d * d) {
    fail("the state's information matrix has ", state.information.size(), " entries, expected ", d,
         " x ", d);
  }
  require_finite_vector("the state's coef", state.coef);
  require_finite_vector("the state's information matrix", state.information);
  if (state.square_root()) validate_factor(state, d);
  if (state.n_samples_seen < 0) fail("the state's n_samples_seen is negative");
  if (state.batch_count < 0) fail("the state's batch_count is negative");
  require_at_least("the state's effective_weight", state.effective_weight, 0.0);
  require_at_least("the state's previous_lambda", state.previous_lambda, 0.0);
  if (state.batch_count > 0) require_positive("the state's scale", state.scale);
  const InferenceSums& sums = state.inference;
  require_at_least("the state's score_sq_sum", sums.score_sq_sum, 0.0);
  require_at_least("the state's curvature_sum", sums.curvature_sum, 0.0);
  require_at_least("the state's curvature_sq_sum", sums.curvature_sq_sum, 0.0);
  require_at_least("the state's inference_weight", sums.inference_weight, 0.0);
  if (sums.inference_batches < 0) fail("the state's inference_batches is negative");
  if (state.gram.empty() != state.score_gram.empty()) {
    fail("the state has ", state.gram.empty() ? "score_gram but no gram" : "gram but no score_gram",
         "; the inference matrices come together");
  }
  for (const auto& [name, matrix] : {std::pair{"gram", state.gram},
                                     std::pair{"score_gram", state.score_gram}}) {
    if (!matrix.empty() && matrix.size() != d * d) {
      fail("the state's ", name, " has ", matrix.size(), " entries, expected ", d, " x ", d);
    }
  }
  require_finite_vector("the state's gram", state.gram);
  require_finite_vector("the state's score_gram", state.score_gram);
}

}  // namespace

void validate_config(const Config& config) {
  require_at_least("alpha", config.alpha, 0.0);
  require_positive("epsilon", config.epsilon);
  if (config.tau) require_positive("tau", *config.tau);
  require_at_least("ridge", config.ridge, 0.0);
  if (config.max_iter < 1) fail("max_iter must be >= 1, got ", config.max_iter);
  if (config.tol) require_positive("tol", *config.tol);
  if (config.lambda_scale) {
    require_at_least("lambda_scale", *config.lambda_scale, 0.0);
    if (config.alpha > 0.0) {
      fail("alpha=", config.alpha, " and lambda_scale=", *config.lambda_scale,
           " are both set: lambda_scale replaces alpha by the schedule lambda_b = lambda_scale * "
           "tau_b * sqrt(log(max(p, 2)) / N_b); set one of them (alpha=0 with the schedule)");
    }
  }
  require_positive("bandwidth_scale", config.bandwidth_scale);
  if (config.half_life) require_positive("half_life", *config.half_life);
}

template <std::floating_point T>
void require_finite_design(MatrixView<T> X) {
  if (!any_non_finite_scan(X.data, X.rows * X.cols)) return;
  for (std::size_t i = 0; i < X.rows; ++i) {  // locate the first one for the message
    const T* row = X.row(i);
    for (std::size_t j = 0; j < X.cols; ++j) {
      if (!std::isfinite(row[j])) {
        fail("X contains a non-finite value at row ", i, ", column ", j);
      }
    }
  }
}

template <std::floating_point T>
ValueScan scan_values(std::span<const T> y, std::span<const T> sample_weight) {
  ValueScan facts;
  facts.y_non_finite = any_non_finite_scan(y.data(), y.size());
  scan_weights(sample_weight.data(), sample_weight.size(), facts);
  return facts;
}

template <std::floating_point T>
ValueScan validate_update(const StateView<T>& state, MatrixView<T> X, std::span<const T> y,
                          std::span<const T> sample_weight, const Config& config,
                          DesignValues design_values, const ValueScan* scanned) {
  validate_config(config);
  validate_design_shape(X);
  if (design_values == DesignValues::checked) require_finite_design(X);
  ValueScan facts;
  try {
    if (y.size() != X.rows) fail("y has ", y.size(), " entries, but X has ", X.rows, " rows");
    if (sample_weight.size() != X.rows) {
      require_finite_vector("y", y);  // y's error comes first, as in the scan below
      fail("sample_weight has ", sample_weight.size(), " entries, but X has ", X.rows, " rows");
    }
    facts = scanned != nullptr ? *scanned : scan_values(y, sample_weight);
    if (facts.y_non_finite) locate_non_finite("y", y);
    validate_weights(sample_weight, facts);
    validate_state(state, X.cols, config.fit_intercept);
  } catch (const InvalidArgument&) {
    // A deferred scan would have come first: its error, if X has one, is the one reported.
    if (design_values == DesignValues::deferred) require_finite_design(X);
    throw;
  }
  return facts;
}

template ValueScan validate_update<float>(const StateView<float>&, MatrixView<float>,
                                          std::span<const float>, std::span<const float>,
                                          const Config&, DesignValues, const ValueScan*);
template ValueScan validate_update<double>(const StateView<double>&, MatrixView<double>,
                                           std::span<const double>, std::span<const double>,
                                           const Config&, DesignValues, const ValueScan*);
template ValueScan scan_values<float>(std::span<const float>, std::span<const float>);
template ValueScan scan_values<double>(std::span<const double>, std::span<const double>);
template void require_finite_design<float>(MatrixView<float>);
template void require_finite_design<double>(MatrixView<double>);

}  // namespace rh
