// The CPU engine's brick instrumentation (docs/profiling.md): which bricks an update records, on
// which threads, as which batch; and that profiling changes no number.

#include <gtest/gtest.h>

#include <memory>
#include <rh/bricks/bricks.hpp>
#include <rh/cpu/engine.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/engine_profiling.hpp>
#include <rh/error.hpp>
#include <set>
#include <string>

#include "problems.hpp"

namespace {

using rh::test::contaminated_batch;
namespace rb = rh::bricks;

std::shared_ptr<rb::Profiler> make_profiler(rb::SyncMode mode = rb::SyncMode::immediate) {
  rb::Options options;
  options.sync_mode = mode;
  options.trace_capacity = 1 << 14;
  return std::make_shared<rb::Profiler>(rh::engine_brick_table(), options);
}

std::set<std::string> called(rb::Profiler& prof) {
  std::set<std::string> out;
  for (const auto& b : prof.report().bricks) {
    if (b.stats.count > 0) out.insert(b.info.name);
  }
  return out;
}

std::uint64_t count(rb::Profiler& prof, rh::EngineBrick brick) {
  return prof.stats(static_cast<rb::BrickId>(brick)).count;
}

TEST(EngineProfiling, AnUpdateRecordsItsBricksAsOneBatch) {
  const auto batch = contaminated_batch<double>(3, 9000, 6);
  rh::cpu::Engine engine({.threads = 2});
  auto prof = make_profiler();
  engine.set_profiler(prof);
  rh::Config config;
  const auto [state, diag] = engine.update(rh::State<double>::empty(7), batch.design(),
                                           batch.response(), batch.weights(), config);
  EXPECT_EQ(called(*prof),
            (std::set<std::string>{"validate", "stage", "residual", "huber", "score", "gram",
                                   "solve", "line_search", "info_update", "transfer"}));
  // The checks before the update, then X's values chunk by chunk in the first pass over X.
  EXPECT_GE(count(*prof, rh::EngineBrick::validate), 2u);
  // gram per row block (4 blocks of 9000 rows) and one reduction per Newton iteration.
  EXPECT_GE(count(*prof, rh::EngineBrick::gram), 5u);
  // Every value of X scanned exactly once, y and the weights once.
  EXPECT_EQ(prof->stats(static_cast<rb::BrickId>(rh::EngineBrick::validate)).elements,
            9000u * 6 + 2 * 9000u);
  const rb::PerfBreakdown b = prof->breakdown();
  ASSERT_EQ(b.batches.size(), 1u);
  EXPECT_EQ(b.batches[0].rows, 9000u);
  EXPECT_EQ(b.batches[0].iterations, static_cast<std::uint32_t>(diag.n_iter));
  EXPECT_GE(prof->report().metadata.threads, 1u);
  // Every event belongs to batch 0; the trace's graph has a critical path.
  for (const rb::Event& e : prof->events()) EXPECT_EQ(e.batch, 0u);
  EXPECT_FALSE(rb::critical_path(prof->graph()).path.empty());
}

TEST(EngineProfiling, LammRecordsProxAndProfilingChangesNoNumber) {
  const auto batch = contaminated_batch<float>(4, 3000, 5);
  rh::Config config;
  config.alpha = 0.05;
  rh::cpu::Engine plain({.threads = 2});
  rh::cpu::Engine profiled({.threads = 2});
  auto prof = make_profiler();
  profiled.set_profiler(prof);
  const auto a = plain.update(rh::State<float>::empty(6), batch.design(), batch.response(),
                              batch.weights(), config);
  const auto b = profiled.update(rh::State<float>::empty(6), batch.design(), batch.response(),
                                 batch.weights(), config);
  EXPECT_EQ(a.first.coef, b.first.coef);
  EXPECT_EQ(a.first.information, b.first.information);
  EXPECT_EQ(a.second.n_iter, b.second.n_iter);
  EXPECT_GT(count(*prof, rh::EngineBrick::prox), 0u);
}

TEST(EngineProfiling, DetachedOffOrFailedUpdatesBehave) {
  const auto batch = contaminated_batch<double>(5, 500, 3);
  rh::cpu::Engine engine({.threads = 1});
  auto prof = make_profiler(rb::SyncMode::off);
  engine.set_profiler(prof);
  rh::Config config;
  engine.update(rh::State<double>::empty(4), batch.design(), batch.response(), batch.weights(),
                config);
  EXPECT_TRUE(called(*prof).empty());
  EXPECT_TRUE(prof->breakdown().batches.empty());

  prof->set_sync_mode(rb::SyncMode::immediate);
  rh::Config bad;
  bad.epsilon = -1.0;
  EXPECT_THROW(engine.update(rh::State<double>::empty(4), batch.design(), batch.response(),
                             batch.weights(), bad),
               rh::InvalidArgument);
  EXPECT_EQ(prof->breakdown().batches.size(), 1u);  // the batch still ended
  EXPECT_EQ(count(*prof, rh::EngineBrick::validate), 1u);  // refused before any pass over X

  engine.set_profiler(nullptr);
  engine.update(rh::State<double>::empty(4), batch.design(), batch.response(), batch.weights(),
                config);
  EXPECT_EQ(count(*prof, rh::EngineBrick::validate), 1u);  // detached: nothing more recorded
  EXPECT_EQ(engine.profiler(), nullptr);
}

TEST(EngineProfiling, TheOffProfilerNeverCalibratesTheTsc) {
  // An engine nobody profiles never reads its clock: a process's first update must not wait for
  // the TSC's calibration (a 5 ms sleep).
  EXPECT_FALSE(rh::off_engine_profiler().recording());
  EXPECT_FALSE(rh::off_engine_profiler().cpu_clock().uses_tsc());
}

TEST(EngineProfiling, RefusesAProfilerOnAnotherTable) {
  rh::cpu::Engine engine({.threads = 1});
  auto other = std::make_shared<rb::Profiler>(rb::BrickTable({{0, "x", rb::Category::data}}, 4));
  EXPECT_THROW(engine.set_profiler(other), rh::InvalidArgument);
}

}  // namespace
