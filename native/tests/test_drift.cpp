// Contract v4 in the one driver (rh/update.hpp, rh/drift.hpp) on the CPU engine: forgetting
// discounts the history before a batch; the drift test's statistic against a naive float64
// evaluation written from method.md; its chi-square tail against known values.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <rh/cpu/engine.hpp>
#include <rh/drift.hpp>
#include <rh/error.hpp>
#include <span>
#include <vector>

#include "dense_solver.hpp"
#include "problems.hpp"

namespace {

using rh::test::Batch;
using rh::test::contaminated_batch;
using rh::test::update;

// Gauss-Jordan inverse of a small well-conditioned matrix, float64 (row-major).
std::vector<double> inverse(std::vector<double> a, std::size_t d) {
  std::vector<double> inv(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i) inv[i * d + i] = 1.0;
  for (std::size_t c = 0; c < d; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < d; ++r) {
      if (std::abs(a[r * d + c]) > std::abs(a[pivot * d + c])) pivot = r;
    }
    for (std::size_t k = 0; k < d; ++k) {
      std::swap(a[c * d + k], a[pivot * d + k]);
      std::swap(inv[c * d + k], inv[pivot * d + k]);
    }
    const double diag = a[c * d + c];
    for (std::size_t k = 0; k < d; ++k) {
      a[c * d + k] /= diag;
      inv[c * d + k] /= diag;
    }
    for (std::size_t r = 0; r < d; ++r) {
      if (r == c) continue;
      const double f = a[r * d + c];
      for (std::size_t k = 0; k < d; ++k) {
        a[r * d + k] -= f * a[c * d + k];
        inv[r * d + k] -= f * inv[c * d + k];
      }
    }
  }
  return inv;
}

// T = U' V^-1 U from its definition, at the state's coefficients with tau (intercept last).
double naive_statistic(const rh::State<double>& s, const Batch<double>& b, double tau) {
  const std::size_t p = b.features;
  const std::size_t d = p + 1;
  std::vector<double> U(d, 0.0), A(d * d, 0.0), x(d);
  double spsi = 0.0, sc = 0.0;
  for (std::size_t i = 0; i < b.rows; ++i) {
    double fitted = s.coef[p];
    for (std::size_t j = 0; j < p; ++j) {
      x[j] = b.X[i * p + j];
      fitted += x[j] * s.coef[j];
    }
    x[p] = 1.0;
    const double r = b.y[i] - fitted;
    const double psi = std::clamp(r, -tau, tau);
    const double c = std::abs(r) <= tau ? 1.0 : 0.0;
    const double w = b.w[i];
    spsi += w * psi * psi;
    sc += w * c;
    for (std::size_t j = 0; j < d; ++j) {
      U[j] += w * psi * x[j];
      for (std::size_t k = 0; k < d; ++k) A[j * d + k] += w * c * x[j] * x[k];
    }
  }
  const std::vector<double> Jinv = inverse({s.information.begin(), s.information.end()}, d);
  std::vector<double> V(d * d);
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k < d; ++k) {
      double spread = 0.0;
      for (std::size_t m = 0; m < d; ++m) {
        for (std::size_t l = 0; l < d; ++l) spread += A[j * d + m] * Jinv[m * d + l] * A[l * d + k];
      }
      V[j * d + k] = spsi / sc * (A[j * d + k] + spread);
    }
  }
  const std::vector<double> Vinv = inverse(V, d);
  double t = 0.0;
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k < d; ++k) t += U[j] * Vinv[j * d + k] * U[k];
  }
  return t;
}

TEST(Drift, ChiSquareSurvivalMatchesKnownValues) {
  // scipy.stats.chi2.sf values.
  EXPECT_NEAR(rh::detail::chi2_survival(3.841458820694124, 1.0), 0.05, 1e-13);
  EXPECT_NEAR(rh::detail::chi2_survival(9.487729036781154, 4.0), 0.05, 1e-13);
  EXPECT_NEAR(rh::detail::chi2_survival(13.276704135987622, 4.0), 0.01, 1e-13);
  EXPECT_NEAR(rh::detail::chi2_survival(1.0, 5.0), 0.9625657732472964, 1e-13);
  EXPECT_NEAR(rh::detail::chi2_survival(60.0, 3.0) / 5.878230727906921e-13, 1.0, 1e-9);
  EXPECT_EQ(rh::detail::chi2_survival(0.0, 3.0), 1.0);
}

