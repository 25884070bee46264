// The CPU engine's fused passes (rh::FusedTrialOps: several LAMM trials in one pass, a trial
// step with the evaluation at the point after it, an evaluation with its Gram) change the cost of a solve, not its result:
// the same batches solved through the plain one-call-at-a-time interface agree bit for bit.

#include <gtest/gtest.h>

#include <optional>
#include <rh/engine_bricks.hpp>
#include <rh/update.hpp>

#include "batch_ops.hpp"
#include "problems.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

namespace {

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

rh::bricks::Profiler& quiet_profiler() {
  static rh::bricks::Profiler off = [] {
    rh::bricks::Options options;
    options.sync_mode = rh::bricks::SyncMode::off;
    options.track_page_faults = false;
    return rh::bricks::Profiler(rh::engine_brick_table(), options);
  }();
  return off;
}

// A stream of batches through renewable_update with Ops type O; every state and diagnostic.
template <template <class> class O, class T>
struct Run {
  std::vector<rh::State<T>> states;
  std::vector<rh::Diagnostics> diagnostics;
};

template <template <class> class O, class T>
Run<O, T> stream(const rh::Config& config, std::size_t rows, std::size_t features,
                 std::size_t threads) {
  rh::cpu::ThreadPool pool(threads);
  rh::cpu::Workspace<T> workspace;
  Run<O, T> run;
  auto state = rh::State<T>::empty(features + (config.fit_intercept ? 1 : 0));
  for (std::uint64_t b = 0; b < 3; ++b) {
    const auto batch = rh::test::contaminated_batch<T>(70 + b, rows, features);
    const rh::cpu::RowBlocks blocks(rows);
    workspace.reserve(state.dim(), rows, blocks.count());
    const rh::StateView<T> previous = state.view();
    std::optional<O<T>> ops;
    ops.emplace(workspace, pool, previous, batch.design(), batch.response(), batch.weights(),
                config.fit_intercept, quiet_profiler());
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
                                           std::size_t features) {
  const auto fused = stream<rh::cpu::BatchOps, T>(config, rows, features, 2);
  const auto plain = stream<OneCallAtATime, T>(config, rows, features, 1);
  for (std::size_t b = 0; b < fused.states.size(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    EXPECT_EQ(fused.states[b].coef, plain.states[b].coef);
    EXPECT_EQ(fused.states[b].information, plain.states[b].information);
    EXPECT_EQ(fused.states[b].scale, plain.states[b].scale);
    EXPECT_EQ(fused.diagnostics[b].n_iter, plain.diagnostics[b].n_iter);
    EXPECT_EQ(fused.diagnostics[b].line_search_halvings, plain.diagnostics[b].line_search_halvings);
    EXPECT_EQ(fused.diagnostics[b].objective, plain.diagnostics[b].objective);
    EXPECT_EQ(fused.diagnostics[b].converged, plain.diagnostics[b].converged);
  }
  return fused;
}

rh::Config l1_config() {
  rh::Config config;
  config.alpha = 0.02;
  config.max_iter = 5000;
  return config;
}

// 5,000 rows: two row blocks of uneven chunks; LAMM needs tens of phi doublings at its start.
TEST(FusedTrials, LammAgreesBitForBitInFloat64) {
  const auto run = expect_identical<double>(l1_config(), 5000, 9);
  // The first batch's solves start at phi = 1: several passes of phi_trials_per_pass trials.
  EXPECT_GT(run.diagnostics[0].line_search_halvings, 2 * rh::phi_trials_per_pass);
}

TEST(FusedTrials, LammAgreesBitForBitInFloat32) { expect_identical<float>(l1_config(), 5000, 9); }

TEST(FusedTrials, LammWithoutInterceptAgreesBitForBit) {
  auto config = l1_config();
  config.fit_intercept = false;
  expect_identical<double>(config, 3000, 5);
}

TEST(FusedTrials, NewtonAgreesBitForBit) {
  expect_identical<double>(rh::Config{}, 5000, 9);
  expect_identical<float>(rh::Config{}, 5000, 9);
}

}  // namespace
