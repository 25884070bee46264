// Unpenalized batches: the Newton solution zeroes the gradient of the batch objective.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>
#include <rh/bricks/bricks.hpp>
#include <rh/cpu/engine.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/newton.hpp>

#include "batch_ops.hpp"
#include "problems.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

namespace {

template <class T>
rh::State<T> run_stream(rh::cpu::Engine& engine, const rh::State<T>& start,
                        const rh::test::Batch<T>& batch, const rh::Config& config,
                        rh::Diagnostics* diagnostics = nullptr) {
  auto [next, diag] =
      engine.update(start, batch.design(), batch.response(), batch.weights(), config);
  if (diagnostics) *diagnostics = diag;
  return next;
}

TEST(Newton, FirstBatchSolutionHasZeroGradient) {
  rh::cpu::Engine engine;
  const auto batch = rh::test::contaminated_batch<double>(7, 500, 5);
  const rh::Config config;
  const auto empty = rh::State<double>::empty(6);
  rh::Diagnostics diag;
  const auto next = run_stream(engine, empty, batch, config, &diag);

  EXPECT_TRUE(diag.converged);
  EXPECT_EQ(diag.solver, rh::Solver::cholesky);
  EXPECT_GT(diag.rcond, 0.0);
  EXPECT_LE(diag.rcond, 1.0);
  EXPECT_NEAR(diag.bandwidth, config.epsilon * next.scale, 1e-15 * diag.bandwidth);
  const auto g = rh::test::smooth_gradient(empty, batch, std::span<const double>(next.coef),
                                           diag.bandwidth, true);
  EXPECT_LT(rh::test::max_abs(g), 1e-8 * 500);
}

TEST(Newton, LaterBatchesSolveTheRenewableObjective) {
  rh::cpu::Engine engine;
  const rh::Config config;
  auto state = rh::State<double>::empty(5);
  for (std::uint64_t b = 0; b < 3; ++b) {
    const auto batch = rh::test::contaminated_batch<double>(100 + b, 300, 4);
    rh::Diagnostics diag;
    auto next = run_stream(engine, state, batch, config, &diag);
    EXPECT_TRUE(diag.converged);
    const auto g = rh::test::smooth_gradient(state, batch, std::span<const double>(next.coef),
                                             diag.bandwidth, true);
    EXPECT_LT(rh::test::max_abs(g), 1e-8 * 300 * static_cast<double>(b + 1));
    EXPECT_EQ(next.batch_count, static_cast<std::int64_t>(b + 1));
    EXPECT_EQ(next.n_samples_seen, static_cast<std::int64_t>(300 * (b + 1)));
    EXPECT_DOUBLE_EQ(next.effective_weight, 300.0 * static_cast<double>(b + 1));
    state = std::move(next);
  }
  // The information matrix is exactly symmetric.
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      EXPECT_EQ(state.information[i * 5 + j], state.information[j * 5 + i]);
    }
  }
}

TEST(Newton, RankDeficientDesignTakesSvdAndSplitsADuplicatedColumnEvenly) {
  auto batch = rh::test::contaminated_batch<double>(11, 200, 3);
  for (std::size_t i = 0; i < batch.rows; ++i) batch.X[i * 3 + 2] = batch.X[i * 3 + 1];
  rh::cpu::Engine engine;
  rh::Diagnostics diag;
  const auto next = run_stream(engine, rh::State<double>::empty(4), batch, rh::Config{}, &diag);
  EXPECT_EQ(diag.solver, rh::Solver::svd);
  EXPECT_EQ(diag.rcond, 0.0);
  EXPECT_NEAR(next.coef[1], next.coef[2], 1e-9);
}

