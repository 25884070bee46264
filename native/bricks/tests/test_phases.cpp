// Phases: back-to-back records sharing one clock reading per boundary. Each phase must count,
// time and trace exactly like a scope of its brick, with asynchronous clocks too.

#include <gtest/gtest.h>

#include <memory>

#include "rh/bricks/report.hpp"
#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace rh::bricks {
namespace {

using testing::B;

struct Manual : testing::ManualProfiler {
  using ManualProfiler::ManualProfiler;
  // load 10 ns, then gemv 20 ns holding a nested factor scope of 5 ns, then copy 30 ns.
  void run() {
    p->begin_batch(1);
    {
      RH_BRICK_PHASES(phases, *p);
      RH_BRICK_NEXT_PHASE(phases, B::load, 1, 8, 0);
      clock->advance(10);
      RH_BRICK_NEXT_PHASE(phases, B::gemv, 2, 16, 4);
      clock->advance(5);
      {
        RH_BRICK_SCOPE(*p, B::factor, 0, 0, 1);
        clock->advance(5);
      }
      clock->advance(10);
      RH_BRICK_NEXT_PHASE(phases, B::copy, 3, 24, 0);
      clock->advance(30);
    }
    p->end_batch();
    p->flush();
  }
};

void expect_phase_times(Manual& m) {
  EXPECT_EQ(m.stats(B::load).total_ns, 10u);
  EXPECT_EQ(m.stats(B::gemv).total_ns, 20u);
  EXPECT_EQ(m.stats(B::factor).total_ns, 5u);
  EXPECT_EQ(m.stats(B::copy).total_ns, 30u);
  EXPECT_EQ(m.stats(B::gemv).elements, 2u);
  EXPECT_EQ(m.stats(B::gemv).bytes, 16u);
  EXPECT_EQ(m.stats(B::gemv).flops, 4u);
  // Three phases, one nested scope: 3 + 1 marks for the phases (not 6), 2 for the scope.
  EXPECT_EQ(m.counters.marks, 6);
}

TEST(Phases, ImmediateAsynchronousClockTimesEachPhaseWithOneMarkPerBoundary) {
  Manual m(SyncMode::immediate);
  m.run();  // a mark resolved after the clock recycled it would throw
  expect_phase_times(m);
}

TEST(Phases, PerBatchAndDeferredResolveTheSharedMarks) {
  for (const SyncMode mode : {SyncMode::per_batch, SyncMode::deferred}) {
    Manual m(mode);
    m.run();
    expect_phase_times(m);
  }
}

TEST(Phases, TraceShowsSiblingsEdgeToEdgeWithTheNestedScopeInside) {
  Manual m(SyncMode::immediate);
  m.run();
  const auto events = m.p->events();
  ASSERT_EQ(events.size(), 4u);
  // Sorted by start: load [0, 10), gemv [10, 30) containing factor [15, 20), copy [30, 60).
  EXPECT_EQ(events[0].brick, static_cast<BrickId>(B::load));
  EXPECT_EQ(events[0].start_ns + events[0].duration_ns, events[1].start_ns);
  EXPECT_EQ(events[1].brick, static_cast<BrickId>(B::gemv));
  EXPECT_EQ(events[2].brick, static_cast<BrickId>(B::factor));
  EXPECT_EQ(events[2].depth, events[1].depth + 1);
  EXPECT_EQ(events[3].brick, static_cast<BrickId>(B::copy));
  EXPECT_EQ(events[1].start_ns + events[1].duration_ns, events[3].start_ns);
  EXPECT_EQ(events[0].depth, events[3].depth);
}

TEST(Phases, CpuClockPhasesAreContiguousAndCounted) {
  Options o;
  o.trace_capacity = 64;
  o.track_page_faults = false;
  Profiler p(testing::test_table(), o);
  for (int run = 0; run < 5; ++run) {
    RH_BRICK_PHASES(phases, p);
    RH_BRICK_NEXT_PHASE(phases, B::load, 1, 0, 0);
    RH_BRICK_NEXT_PHASE(phases, B::scale, 1, 0, 0);
    RH_BRICK_END_PHASES(phases);
    RH_BRICK_NEXT_PHASE(phases, B::copy, 1, 0, 0);  // a new run after end()
  }
  EXPECT_EQ(p.stats(static_cast<BrickId>(B::load)).count, 5u);
  EXPECT_EQ(p.stats(static_cast<BrickId>(B::scale)).count, 5u);
  EXPECT_EQ(p.stats(static_cast<BrickId>(B::copy)).count, 5u);
  const auto events = p.events();
  ASSERT_EQ(events.size(), 15u);
  for (std::size_t k = 0; k + 1 < events.size(); k += 3) {
    // load and scale share a reading: edge to edge, exactly (a trace viewer nests by these).
    EXPECT_EQ(events[k].start_ns + events[k].duration_ns, events[k + 1].start_ns) << "run " << k / 3;
  }
}

TEST(Phases, OffRecordsNothing) {
  Options o;
  o.sync_mode = SyncMode::off;
  Profiler p(testing::test_table(), o);
  {
    RH_BRICK_PHASES(phases, p);
    RH_BRICK_NEXT_PHASE(phases, B::load, 1, 0, 0);
    RH_BRICK_NEXT_PHASE(phases, B::gemv, 1, 0, 0);
  }
  EXPECT_EQ(p.stats(static_cast<BrickId>(B::load)).count, 0u);
  EXPECT_EQ(p.stats(static_cast<BrickId>(B::gemv)).count, 0u);
}

}  // namespace
}  // namespace rh::bricks
