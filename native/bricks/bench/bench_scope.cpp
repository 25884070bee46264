// The cost of one scope (start + stop) on the hot path, against the two clock reads it is made of.
// scripts/test_bricks.sh bench prints each figure's ratio to Tracy's ~2 ns zone.
#include <benchmark/benchmark.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "rh/bricks/scope.hpp"

namespace rh::bricks {
namespace {

BrickTable table() {
  return BrickTable({{0, "load", Category::data}, {1, "gemm", Category::blas3}}, 16);
}

void BM_ClockPair_Rdtsc(benchmark::State& state) {
  const CpuClock clock;
  for (auto _ : state) {
    const std::uint64_t a = clock.ticks();
    benchmark::DoNotOptimize(a);
    const std::uint64_t b = clock.ticks();
    benchmark::DoNotOptimize(b);
  }
  state.SetLabel(clock.uses_tsc() ? "tsc" : "steady_clock");
}
BENCHMARK(BM_ClockPair_Rdtsc);

void BM_ClockPair_SteadyClock(benchmark::State& state) {
  for (auto _ : state) {
    auto a = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(a);
    auto b = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_ClockPair_SteadyClock);

void BM_Scope(benchmark::State& state) {
  Options o;
  o.trace_capacity = static_cast<std::size_t>(state.range(0));
  Profiler p(table(), o);
  for (auto _ : state) {
    RH_BRICK_SCOPE(p, 1, 64, 512, 1024);
    benchmark::ClobberMemory();
  }
  state.SetLabel(o.trace_capacity ? "cpu clock, tracing" : "cpu clock");
}
BENCHMARK(BM_Scope)->Arg(0)->Arg(4096)->ArgName("trace_capacity");
BENCHMARK(BM_Scope)->Arg(0)->ArgName("trace_capacity")->Threads(2);

// A record in a run of back-to-back phases (Phases): one clock reading per record, the previous
// record's stop being this one's start. Runs of 64 phases, ended outside the timed loop's count.
void BM_Phase(benchmark::State& state) {
  Options o;
  o.trace_capacity = static_cast<std::size_t>(state.range(0));
  Profiler p(table(), o);
  std::int64_t n = 0;
  RH_BRICK_PHASES(phases, p);
  for (auto _ : state) {
    RH_BRICK_NEXT_PHASE(phases, 1, 64, 512, 1024);
    benchmark::ClobberMemory();
    if (++n % 64 == 0) RH_BRICK_END_PHASES(phases);
  }
  RH_BRICK_END_PHASES(phases);
  state.SetLabel(o.trace_capacity ? "cpu clock, tracing" : "cpu clock");
}
BENCHMARK(BM_Phase)->Arg(0)->Arg(4096)->ArgName("trace_capacity");

// The asynchronous path: a virtual clock call per mark and a pending record per scope, resolved
// in bulk by flush() outside the timed loop (as an engine flushes once per batch).
void BM_Scope_DeferredClockSource(benchmark::State& state) {
  Options o;
  o.sync_mode = SyncMode::deferred;
  o.pending_capacity = 1 << 16;
  Profiler p(table(), o, std::make_unique<SteadyClockSource>());
  std::int64_t n = 0;
  for (auto _ : state) {
    RH_BRICK_SCOPE(p, 1, 64, 512, 1024);
    benchmark::ClobberMemory();
    if (++n % (1 << 15) == 0) {
      state.PauseTiming();
      p.flush();
      state.ResumeTiming();
    }
  }
}
BENCHMARK(BM_Scope_DeferredClockSource);

void BM_Scope_RuntimeOff(benchmark::State& state) {
  Options o;
  o.sync_mode = SyncMode::off;
  Profiler p(table(), o);
  for (auto _ : state) {
    RH_BRICK_SCOPE(p, 1, 64, 512, 1024);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Scope_RuntimeOff);

void BM_Scope_Named(benchmark::State& state) {
  Profiler p(table());
  for (auto _ : state) {
    RH_BRICK_SCOPE_NAMED(p, "gemm", Category::blas3, 64, 512, 1024);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Scope_Named);

// A synthetic batch: 12 bricks of `range(0)` multiply-adds each, profiled or not, to show the
// relative overhead at a realistic brick size.
void BM_SyntheticBatch(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Options o;
  o.sync_mode = state.range(1) ? SyncMode::immediate : SyncMode::off;
  o.track_page_faults = false;
  Profiler p(table(), o);
  std::vector<double> x(n, 1.0), y(n, 2.0);
  for (auto _ : state) {
    double acc = 0;
    for (int b = 0; b < 12; ++b) {
      RH_BRICK_SCOPE(p, 1, n, 16 * n, 2 * n);
      acc += std::inner_product(x.begin(), x.end(), y.begin(), 0.0);
    }
    benchmark::DoNotOptimize(acc);
  }
  state.SetLabel(state.range(1) ? "profiled" : "off");
}
BENCHMARK(BM_SyntheticBatch)->Args({1000, 0})->Args({1000, 1})->ArgNames({"n", "profiled"});

}  // namespace
}  // namespace rh::bricks
