// L1-penalized batches: the LAMM solution meets the subgradient optimality conditions.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>
#include <rh/cpu/engine.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/lamm.hpp>
#include <rh/update.hpp>

#include "batch_ops.hpp"
#include "problems.hpp"

namespace {

TEST(Lamm, TwoBatchesMeetTheSubgradientConditions) {
  rh::cpu::Engine engine;
  rh::Config config;
  config.alpha = 0.05;
  config.tol = 1e-12;
  config.max_iter = 20000;
  auto state = rh::State<double>::empty(7);
  for (std::uint64_t b = 0; b < 2; ++b) {
    const auto batch = rh::test::contaminated_batch<double>(40 + b, 400, 6);
    auto [next, diag] =
        engine.update(state, batch.design(), batch.response(), batch.weights(), config);
    EXPECT_TRUE(diag.converged);
    EXPECT_EQ(diag.solver, rh::Solver::lamm);
    EXPECT_TRUE(std::isnan(diag.rcond));  // no Newton system was solved
    EXPECT_EQ(diag.lambda, 0.05);
    const auto g = rh::test::smooth_gradient(state, batch, std::span<const double>(next.coef),
                                             diag.bandwidth, true);
    const double level = (state.effective_weight + 400.0) * config.alpha;
    rh::test::expect_subgradient_conditions(g, next.coef, level, 1e-6 * level);
    EXPECT_EQ(next.previous_lambda, 0.05);
    state = std::move(next);
  }
  // Columns 0 and 3 carry no signal: the penalty zeroes at least one of them.
  EXPECT_TRUE(state.coef[0] == 0.0 || state.coef[3] == 0.0);
}

// Diagnostics::stationarity_step: max_j |G_j| / J_jj over the coefficients of finite positive
// information; NaN without a gradient mapping of the right length.
TEST(Lamm, StationarityStepIsTheLargestNewtonStepAlongACoefficient) {
  const std::vector<double> information = {4, 0, 0, 0, 3, 0, 0, 0, 0};  // J_22 = 0: skipped
  EXPECT_EQ(rh::detail::stationarity_step(std::vector<double>{2, -6, 100},
                                          std::span<const double>(information), 3, false),
            2.0);
  EXPECT_EQ(rh::detail::stationarity_step(std::vector<double>{2, -6, 100},
                                          std::span<const double>(information), 3, true),
            2.0);  // the intercept's information is 0: no pairs
  EXPECT_TRUE(std::isnan(rh::detail::stationarity_step(
      std::vector<double>{}, std::span<const double>(information), 3, false)));
}

// With an intercept, a slope and the intercept also step together: J = [[4, 1.9], [1.9, 1]]
// and G = (0.2, -0.1) give 0.05 and 0.1 alone but (1, -2) as a pair. A column collinear with
// the intercept (determinant 0) counts alone.
TEST(Lamm, StationarityStepPairsEachSlopeWithTheIntercept) {
  const std::vector<double> mapping = {0.2, -0.1};
  const std::vector<double> coupled = {4, 1.9, 1.9, 1};
  EXPECT_NEAR(rh::detail::stationarity_step(mapping, std::span<const double>(coupled), 2, true),
              2.0, 1e-12);
  EXPECT_EQ(rh::detail::stationarity_step(mapping, std::span<const double>(coupled), 2, false),
            0.1);
  const std::vector<double> collinear = {4, 2, 2, 1};
  EXPECT_EQ(rh::detail::stationarity_step(mapping, std::span<const double>(collinear), 2, true),
            0.1);
}

// LAMM's step rule (docs/numerics.md): on standardized columns a converged batch's stationarity
// step is within tol; with one column 1,000 times the others and tol = 1e-4 the rule is met far
// from the minimizer, and the stationarity step says so (the subgradient conditions fail too);
// a Newton batch reports none.
TEST(Lamm, StationarityStepSaysHowFarTheStepRuleStoppedFromTheMinimizer) {
  rh::cpu::Engine engine;
  rh::Config config;
  config.alpha = 0.05;
  config.tol = 1e-8;
  const auto batch = rh::test::contaminated_batch<double>(71, 2000, 6);
  const auto empty = rh::State<double>::empty(7);
  const auto size = [](const std::vector<double>& coef) {
    double largest = 1.0;
    for (const double v : coef) largest = std::max(largest, std::fabs(v));
    return largest;
  };
  auto [fine, fine_diag] =
      engine.update(empty, batch.design(), batch.response(), batch.weights(), config);
  ASSERT_TRUE(fine_diag.converged);
  EXPECT_GT(fine_diag.stationarity_step, 0.0);
  EXPECT_LE(fine_diag.stationarity_step, 2 * *config.tol * size(fine.coef));

  auto scaled = batch;
  for (std::size_t i = 0; i < scaled.rows; ++i) scaled.X[i * 6 + 2] *= 1000.0;
  config.tol = 1e-4;
  auto [short_state, short_diag] =
      engine.update(empty, scaled.design(), scaled.response(), scaled.weights(), config);
  ASSERT_TRUE(short_diag.converged);  // the contract's step rule
  EXPECT_GT(short_diag.stationarity_step, 100 * *config.tol * size(short_state.coef));
  const auto g = rh::test::smooth_gradient(empty, scaled, std::span<const double>(short_state.coef),
                                           short_diag.bandwidth, true);
  const double level = 2000.0 * config.alpha;
  double worst = 0.0;  // the largest violation of the subgradient conditions
  for (std::size_t j = 0; j < 7; ++j) {
    const double beta = short_state.coef[j];
    const double violation = j == 6 ? std::fabs(g[j])
                             : beta != 0.0 ? std::fabs(g[j] + std::copysign(level, beta))
                                           : std::max(0.0, std::fabs(g[j]) - level);
    worst = std::max(worst, violation);
  }
  EXPECT_GT(worst, 1e-2 * level);

  config.alpha = 0.0;
  auto [newton, newton_diag] =
      engine.update(empty, batch.design(), batch.response(), batch.weights(), config);
  EXPECT_TRUE(std::isnan(newton_diag.stationarity_step));
}

// The first phi (contract v4) is the mean diagonal of X~^T diag(w) X~ + J~: a batch of many rows
// starts LAMM on its scale, not tens of doublings below it at phi = 1.
TEST(Lamm, StartsAtTheMeanDiagonalWithoutDoublingsFromOne) {
  rh::cpu::Engine engine;
  rh::Config config;
  config.alpha = 0.02;
  auto state = rh::State<double>::empty(7);
  for (std::uint64_t b = 0; b < 3; ++b) {
    const auto batch = rh::test::contaminated_batch<double>(60 + b, 20000, 6);
    auto [next, diag] =
        engine.update(state, batch.design(), batch.response(), batch.weights(), config);
    EXPECT_TRUE(diag.converged);
    // From phi = 1 a batch of 20,000 rows needs about log2(20,000) = 14 doublings per solve.
    EXPECT_LE(diag.line_search_halvings, 2) << "batch " << b;
    state = std::move(next);
  }
}

// diagonal_mean() formed in the first evaluation pass and in a pass of its own: the same bits,
// and the float64 mean of the diagonal of X~^T diag(w) X~ + J~ to rounding.
template <class T>
void expect_diagonal_mean(double tolerance) {
  auto batch = rh::test::contaminated_batch<T>(93, 5000, 7);
  for (std::size_t i = 0; i < batch.rows; ++i) batch.w[i] = static_cast<T>(0.5 + (i % 4));
  auto previous = rh::State<T>::empty(8);
  previous.batch_count = 1;
  previous.effective_weight = 100.0;
  for (std::size_t j = 0; j < 8; ++j) {
    for (std::size_t k = 0; k < 8; ++k) previous.information[j * 8 + k] = static_cast<T>(j == k ? 3.0 + j : 0.5);
  }
  double expected = 0.0;
  for (std::size_t i = 0; i < batch.rows; ++i) {
    const auto w = static_cast<double>(batch.w[i]);
    expected += w;  // the intercept column
    for (std::size_t j = 0; j < 7; ++j) {
      const auto x = static_cast<double>(batch.X[i * 7 + j]);
      expected += w * x * x;
    }
  }
  for (std::size_t j = 0; j < 8; ++j) expected += static_cast<double>(previous.information[j * 8 + j]);
  expected /= 8.0;

  rh::cpu::ThreadPool pool(2);
  rh::cpu::Workspace<T> space;
  space.reserve(8, batch.rows, rh::cpu::RowBlocks(batch.rows).count());
  const std::vector<T> beta(8, T{0});
  double in_pass = 0.0;
  {
    rh::cpu::BatchOps<T> ops(space, pool, previous.view(), batch.design(), batch.response(),
                             batch.weights(), true, rh::test::quiet_profiler(), false,
                             rh::cpu::GramStrategy::incremental, rh::cpu::default_chunk_bytes,
                             /*diagonal_in_pass=*/true);
    ops.evaluate(beta, 1.0);
    in_pass = ops.diagonal_mean();
  }
  rh::cpu::BatchOps<T> own(space, pool, previous.view(), batch.design(), batch.response(),
                           batch.weights(), true, rh::test::quiet_profiler());
  const double own_pass = own.diagonal_mean();
  EXPECT_EQ(in_pass, own_pass);
  EXPECT_NEAR(in_pass, expected, tolerance * expected);
}

TEST(Lamm, DiagonalMeanInThePassOrItsOwnInFloat64) { expect_diagonal_mean<double>(1e-13); }
TEST(Lamm, DiagonalMeanInThePassOrItsOwnInFloat32) { expect_diagonal_mean<float>(1e-13); }

// When LAMM asks an engine to anchor (rh::detail::AnchorSchedule): a later batch's first step with
// its own length; otherwise with the geometric tail's reach (the contraction counted at most
// 0.75); after a refusal only once that reach has halved; while the engine answers that the
// point is expanded, at every step (so that a point whose path outran its anchor anchors anew).
TEST(Lamm, AnchorScheduleAsksWhereTheRestOfThePathIsShort) {
  rh::detail::AnchorSchedule later(/*near_start=*/true);
  EXPECT_EQ(later.factor(0, 0.3), 1.0);
  later.asked(0.3, 1.0, /*expanded=*/true);
  later.accepted(0.3);
  EXPECT_DOUBLE_EQ(later.factor(1, 0.1), 1.5) << "expanded: asked again, 0.1 / (1 - 1/3)";

  rh::detail::AnchorSchedule first(/*near_start=*/false);
  EXPECT_EQ(first.factor(0, 1.0), 0.0) << "a first step from far away";
  first.accepted(1.0);
  EXPECT_DOUBLE_EQ(first.factor(1, 0.8), 4.0) << "contraction 0.8 counted as 0.75";
  first.asked(0.8, 4.0, /*expanded=*/false);  // declined at a reach of 3.2
  first.accepted(0.8);
  EXPECT_DOUBLE_EQ(first.factor(2, 0.4), 2.0) << "reach 0.4 / (1 - 1/2) = 0.8 <= 3.2 / 2";
  first.asked(0.4, 2.0, /*expanded=*/false);  // declined at 0.8
  first.accepted(0.4);
  EXPECT_EQ(first.factor(3, 0.25), 0.0) << "reach 0.25 / (1 - 0.625) = 0.67 > 0.8 / 2";
  first.accepted(0.25);
  EXPECT_DOUBLE_EQ(first.factor(4, 0.05), 1.25) << "reach 0.0625 <= 0.4";
  first.asked(0.05, 1.25, /*expanded=*/true);
  first.accepted(0.05);
  EXPECT_DOUBLE_EQ(first.factor(5, 0.04), 4.0) << "expanded: asked at every step";
}

}  // namespace
