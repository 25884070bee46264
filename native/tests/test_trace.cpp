// Solver tracing (rh/trace.hpp, docs/tracing.md): the statistics are right, a record per
// iteration, the same records for every thread count, and tracing changes no result.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <rh/cpu/engine.hpp>
#include <rh/trace.hpp>
#include <rh/weighted_stats.hpp>
#include <vector>

#include "problems.hpp"

namespace {

using rh::test::Batch;
using rh::test::contaminated_batch;
using rh::test::update;

template <class T>
std::pair<rh::State<T>, rh::Diagnostics> update(rh::cpu::Engine& engine, const rh::State<T>& s,
                                                const Batch<T>& batch, const rh::Config& config,
                                                rh::TraceSink* trace) {
  return engine.update(s, batch.design(), batch.response(), batch.weights(), config, trace);
}

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

TEST(TensorStats, CountsNonFiniteEntriesAndDescribesTheFiniteOnes) {
  const std::vector<double> v{1.0, nan, -2.0, inf, 4.0, -inf, 3.0};
  const auto s = rh::TensorStats::of_values(v.data(), v.size());
  EXPECT_EQ(s.count, 7);
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.inf, 2);
  EXPECT_EQ(s.min, -2.0);
  EXPECT_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(s.mean, 1.5);
  EXPECT_DOUBLE_EQ(s.std_dev(), std::sqrt((0.25 + 12.25 + 6.25 + 2.25) / 4.0));
  EXPECT_DOUBLE_EQ(s.l2(), std::sqrt(1.0 + 4.0 + 16.0 + 9.0));
}

TEST(TensorStats, MergedChunksDescribeTheWhole) {
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(1e6 + std::sin(i) * 3.0);  // a large mean
  const auto whole = rh::TensorStats::of_values(v.data(), v.size());
  rh::TensorStats merged;
  for (std::size_t lo = 0; lo < v.size(); lo += 137) {
    merged.merge(rh::TensorStats::of_values(v.data() + lo, std::min<std::size_t>(137, v.size() - lo)));
  }
  EXPECT_EQ(merged.count, whole.count);
  EXPECT_EQ(merged.min, whole.min);
  EXPECT_EQ(merged.max, whole.max);
  EXPECT_NEAR(merged.mean, whole.mean, 1e-13 * whole.mean);
  EXPECT_NEAR(merged.std_dev(), whole.std_dev(), 1e-9 * whole.std_dev());
  EXPECT_NEAR(merged.l2(), whole.l2(), 1e-12 * whole.l2());
}

TEST(TensorStats, NoFiniteEntryHasNoSpread) {
  const std::vector<float> v{std::numeric_limits<float>::quiet_NaN()};
  const auto s = rh::TensorStats::of_values(v.data(), v.size());
  EXPECT_EQ(s.finite(), 0);
  EXPECT_TRUE(std::isnan(s.std_dev()));
  rh::TensorStats merged;
  merged.merge(s);
  EXPECT_EQ(merged.nan, 1);
  EXPECT_EQ(merged.l2(), 0.0);
}

TEST(Trace, OneRecordPerIterationAndTheSameResult) {
  const auto batch = contaminated_batch<double>(5, 3000, 6);
  rh::Config config;
  rh::cpu::Engine engine;
  const auto [plain, plain_diag] = update(engine, rh::State<double>::empty(7), batch, config);
  rh::TraceSink sink;
  const auto [traced, diag] = update(engine, rh::State<double>::empty(7), batch, config, &sink);
  EXPECT_EQ(traced.coef, plain.coef);
  EXPECT_EQ(traced.information, plain.information);
  ASSERT_EQ(static_cast<std::int64_t>(sink.records.size()), diag.n_iter);
  // The first batch of an adaptive stream: a pilot solve, then the main one, each numbered from 1.
  EXPECT_EQ(sink.records.front().phase, rh::SolvePhase::pilot);
  EXPECT_EQ(sink.records.back().phase, rh::SolvePhase::main);
  std::int64_t halvings = 0;
  for (std::size_t k = 0; k < sink.records.size(); ++k) {
    const auto& r = sink.records[k];
    halvings += r.halvings;
    EXPECT_EQ(r.rows, 3000);
    EXPECT_EQ(r.residual.count, 3000);
    EXPECT_EQ(r.score.count, 3000);
    EXPECT_EQ(r.hessian_diagonal.count, 7);
    EXPECT_GT(r.hessian_diagonal.min, 0.0);
    EXPECT_GE(r.quadratic_rows, 7);
    EXPECT_LE(r.quadratic_rows, 3000);
    EXPECT_TRUE(std::isfinite(r.objective));
    EXPECT_EQ(r.solver, rh::Solver::cholesky);
    if (k > 0 && r.phase == sink.records[k - 1].phase) {
      EXPECT_EQ(r.iteration, sink.records[k - 1].iteration + 1);
      EXPECT_LE(r.objective, sink.records[k - 1].objective);  // Armijo: Q never increases
    } else {
      EXPECT_EQ(r.iteration, 1);
    }
  }
  EXPECT_EQ(halvings, diag.line_search_halvings);
}

