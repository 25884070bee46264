// Properties of whole updates a user relies on: frequency weights, float32, transactions,
// determinism, and reuse of one engine across differently shaped batches.

#include <gtest/gtest.h>

#include <rh/cpu/engine.hpp>
#include <rh/error.hpp>
#include <thread>

#include "problems.hpp"

namespace {

using rh::test::Batch;
using rh::test::contaminated_batch;
using rh::test::update;

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rtol) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(std::fabs(a[i] - b[i]), rtol * std::max(1.0, std::fabs(b[i]))) << "entry " << i;
  }
}

TEST(Engine, WeightTwoRowEqualsADuplicatedRow) {
  const auto base = contaminated_batch<double>(21, 120, 3);
  // Rows 0..9 weighted by 2, and copies of them appended to the duplicated batch.
  auto [weighted, duplicated] = rh::test::weighted_twice_and_duplicated(base, 10);
  weighted.w[20] = 0.0;  // and a zero weight is a dropped row
  duplicated.w[20] = 0.0;

  rh::cpu::Engine engine;
  const rh::Config config;
  auto [a, diag_a] = update(engine, rh::State<double>::empty(4), weighted, config);
  auto [b, diag_b] = update(engine, rh::State<double>::empty(4), duplicated, config);
  expect_close(a.coef, b.coef, 1e-9);
  expect_close(a.information, b.information, 1e-9);
  EXPECT_NEAR(a.scale, b.scale, 1e-12);
  EXPECT_NEAR(diag_a.objective, diag_b.objective, 1e-9 * std::fabs(diag_b.objective));
  EXPECT_EQ(a.effective_weight, b.effective_weight);
}

TEST(Engine, Float32ComputesInFloat32AndAgreesWithFloat64) {
  const auto batch64 = contaminated_batch<double>(31, 400, 4);
  Batch<float> batch32{batch64.rows, batch64.features, {}, {}, {}};
  batch32.X.assign(batch64.X.begin(), batch64.X.end());
  batch32.y.assign(batch64.y.begin(), batch64.y.end());
  batch32.w.assign(batch64.w.begin(), batch64.w.end());

  rh::cpu::Engine engine;
  const rh::Config config;
  const auto [s64, d64] = update(engine, rh::State<double>::empty(5), batch64, config);
  const auto [s32, d32] = update(engine, rh::State<float>::empty(5), batch32, config);
  EXPECT_TRUE(d32.converged);
  for (std::size_t j = 0; j < 5; ++j) {
    EXPECT_NEAR(s32.coef[j], s64.coef[j], 2e-3 * std::max(1.0, std::fabs(s64.coef[j])));
  }
  EXPECT_NEAR(d32.bandwidth, d64.bandwidth, 2e-3 * d64.bandwidth);
}

TEST(Engine, AFailedUpdateChangesNothing) {
  const auto first = contaminated_batch<double>(41, 200, 3);
  const auto second = contaminated_batch<double>(42, 200, 3);
  auto bad = second;
  bad.y[7] = std::numeric_limits<double>::quiet_NaN();
  const rh::Config config;

  rh::cpu::Engine engine;
  const auto [state, diag] = update(engine, rh::State<double>::empty(4), first, config);
  const rh::State<double> snapshot = state;
  EXPECT_THROW(update(engine, state, bad, config), rh::InvalidArgument);
  EXPECT_EQ(state.coef, snapshot.coef);
  EXPECT_EQ(state.information, snapshot.information);
  EXPECT_EQ(state.batch_count, snapshot.batch_count);
  EXPECT_EQ(state.scale, snapshot.scale);

  // The engine is as good as new after the failure.
  const auto [after_failure, d1] = update(engine, state, second, config);
  rh::cpu::Engine fresh;
  const auto [reference, d2] = update(fresh, state, second, config);
  EXPECT_EQ(after_failure.coef, reference.coef);
  EXPECT_EQ(after_failure.information, reference.information);
}

TEST(Engine, ResultsDoNotDependOnTheThreadCount) {
  // Enough rows for several row blocks, and enough entries to run them on the pool
  // (BatchOps::min_parallel_entries).
  const auto batch = contaminated_batch<double>(51, 24000, 6);
  const rh::Config config;
  rh::cpu::Engine one({.threads = 1});
  rh::cpu::Engine four({.threads = 4});
  EXPECT_EQ(four.threads(), 4u);
  const auto [a, da] = update(one, rh::State<double>::empty(7), batch, config);
  const auto [b, db] = update(four, rh::State<double>::empty(7), batch, config);
  EXPECT_EQ(a.coef, b.coef);  // bitwise
  EXPECT_EQ(a.information, b.information);
  EXPECT_EQ(da.objective, db.objective);
  EXPECT_EQ(da.n_iter, db.n_iter);
}

