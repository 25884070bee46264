#pragma once
// Synthetic batches and a naive float64 evaluation of the batch objective's gradient, written
// independently of the engine so the tests check the engine against the mathematics.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <rh/bricks/bricks.hpp>
#include <rh/config.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/cpu/engine.hpp>
#include <rh/huber.hpp>
#include <rh/state.hpp>
#include <rh/views.hpp>
#include <span>
#include <utility>
#include <vector>

namespace rh::test {

// A profiler that times nothing, for the tests that build BatchOps themselves (its scopes are
// one branch each).
inline rh::bricks::Profiler& quiet_profiler() {
  static rh::bricks::Profiler off = [] {
    rh::bricks::Options options;
    options.sync_mode = rh::bricks::SyncMode::off;
    options.track_page_faults = false;
    return rh::bricks::Profiler(rh::engine_brick_table(), options);
  }();
  return off;
}

template <class T>
struct Batch {
  std::size_t rows = 0;
  std::size_t features = 0;
  std::vector<T> X, y, w;

  MatrixView<T> design() const { return {X.data(), rows, features}; }
  std::span<const T> response() const { return y; }
  std::span<const T> weights() const { return w; }
};

// One batch through the CPU engine's update.
template <class T>
std::pair<State<T>, Diagnostics> update(cpu::Engine& engine, const State<T>& s,
                                        const Batch<T>& batch, const Config& config) {
  return engine.update(s, batch.design(), batch.response(), batch.weights(), config);
}

// y = x^T slopes + 1 + noise; a share of responses shifted by +/- 20.
template <class T>
Batch<T> contaminated_batch(std::uint64_t seed, std::size_t rows, std::size_t features,
                            double outliers = 0.1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::bernoulli_distribution shift(outliers);
  Batch<T> batch{rows, features, std::vector<T>(rows * features), std::vector<T>(rows),
                 std::vector<T>(rows, T{1})};
  for (std::size_t i = 0; i < rows; ++i) {
    double mean = 1.0;
    for (std::size_t j = 0; j < features; ++j) {
      const double x = normal(rng);
      batch.X[i * features + j] = static_cast<T>(x);
      mean += (j % 3 == 0 ? 0.0 : 1.0 + 0.25 * static_cast<double>(j)) * x;
    }
    batch.y[i] = static_cast<T>(mean + 0.5 * normal(rng) + (shift(rng) ? 20.0 : 0.0));
  }
  return batch;
}

// grad f at beta (shared/spec/method.md) in float64: -X~^T (w psi(r)) + J~ delta - W l~ s~.
template <class T>
std::vector<double> smooth_gradient(const State<T>& previous, const Batch<T>& batch,
                                    std::span<const T> beta, double tau, bool fit_intercept) {
  const std::size_t p = batch.features;
  const std::size_t d = beta.size();
  std::vector<double> g(d, 0.0);
  for (std::size_t i = 0; i < batch.rows; ++i) {
    double fitted = fit_intercept ? static_cast<double>(beta[p]) : 0.0;
    for (std::size_t j = 0; j < p; ++j) {
      fitted += static_cast<double>(batch.X[i * p + j]) * static_cast<double>(beta[j]);
    }
    const double r = static_cast<double>(batch.y[i]) - fitted;
    const double score = static_cast<double>(batch.w[i]) * std::clamp(r, -tau, tau);
    for (std::size_t j = 0; j < p; ++j) g[j] -= static_cast<double>(batch.X[i * p + j]) * score;
    if (fit_intercept) g[p] -= score;
  }
  const double history = previous.effective_weight * previous.previous_lambda;
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k < d; ++k) {
      g[j] += static_cast<double>(previous.information[j * d + k]) *
              (static_cast<double>(beta[k]) - static_cast<double>(previous.coef[k]));
    }
    const bool slope = !fit_intercept || j < p;
    const double sign = static_cast<double>((previous.coef[j] > 0) - (previous.coef[j] < 0));
    if (slope) g[j] -= history * sign;
  }
  return g;
}

// 0 in grad f + level * d||beta_S||_1 (level = weight_total * lambda; the intercept last and
// unpenalized), up to tolerance: the optimality of an L1-penalized solution, whichever solver.
inline void expect_subgradient_conditions(const std::vector<double>& g,
                                          const std::vector<double>& coef, double level,
                                          double tolerance) {
  const std::size_t slopes = coef.size() - 1;
  for (std::size_t j = 0; j < slopes; ++j) {
    if (coef[j] != 0.0) {
      EXPECT_NEAR(g[j] + level * (coef[j] > 0 ? 1.0 : -1.0), 0.0, tolerance) << "slope " << j;
    } else {
      EXPECT_LE(std::fabs(g[j]), level + tolerance) << "slope " << j;
    }
  }
  EXPECT_NEAR(g[slopes], 0.0, tolerance) << "the intercept is not penalized";
}

inline double max_abs(std::span<const double> v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// The first `count` rows of `base` weighted 2, and `base` with those rows appended once more
// at weight 1: the pair of batches a weight-2 row must not tell apart from a duplicated one.
template <class T>
std::pair<Batch<T>, Batch<T>> weighted_twice_and_duplicated(const Batch<T>& base,
                                                            std::size_t count) {
  Batch<T> weighted = base;
  Batch<T> duplicated = base;
  const std::size_t p = base.features;
  for (std::size_t i = 0; i < count; ++i) {
    weighted.w[i] = T{2};
    duplicated.X.insert(duplicated.X.end(), base.X.begin() + p * i, base.X.begin() + p * (i + 1));
    duplicated.y.push_back(base.y[i]);
    duplicated.w.push_back(T{1});
  }
  duplicated.rows += count;
  return {std::move(weighted), std::move(duplicated)};
}

}  // namespace rh::test