TEST(Trace, FirstIterationStatisticsMatchANaiveComputation) {
  // A fixed tau: one solve, starting at the weighted least-squares fit (contract v4's start of
  // an unpenalized first batch), here from the normal equations by Gaussian elimination.
  const auto batch = contaminated_batch<double>(9, 500, 3);
  rh::Config config;
  config.tau = 1.5;
  rh::cpu::Engine engine;
  rh::TraceSink sink;
  update(engine, rh::State<double>::empty(4), batch, config, &sink);
  ASSERT_FALSE(sink.records.empty());
  const auto& first = sink.records.front();
  constexpr std::size_t d = 4;
  double normal[d][d + 1] = {};
  for (std::size_t i = 0; i < batch.rows; ++i) {
    const double x[d] = {batch.X[i * 3], batch.X[i * 3 + 1], batch.X[i * 3 + 2], 1.0};
    for (std::size_t a = 0; a < d; ++a) {
      for (std::size_t b = 0; b < d; ++b) normal[a][b] += batch.w[i] * x[a] * x[b];
      normal[a][d] += batch.w[i] * x[a] * batch.y[i];
    }
  }
  for (std::size_t k = 0; k < d; ++k) {
    for (std::size_t a = k + 1; a < d; ++a) {
      const double f = normal[a][k] / normal[k][k];
      for (std::size_t b = k; b <= d; ++b) normal[a][b] -= f * normal[k][b];
    }
  }
  double fit[d];
  for (std::size_t k = d; k-- > 0;) {
    double v = normal[k][d];
    for (std::size_t b = k + 1; b < d; ++b) v -= normal[k][b] * fit[b];
    fit[k] = v / normal[k][k];
  }
  double sum = 0.0, squares = 0.0, lo = inf, hi = -inf;
  std::int64_t quadratic = 0;
  double score_sum = 0.0;
  for (std::size_t i = 0; i < batch.rows; ++i) {
    const double r = batch.y[i] - (batch.X[i * 3] * fit[0] + batch.X[i * 3 + 1] * fit[1] +
                                   batch.X[i * 3 + 2] * fit[2] + fit[3]);
    sum += r;
    squares += r * r;
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    quadratic += std::fabs(r) <= 1.5;
    score_sum += std::clamp(r, -1.5, 1.5);
  }
  EXPECT_NEAR(first.residual.min, lo, 1e-10);
  EXPECT_NEAR(first.residual.max, hi, 1e-10);
  EXPECT_NEAR(first.residual.mean, sum / 500.0, 1e-12);
  EXPECT_NEAR(first.residual.l2(), std::sqrt(squares), 1e-10);
  EXPECT_EQ(first.quadratic_rows, quadratic);
  EXPECT_NEAR(first.score.mean, score_sum / 500.0, 1e-12);
  EXPECT_EQ(first.phase, rh::SolvePhase::main);
}

TEST(Trace, RecordsDoNotDependOnTheThreadCount) {
  // Enough rows for several row blocks on the pool (RowBlocks, min_parallel_entries).
  const auto batch = contaminated_batch<double>(3, 20000, 8);
  rh::Config config;
  rh::cpu::Engine one({.threads = 1});
  rh::cpu::Engine four({.threads = 4});
  rh::TraceSink a, b;
  update(one, rh::State<double>::empty(9), batch, config, &a);
  update(four, rh::State<double>::empty(9), batch, config, &b);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t k = 0; k < a.records.size(); ++k) {
    const auto& x = a.records[k];
    const auto& y = b.records[k];
    EXPECT_EQ(x.objective, y.objective);
    EXPECT_EQ(x.step_norm, y.step_norm);
    EXPECT_EQ(x.quadratic_rows, y.quadratic_rows);
    EXPECT_EQ(x.residual.mean, y.residual.mean);
    EXPECT_EQ(x.residual.squared_deviations, y.residual.squared_deviations);
    EXPECT_EQ(x.score.sum_squares, y.score.sum_squares);
  }
}

TEST(Trace, LammRecordsItsDoublingsAndNoNewtonMatrix) {
  const auto batch = contaminated_batch<float>(4, 800, 5);
  rh::Config config;
  config.alpha = 0.05;
  rh::cpu::Engine engine;
  rh::TraceSink sink;
  const auto [state, diag] = update(engine, rh::State<float>::empty(6), batch, config, &sink);
  ASSERT_EQ(static_cast<std::int64_t>(sink.records.size()), diag.n_iter);
  std::int64_t doublings = 0;
  for (const auto& r : sink.records) {
    EXPECT_EQ(r.solver, rh::Solver::lamm);
    EXPECT_TRUE(std::isnan(r.rcond));
    EXPECT_EQ(r.hessian_diagonal.count, 0);
    EXPECT_FALSE(r.search_exhausted);
    doublings += r.halvings;
  }
  EXPECT_EQ(doublings, diag.line_search_halvings);
}

TEST(Trace, ProxNewtonRecordsEveryIteration) {
  const auto batch = contaminated_batch<double>(6, 800, 5);
  rh::Config config;
  config.alpha = 0.05;
  config.l1_solver = rh::L1Solver::prox_newton;
  rh::cpu::Engine engine;
  rh::TraceSink sink;
  const auto [state, diag] = update(engine, rh::State<double>::empty(6), batch, config, &sink);
  EXPECT_EQ(static_cast<std::int64_t>(sink.records.size()), diag.n_iter);
  EXPECT_EQ(sink.records.back().phase, rh::SolvePhase::main);
}

}  // namespace