// A ridge damps only a Newton matrix that is regular without it: a singular one (here a column
// duplicated) takes the minimum-norm step, exactly as without the ridge, instead of a damped
// step whose rounding the ridge multiplies by 1/ridge in the direction no row determines.
TEST(Newton, RidgeLeavesASingularSystemToTheMinimumNormStep) {
  auto batch = rh::test::contaminated_batch<double>(11, 200, 3);
  for (std::size_t i = 0; i < batch.rows; ++i) batch.X[i * 3 + 2] = batch.X[i * 3 + 1];
  rh::cpu::Engine engine;
  rh::Config ridged;
  ridged.ridge = 1e-8;
  rh::Diagnostics plain_diag;
  rh::Diagnostics ridged_diag;
  const auto plain =
      run_stream(engine, rh::State<double>::empty(4), batch, rh::Config{}, &plain_diag);
  const auto damped = run_stream(engine, rh::State<double>::empty(4), batch, ridged, &ridged_diag);
  EXPECT_EQ(ridged_diag.solver, rh::Solver::svd);
  EXPECT_EQ(ridged_diag.n_iter, plain_diag.n_iter);
  EXPECT_EQ(damped.coef, plain.coef);
}

// On a regular system the ridge damps the steps and leaves the minimizer where it was.
TEST(Newton, RidgeDampsARegularSystemWithoutMovingTheMinimizer) {
  const auto batch = rh::test::contaminated_batch<double>(7, 500, 5);
  rh::cpu::Engine engine;
  rh::Config ridged;
  ridged.ridge = 50.0;
  rh::Diagnostics diag;
  const auto plain = run_stream(engine, rh::State<double>::empty(6), batch, rh::Config{});
  const auto damped = run_stream(engine, rh::State<double>::empty(6), batch, ridged, &diag);
  EXPECT_EQ(diag.solver, rh::Solver::cholesky);
  EXPECT_NE(damped.coef, plain.coef);  // another path ...
  for (std::size_t j = 0; j < 6; ++j) {
    EXPECT_NEAR(damped.coef[j], plain.coef[j], 1e-7);  // ... to the same minimizer
  }
}

// Columns in very different units (contract v2): cond(X~^T X~) ~ 1e18, which without the
// ladder's equilibration sends the Newton system to the SVD rung, whose cut-off drops the 1e-3
// column. Equilibrated, Cholesky solves it and the fit is the least-squares one (tau so large
// that every residual is in the quadratic zone).
TEST(Newton, BadlyScaledColumnsTakeCholeskyAndRecoverTheLeastSquaresFit) {
  constexpr std::array<double, 6> units = {1e-3, 1, 1e2, 1e4, 1e6, 1e6};
  constexpr std::size_t p = units.size();
  constexpr std::size_t rows = 200;
  std::mt19937_64 rng(23);
  std::normal_distribution<double> normal;
  rh::test::Batch<double> batch{rows, p, std::vector<double>(rows * p), std::vector<double>(rows),
                                std::vector<double>(rows, 1.0)};
  for (std::size_t i = 0; i < rows; ++i) {
    double unscaled_sum = 0.0;  // y = Z 1 + noise, X = Z diag(units): coef_j = 1 / units_j
    for (std::size_t j = 0; j < p; ++j) {
      const double z = normal(rng);
      batch.X[i * p + j] = z * units[j];
      unscaled_sum += z;
    }
    batch.y[i] = unscaled_sum + 1e-8 * normal(rng);
  }
  rh::Config config;
  config.tau = 1e9;
  rh::cpu::Engine engine;
  rh::Diagnostics diag;
  const auto next = run_stream(engine, rh::State<double>::empty(p + 1), batch, config, &diag);
  EXPECT_TRUE(diag.converged);
  EXPECT_EQ(diag.solver, rh::Solver::cholesky);
  EXPECT_TRUE(std::isfinite(diag.rcond));
  EXPECT_GT(diag.rcond, 0.0);
  for (std::size_t j = 0; j < p; ++j) {
    EXPECT_NEAR(next.coef[j] * units[j], 1.0, 1e-6) << "column " << j;
  }
  EXPECT_NEAR(next.coef[p], 0.0, 1e-6);  // no intercept in the data
}