TEST(Engine, ConcurrentCallsOnOneEngineAreSerialized) {
  const auto first = contaminated_batch<double>(81, 3000, 5);
  const auto second = contaminated_batch<double>(82, 5000, 5);
  const rh::Config config;
  rh::cpu::Engine reference_engine;
  const auto expected_first = update(reference_engine, rh::State<double>::empty(6), first, config);
  const auto expected_second =
      update(reference_engine, rh::State<double>::empty(6), second, config);

  rh::cpu::Engine shared({.threads = 2});
  std::pair<rh::State<double>, rh::Diagnostics> got_first;
  std::pair<rh::State<double>, rh::Diagnostics> got_second;
  std::thread other(
      [&] { got_first = update(shared, rh::State<double>::empty(6), first, config); });
  got_second = update(shared, rh::State<double>::empty(6), second, config);
  other.join();
  EXPECT_EQ(got_first.first.coef, expected_first.first.coef);
  EXPECT_EQ(got_second.first.coef, expected_second.first.coef);
  EXPECT_EQ(got_second.first.information, expected_second.first.information);
}

TEST(Engine, OneEngineServesChangingShapesAndDtypes) {
  rh::cpu::Engine shared;
  const rh::Config config;
  const auto small = contaminated_batch<double>(61, 50, 2);
  const auto large = contaminated_batch<double>(62, 5000, 9);
  const auto medium = contaminated_batch<double>(63, 700, 2);
  Batch<float> single{50, 2, {}, {}, {}};
  single.X.assign(small.X.begin(), small.X.end());
  single.y.assign(small.y.begin(), small.y.end());
  single.w.assign(small.w.begin(), small.w.end());

  auto s1 = update(shared, rh::State<double>::empty(3), small, config).first;
  update(shared, rh::State<double>::empty(10), large, config);
  update(shared, rh::State<float>::empty(3), single, config);
  const auto s2 = update(shared, s1, medium, config).first;

  rh::cpu::Engine fresh;
  const auto r1 = update(fresh, rh::State<double>::empty(3), small, config).first;
  const auto r2 = update(fresh, r1, medium, config).first;
  EXPECT_EQ(s1.coef, r1.coef);
  EXPECT_EQ(s2.coef, r2.coef);
  EXPECT_EQ(s2.information, r2.information);
}

TEST(Engine, ObjectiveIsQAtTheSolution) {
  const auto batch = contaminated_batch<double>(71, 150, 2);
  rh::cpu::Engine engine;
  const auto [next, diag] = update(engine, rh::State<double>::empty(3), batch, rh::Config{});
  double q = 0.0;
  for (std::size_t i = 0; i < batch.rows; ++i) {
    const double r = batch.y[i] - next.coef[2] - batch.X[2 * i] * next.coef[0] -
                     batch.X[2 * i + 1] * next.coef[1];
    q += batch.w[i] * rh::huber_rho(r, diag.bandwidth);
  }
  EXPECT_NEAR(diag.objective, q, 1e-10 * q);
}

// The information update reuses the Gram maintained through the solve (corrected for curvature
// flips, not recomputed): it must still be J~ + X~^T diag(w c(r)) X~ at the final coefficients,
// exactly symmetric. Batches large enough for the incremental path, several per stream.
TEST(Engine, InformationIsTheGramAtTheFinalCoefficients) {
  constexpr std::size_t p = 5;
  constexpr std::size_t d = p + 1;
  rh::cpu::Engine engine;
  auto state = rh::State<double>::empty(d);
  for (std::uint64_t b = 0; b < 3; ++b) {
    auto batch = contaminated_batch<double>(80 + b, 6000, p, 0.2);
    for (std::size_t i = 0; i < batch.rows; i += 7) batch.w[i] = 3.0;  // non-unit weights
    const auto [next, diag] = update(engine, state, batch, rh::Config{});
    std::vector<double> gram(d * d, 0.0);
    for (std::size_t i = 0; i < batch.rows; ++i) {
      const double* x = batch.X.data() + i * p;
      double r = batch.y[i] - next.coef[p];
      for (std::size_t j = 0; j < p; ++j) r -= x[j] * next.coef[j];
      // A row this close to tau could be classified either way by rounding.
      ASSERT_GT(std::fabs(std::fabs(r) - diag.bandwidth), 1e-9 * diag.bandwidth);
      if (std::fabs(r) > diag.bandwidth) continue;
      for (std::size_t j = 0; j < d; ++j) {
        for (std::size_t k = 0; k < d; ++k) {
          gram[j * d + k] += batch.w[i] * (j < p ? x[j] : 1.0) * (k < p ? x[k] : 1.0);
        }
      }
    }
    std::vector<double> expected(d * d);
    for (std::size_t k = 0; k < d * d; ++k) expected[k] = state.information[k] + gram[k];
    expect_close(next.information, expected, 1e-10);
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t k = 0; k < j; ++k) {
        EXPECT_EQ(next.information[j * d + k], next.information[k * d + j]);
      }
    }
    state = next;
  }
}

}  // namespace