TEST(Drift, StatisticMatchesItsDefinition) {
  rh::cpu::Engine engine;
  rh::Config config;
  config.tau = 1.5;
  auto [s1, d1] =
      update(engine, rh::State<double>::empty(4), contaminated_batch<double>(1, 300, 3, 0.0), config);
  EXPECT_TRUE(std::isnan(d1.drift_statistic));
  auto [s2, d2] = update(engine, s1, contaminated_batch<double>(2, 250, 3, 0.0), config);
  const Batch<double> third = contaminated_batch<double>(3, 260, 3, 0.0);
  const auto [s3, d3] = update(engine, s2, third, config);
  const double want = naive_statistic(s2, third, 1.5);
  EXPECT_NEAR(d3.drift_statistic / want, 1.0, 1e-9);
  EXPECT_EQ(d3.drift_df, 4.0);
  EXPECT_NEAR(d3.drift_pvalue, rh::detail::chi2_survival(want, 4.0), 1e-12);
}

TEST(Drift, ForgettingDiscountsTheHistoryBeforeTheBatch) {
  rh::cpu::Engine engine;
  rh::Config forgetting;
  forgetting.half_life = 200.0;
  const Batch<double> a = contaminated_batch<double>(4, 300, 3);
  const Batch<double> b = contaminated_batch<double>(5, 150, 3);
  const auto first = update(engine, rh::State<double>::empty(4), a, forgetting).first;
  const double gamma = std::pow(2.0, -150.0 / 200.0);
  const rh::State<double> discounted = rh::discounted(first.view(), gamma);
  const auto via_discount = update(engine, discounted, b, rh::Config{});
  const auto direct = update(engine, first, b, forgetting);
  EXPECT_EQ(direct.first.coef, via_discount.first.coef);
  EXPECT_EQ(direct.first.information, via_discount.first.information);
  EXPECT_DOUBLE_EQ(direct.first.effective_weight, gamma * 300.0 + 150.0);
  EXPECT_EQ(direct.first.n_samples_seen, 450);
  EXPECT_EQ(direct.first.batch_count, 2);
  EXPECT_DOUBLE_EQ(direct.second.drift_statistic, via_discount.second.drift_statistic);
  for (std::size_t k = 0; k < discounted.information.size(); ++k) {
    EXPECT_EQ(discounted.information[k], first.information[k] * gamma);
  }
}

TEST(Drift, AnOverflowingTestIsNanNotAnError) {
  constexpr std::size_t d = 3;
  rh::DriftProbe probe;
  probe.captured = true;
  probe.score.assign(d, 1e300);
  probe.gram.assign(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i) probe.gram[i * d + i] = 1e300;
  probe.score_sq_sum = 1.0;
  probe.curvature_sum = 1.0;
  std::vector<double> information(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i) information[i * d + i] = 1e-300;
  rh::cpu::DenseSolver<double> solver;
  solver.resize(d);
  const rh::DriftResult result =
      rh::drift_test(probe, std::span<const double>(information), solver);  // V overflows
  EXPECT_TRUE(std::isnan(result.statistic) && std::isnan(result.df) && std::isnan(result.pvalue));
}

TEST(Drift, BadHalfLifeIsRefusedByName) {
  rh::cpu::Engine engine;
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()}) {
    rh::Config config;
    config.half_life = bad;
    try {
      update(engine, rh::State<double>::empty(4), contaminated_batch<double>(6, 50, 3), config);
      ADD_FAILURE() << "half_life " << bad << " accepted";
    } catch (const rh::InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("half_life"), std::string::npos);
    }
  }
}

}  // namespace
