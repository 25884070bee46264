// The CPU engine's fused passes (rh::FusedTrialOps: several LAMM trials in one pass, a trial
// step with the evaluation at the point after it, an evaluation with its Gram) change the cost of a solve, not its result:
// the same batches solved through the plain one-call-at-a-time interface agree bit for bit.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <rh/bricks/bricks.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/update.hpp>

#include "batch_ops.hpp"
#include "problems.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

namespace {

namespace rb = rh::bricks;

// BatchOps with the fused calls made private: the drivers see a plain SolverOps.
template <class T>
class OneCallAtATime : public rh::cpu::BatchOps<T> {
 public:
  using rh::cpu::BatchOps<T>::BatchOps;

 private:
  using rh::cpu::BatchOps<T>::objective_changes;
  using rh::cpu::BatchOps<T>::project_and_prepare;
  using rh::cpu::BatchOps<T>::evaluate_with_gram;
};

static_assert(rh::FusedTrialOps<rh::cpu::BatchOps<double>>);
static_assert(rh::SolverOps<OneCallAtATime<double>>);
static_assert(!rh::FusedTrialOps<OneCallAtATime<double>>);

// A stream of batches through renewable_update with Ops type O; every state and diagnostic.
template <template <class> class O, class T>
struct Run {
  std::vector<rh::State<T>> states;
  std::vector<rh::Diagnostics> diagnostics;
};

// A batch whose columns share one factor: the curvature of f lies along it, about d times the
// mean of its diagonal, so LAMM's first phi (that mean) needs a few doublings.
template <class T>
rh::test::Batch<T> correlated_batch(std::uint64_t seed, std::size_t rows, std::size_t features) {
  auto batch = rh::test::contaminated_batch<T>(seed, rows, features);
  for (std::size_t i = 0; i < rows; ++i) {
    T* row = batch.X.data() + i * features;
    for (std::size_t j = 1; j < features; ++j) row[j] = row[0] + T{0.05} * row[j];
  }
  return batch;
}

template <template <class> class O, class T>
Run<O, T> stream(const rh::Config& config, std::size_t rows, std::size_t features,
                 std::size_t threads, bool correlated) {
  rh::cpu::ThreadPool pool(threads);
  rh::cpu::Workspace<T> workspace;
  Run<O, T> run;
  auto state = rh::State<T>::empty(features + (config.fit_intercept ? 1 : 0));
  for (std::uint64_t b = 0; b < 3; ++b) {
    const auto batch = correlated ? correlated_batch<T>(70 + b, rows, features)
                                  : rh::test::contaminated_batch<T>(70 + b, rows, features);
    const rh::cpu::RowBlocks blocks(rows);
    workspace.reserve(state.dim(), rows, blocks.count());
    const rh::StateView<T> previous = state.view();
    std::optional<O<T>> ops;
    ops.emplace(workspace, pool, previous, batch.design(), batch.response(), batch.weights(),
                config.fit_intercept, rh::test::quiet_profiler());
    auto [next, diag] = rh::renewable_update(*ops, previous, config);
    run.states.push_back(next);
    run.diagnostics.push_back(diag);
    state = std::move(next);
  }
  return run;
}

// Runs the stream both ways, expects every state and diagnostic equal; returns the fused run.
template <class T>
Run<rh::cpu::BatchOps, T> expect_identical(const rh::Config& config, std::size_t rows,
                                           std::size_t features, bool correlated = false) {
  const auto fused = stream<rh::cpu::BatchOps, T>(config, rows, features, 2, correlated);
  const auto plain = stream<OneCallAtATime, T>(config, rows, features, 1, correlated);
  for (std::size_t b = 0; b < fused.states.size(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    EXPECT_EQ(fused.states[b].coef, plain.states[b].coef);
    EXPECT_EQ(fused.states[b].information, plain.states[b].information);
    EXPECT_EQ(fused.states[b].scale, plain.states[b].scale);
    EXPECT_EQ(fused.diagnostics[b].n_iter, plain.diagnostics[b].n_iter);
    EXPECT_EQ(fused.diagnostics[b].line_search_halvings, plain.diagnostics[b].line_search_halvings);
    EXPECT_EQ(fused.diagnostics[b].objective, plain.diagnostics[b].objective);
    EXPECT_EQ(fused.diagnostics[b].converged, plain.diagnostics[b].converged);
    // Bit for bit too, or NaN on both sides (a penalized batch solves no Newton system).
    const double fused_rcond = fused.diagnostics[b].rcond;
    const double plain_rcond = plain.diagnostics[b].rcond;
    EXPECT_TRUE(fused_rcond == plain_rcond || (std::isnan(fused_rcond) && std::isnan(plain_rcond)))
        << fused_rcond << " vs " << plain_rcond;
  }
  return fused;
}

rh::Config l1_config() {
  rh::Config config;
  config.alpha = 0.02;
  config.max_iter = 5000;
  return config;
}

// 5,000 rows: two row blocks of uneven chunks. On correlated columns LAMM's first phi is below
// what majorizes f, so refused trials are followed by a fused pass of several.
TEST(FusedTrials, LammAgreesBitForBitInFloat64) {
  expect_identical<double>(l1_config(), 5000, 9);
  const auto run = expect_identical<double>(l1_config(), 5000, 9, /*correlated=*/true);
  EXPECT_GE(run.diagnostics[0].line_search_halvings, 2);
}

TEST(FusedTrials, LammAgreesBitForBitInFloat32) {
  expect_identical<float>(l1_config(), 5000, 9);
  expect_identical<float>(l1_config(), 5000, 9, /*correlated=*/true);
}

TEST(FusedTrials, LammWithoutInterceptAgreesBitForBit) {
  auto config = l1_config();
  config.fit_intercept = false;
  expect_identical<double>(config, 3000, 5);
}

TEST(FusedTrials, NewtonAgreesBitForBit) {
  expect_identical<double>(rh::Config{}, 5000, 9);
  expect_identical<float>(rh::Config{}, 5000, 9);
  // Enough entries for the fused side's blocks to run on its pool (BatchOps::min_parallel_entries).
  expect_identical<double>(rh::Config{}, 16000, 9);
}

// An evaluation at beta + s right after s was projected takes its residual as r(beta) - X~ s
// (BatchOps::ResidualSource::step) and one at the point of residuals_to_host takes that
// residual; both must match a fresh evaluation's product y - X~ beta to rounding.
template <class T>
void expect_reused_residuals_match_fresh_ones(double tolerance) {
  const auto batch = rh::test::contaminated_batch<T>(90, 5000, 7);
  const auto empty = rh::State<T>::empty(8);
  const rh::StateView<T> previous = empty.view();
  rh::cpu::ThreadPool pool(2);
  rh::cpu::Workspace<T> reused_space;
  rh::cpu::Workspace<T> fresh_space;
  const rh::cpu::RowBlocks blocks(batch.rows);
  reused_space.reserve(8, batch.rows, blocks.count());
  fresh_space.reserve(8, batch.rows, blocks.count());
  rh::cpu::BatchOps<T> reused(reused_space, pool, previous, batch.design(), batch.response(),
                              batch.weights(), true, rh::test::quiet_profiler());
  const std::vector<T> start = {0.5, -1, 2, 0, 0.25, -0.75, 1.5, 0.1};
  std::vector<T> step = {0.01, 0.2, -0.3, 0.05, -0.02, 0.07, -0.11, 0.3};
  std::vector<T> host(batch.rows);
  reused.residuals_to_host(start, host);
  reused.evaluate(start, 1.5);  // ResidualSource::known
  std::vector<T> gradient_at_start(8);
  reused.gradient(gradient_at_start);
  const double objective_at_start = reused.objective(0.0);
  reused.project(step);
  auto next = start;
  for (std::size_t j = 0; j < 8; ++j) next[j] += step[j];
  reused.evaluate(next, 1.5);  // ResidualSource::step
  std::vector<T> gradient_at_next(8);
  reused.gradient(gradient_at_next);
  const double objective_at_next = reused.objective(0.0);

  for (const auto& [point, gradient, objective] :
       {std::tuple{start, gradient_at_start, objective_at_start},
        std::tuple{next, gradient_at_next, objective_at_next}}) {
    rh::cpu::BatchOps<T> fresh(fresh_space, pool, previous, batch.design(), batch.response(),
                               batch.weights(), true, rh::test::quiet_profiler());
    fresh.evaluate(point, 1.5);  // ResidualSource::product
    std::vector<T> expected(8);
    fresh.gradient(expected);
    EXPECT_NEAR(objective, fresh.objective(0.0), tolerance * std::fabs(fresh.objective(0.0)));
    for (std::size_t j = 0; j < 8; ++j) {
      EXPECT_NEAR(gradient[j], expected[j], tolerance * std::max(1.0, std::fabs(double(expected[j]))));
    }
  }
}

// An evaluation at the point and bandwidth of the last one (the driver's final evaluation when the
// last Newton step rounded away) skips its pass: ws_.point is that evaluation already. It must
// give the same bits as a fresh one, and must not be taken after residuals_to_host overwrote
// the point's residual, nor at another bandwidth.
template <class T>
void expect_repeated_evaluation_matches_fresh_one() {
  const auto batch = rh::test::contaminated_batch<T>(91, 5000, 7);
  const auto empty = rh::State<T>::empty(8);
  const rh::StateView<T> previous = empty.view();
  rh::cpu::ThreadPool pool(2);
  rh::cpu::Workspace<T> space;
  rh::cpu::Workspace<T> fresh_space;
  const rh::cpu::RowBlocks blocks(batch.rows);
  space.reserve(8, batch.rows, blocks.count());
  fresh_space.reserve(8, batch.rows, blocks.count());
  rb::Options options;
  options.sync_mode = rb::SyncMode::immediate;
  options.track_page_faults = false;
  rb::Profiler prof(rh::engine_brick_table(), options);
  const auto huber_calls = [&] {
    return prof.stats(static_cast<rb::BrickId>(rh::EngineBrick::huber)).count;
  };
  rh::cpu::BatchOps<T> ops(space, pool, previous, batch.design(), batch.response(),
                           batch.weights(), true, prof);
  const std::vector<T> start = {0.5, -1, 2, 0, 0.25, -0.75, 1.5, 0.1};
  const std::vector<T> other = {0.4, -1, 2, 0.1, 0.25, -0.7, 1.5, 0.1};
  const std::vector<T> step = {0.01, 0.2, -0.3, 0.05, -0.02, 0.07, -0.11, 0.3};
  std::vector<T> host(batch.rows);
  struct Seen {
    std::vector<T> gradient;
    double objective;
    double change;
    bool operator==(const Seen&) const = default;
  };
  const auto look = [&](rh::cpu::BatchOps<T>& o) {
    Seen seen{std::vector<T>(8), o.objective(0.0), 0.0};
    o.gradient(seen.gradient);
    o.project(step);  // reads the point's residual
    seen.change = o.objective_change(step, 0.5);
    return seen;
  };
  const auto fresh = [&](const std::vector<T>& point, double tau) {
    rh::cpu::BatchOps<T> f(fresh_space, pool, previous, batch.design(), batch.response(),
                           batch.weights(), true, rh::test::quiet_profiler());
    f.residuals_to_host(point, host);
    f.evaluate_with_gram(point, tau);
    return look(f);
  };
  ops.residuals_to_host(start, host);
  ops.evaluate_with_gram(start, 1.5);
  ops.form_hessian(0.0);
  const Seen first = look(ops);
  EXPECT_EQ(first, fresh(start, 1.5));
  auto calls = huber_calls();
  ops.evaluate_with_gram(start, 1.5);  // skipped: the same point and bandwidth, the Gram kept
  EXPECT_EQ(huber_calls(), calls);
  EXPECT_EQ(look(ops), first);
  ops.evaluate(start, 2.0);  // another bandwidth: a pass
  EXPECT_GT(huber_calls(), calls);
  EXPECT_EQ(look(ops), fresh(start, 2.0));
  ops.residuals_to_host(other, host);  // overwrites the point's residual
  calls = huber_calls();
  ops.evaluate(start, 2.0);  // same point and bandwidth as the current one, yet a pass
  EXPECT_GT(huber_calls(), calls);
  EXPECT_EQ(look(ops), fresh(start, 2.0));
}

TEST(RepeatedEvaluation, SkipsItsPassAndMatchesAFreshOne) {
  expect_repeated_evaluation_matches_fresh_one<double>();
  expect_repeated_evaluation_matches_fresh_one<float>();
}

TEST(ReusedResiduals, MatchAFreshEvaluation) {
  expect_reused_residuals_match_fresh_ones<double>(1e-12);
  expect_reused_residuals_match_fresh_ones<float>(1e-4);
}

// residuals_to_host at the last evaluation's point (the first batch's scale after the pilot)
// copies that evaluation's residual: no pass, the same bits as a pass, and the evaluation kept
// (a following evaluate at the same point and bandwidth skips its pass too).
template <class T>
void expect_residuals_at_the_current_point_copied() {
  const auto batch = rh::test::contaminated_batch<T>(94, 5000, 7);
  const auto empty = rh::State<T>::empty(8);
  rh::cpu::ThreadPool pool(2);
  rh::cpu::Workspace<T> space;
  rh::cpu::Workspace<T> fresh_space;
  const rh::cpu::RowBlocks blocks(batch.rows);
  space.reserve(8, batch.rows, blocks.count());
  fresh_space.reserve(8, batch.rows, blocks.count());
  rb::Options options;
  options.sync_mode = rb::SyncMode::immediate;
  options.track_page_faults = false;
  rb::Profiler prof(rh::engine_brick_table(), options);
  const auto residual_calls = [&] {
    return prof.stats(static_cast<rb::BrickId>(rh::EngineBrick::residual)).count;
  };
  const std::vector<T> start = {0.5, -1, 2, 0, 0.25, -0.75, 1.5, 0.1};
  rh::cpu::BatchOps<T> ops(space, pool, empty.view(), batch.design(), batch.response(),
                           batch.weights(), true, prof);
  ops.evaluate_with_gram(start, 1.5);
  const auto calls = residual_calls();
  std::vector<T> copied(batch.rows);
  ops.residuals_to_host(start, copied);
  ops.evaluate_with_gram(start, 1.5);
  EXPECT_EQ(residual_calls(), calls);  // neither ran a pass
  rh::cpu::BatchOps<T> fresh(fresh_space, pool, empty.view(), batch.design(), batch.response(),
                             batch.weights(), true, rh::test::quiet_profiler());
  std::vector<T> passed(batch.rows);
  fresh.residuals_to_host(start, passed);
  EXPECT_EQ(copied, passed);
  // Read in place, at the current point and after a pass at another one: the same bits.
  const std::span<const T> kept = ops.host_residuals(start);
  EXPECT_EQ(std::vector<T>(kept.begin(), kept.end()), passed);
  const std::vector<T> other = {0.25, -0.5, 1, 0.5, 0, -0.25, 1, 0.2};
  std::vector<T> other_copied(batch.rows);
  fresh.residuals_to_host(other, other_copied);
  const std::span<const T> in_place = ops.host_residuals(other);
  EXPECT_EQ(std::vector<T>(in_place.begin(), in_place.end()), other_copied);
}

TEST(RepeatedEvaluation, ResidualsAtTheCurrentPointAreACopy) {
  expect_residuals_at_the_current_point_copied<double>();
  expect_residuals_at_the_current_point_copied<float>();
}

}  // namespace