TEST(Newton, WithoutInterceptAndWithFixedTau) {
  const auto batch = rh::test::contaminated_batch<double>(5, 400, 3);
  rh::Config config;
  config.fit_intercept = false;
  config.tau = 2.0;
  rh::cpu::Engine engine;
  rh::Diagnostics diag;
  const auto empty = rh::State<double>::empty(3);
  const auto next = run_stream(engine, empty, batch, config, &diag);
  EXPECT_EQ(diag.bandwidth, 2.0);
  EXPECT_DOUBLE_EQ(next.scale, 2.0 / config.epsilon);
  const auto g =
      rh::test::smooth_gradient(empty, batch, std::span<const double>(next.coef), 2.0, false);
  EXPECT_LT(rh::test::max_abs(g), 1e-8 * 400);
}

TEST(Newton, MaxIterStopsWithoutConvergenceAndKeepsTheIterate) {
  const auto batch = rh::test::contaminated_batch<double>(3, 300, 4);
  rh::Config config;
  config.max_iter = 1;
  rh::cpu::Engine engine;
  rh::Diagnostics diag;
  const auto next = run_stream(engine, rh::State<double>::empty(5), batch, config, &diag);
  EXPECT_FALSE(diag.converged);
  EXPECT_EQ(diag.n_iter, 2);  // one iteration in each of the two first-batch solves
  for (double c : next.coef) EXPECT_TRUE(std::isfinite(c));
}

// A negligible Newton step is taken without a search, unless it moves no coefficient by more than
// rounding_step_units units in its own last place: such a step leaves beta where it is (the solve
// has converged either way), so the final point is the one last evaluated. Per coefficient: a
// small coefficient beside a large one takes a step far below the large one's rounding.
template <class T>
void expect_negligible_steps() {
  const auto batch = rh::test::contaminated_batch<T>(5, 200, 3);
  const auto empty = rh::State<T>::empty(4);
  rh::cpu::ThreadPool pool(1);
  rh::cpu::Workspace<T> space;
  space.reserve(4, batch.rows, rh::cpu::RowBlocks(batch.rows).count());
  rh::bricks::Options options;
  options.sync_mode = rh::bricks::SyncMode::off;
  options.track_page_faults = false;
  rh::bricks::Profiler off(rh::engine_brick_table(), options);
  rh::cpu::BatchOps<T> ops(space, pool, empty.view(), batch.design(), batch.response(),
                           batch.weights(), true, off);
  const double tol = rh::resolved_tol<T>(rh::Config{});
  const T eps = std::numeric_limits<T>::epsilon();
  const std::vector<T> start = {T(1e-3), T(-2), T(0.5), T(0.25)};
  std::vector<T> beta = start;
  std::vector<T> full(4);
  // Each coefficient moved by a few units of its own last place: not taken.
  std::vector<T> step = {T(4) * eps * start[0], T(8) * eps * start[1], -eps * start[2], T(0)};
  EXPECT_TRUE(rh::detail::take_negligible_newton_step(ops, beta, step, full, tol));
  EXPECT_EQ(beta, start);
  EXPECT_NE(full, start);
  // Within the largest coefficient's rounding, but 64 units of beta_0's: taken.
  step = {T(64) * eps * start[0], T(0), T(0), T(0)};
  EXPECT_TRUE(rh::detail::take_negligible_newton_step(ops, beta, step, full, tol));
  EXPECT_EQ(beta[0], start[0] + step[0]);
  EXPECT_NE(beta[0], start[0]);
  // A coefficient at 0 takes any non-zero step.
  beta = {T(0), T(-2), T(0.5), T(0.25)};
  step = {std::numeric_limits<T>::denorm_min(), T(0), T(0), T(0)};
  EXPECT_TRUE(rh::detail::take_negligible_newton_step(ops, beta, step, full, tol));
  EXPECT_EQ(beta[0], step[0]);
  // Not negligible: beta untouched, the search decides.
  beta = start;
  step = {T(0), T(0.1), T(0), T(0)};
  EXPECT_FALSE(rh::detail::take_negligible_newton_step(ops, beta, step, full, tol));
  EXPECT_EQ(beta, start);
}

TEST(Newton, AStepAtBetasRoundingIsNotTaken) {
  expect_negligible_steps<double>();
  expect_negligible_steps<float>();
}

}  // namespace

