// Its own executable: it replaces the global operator new to count allocations, and asserts that
// recording scopes after warm-up allocates nothing, in every recording mode.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace {
std::atomic<long> allocations{0};
}

// The replacement pairs malloc with free correctly; GCC 12 sees `delete` inlined to free() at the
// call sites and, with sanitizer instrumentation, flags it as mismatched.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace rh::bricks {
namespace {

using testing::B;

void work(Profiler& p) {
  RH_BRICK_SCOPE(p, B::gemm, 1, 2, 3);
  { RH_BRICK_SCOPE(p, B::factor, 1, 2, 3); }
  { RH_BRICK_TRANSFER(p, B::copy, Direction::d2h, 64); }
  { RH_BRICK_KERNEL(p, "kernel"); }
}

long allocations_in(Profiler& p, int scopes) {
  work(p);  // warm-up: the thread registers and its buffers are made
  const long before = allocations.load();
  for (int i = 0; i < scopes; ++i) work(p);
  return allocations.load() - before;
}

TEST(NoAlloc, CpuClockWithTracing) {
  Options o;
  o.trace_capacity = 128;  // wraps many times
  Profiler p(testing::test_table(), o);
  EXPECT_EQ(allocations_in(p, 10000), 0);
}

TEST(NoAlloc, RuntimeOff) {
  Options o;
  o.sync_mode = SyncMode::off;
  Profiler p(testing::test_table(), o);
  EXPECT_EQ(allocations_in(p, 10000), 0);
}

TEST(NoAlloc, DeferredAsynchronousClockWithinThePendingCapacity) {
  testing::ManualClock::Counters c;
  Options o;
  o.sync_mode = SyncMode::deferred;
  o.pending_capacity = 1 << 16;
  auto clock = std::make_unique<testing::ManualClock>(&c);
  Profiler p(testing::test_table(), o, std::move(clock));
  EXPECT_EQ(allocations_in(p, 10000), 0);
  EXPECT_GT(c.marks, 0);
}

TEST(NoAlloc, TheCounterSeesAllocations) {
  const long before = allocations.load();
  // A direct call: new-expressions may be elided by the compiler, operator new calls may not.
  void* volatile q = ::operator new(32);
  ::operator delete(q);
  EXPECT_EQ(allocations.load() - before, 1);
}

}  // namespace
}  // namespace rh::bricks
