// The profiler's cost on the CPU engine (docs/profiling.md, "Measured cost").
//
// A steady-state update of the reference shape (on 1 and on 2 engine threads): batch 2 of a 100,000 x 90 stream in batches of
// 32,768 rows (state after batch 1 fixed, so every repetition does the same work), with
//   none       no profiler attached (the engine's scopes point at its off profiler)
//   off        a profiler attached, sync mode off
//   immediate  the CPU clock (TSC), tracing on (65,536 events per thread)
//   per_batch  SteadyClockSource behind the asynchronous interface, resolved at end_batch()
//   deferred   SteadyClockSource, resolved at flush() or when a thread's pending buffer fills
// and one CPU record (a scope's start and stop) on its own. All variants run in one process,
// interleaved when the benchmark library is asked to (--benchmark_enable_random_interleaving).
// Built with RH_BRICKS_ENABLED=OFF, every variant runs the compiled-out engine.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <chrono>
#include <cmath>
#include <string>
#include <memory>
#include <random>
#include <vector>

#include "rh/bricks/bricks.hpp"
#include "rh/cpu/engine.hpp"
#include "rh/engine_bricks.hpp"

namespace {

constexpr std::size_t kRows = 32'768;
constexpr std::size_t kFeatures = 90;

struct Batch {
  std::vector<double> X, y, w;
};

// Gaussian design, Student-t(3)-like noise (a normal over a chi), 5 % gross outliers.
Batch make_batch(std::uint64_t seed, const std::vector<double>& beta) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::chi_squared_distribution<double> chi(3.0);
  std::uniform_real_distribution<double> uniform;
  Batch b;
  b.X.resize(kRows * kFeatures);
  b.y.resize(kRows);
  b.w.assign(kRows, 1.0);
  for (double& x : b.X) x = normal(rng);
  for (std::size_t i = 0; i < kRows; ++i) {
    double fit = 1.0;  // intercept
    for (std::size_t j = 0; j < kFeatures; ++j) fit += b.X[i * kFeatures + j] * beta[j];
    double noise = normal(rng) / std::sqrt(chi(rng) / 3.0);
    if (uniform(rng) < 0.05) noise += (uniform(rng) < 0.5 ? -1 : 1) * 50.0 * (1.0 + uniform(rng));
    b.y[i] = fit + noise;
  }
  return b;
}

struct Fixture {
  Fixture() {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    std::vector<double> beta(kFeatures);
    for (double& v : beta) v = normal(rng);
    first = make_batch(1, beta);
    second = make_batch(2, beta);
    rh::cpu::Engine engine;
    state = engine.update(rh::State<double>::empty(kFeatures + 1), view(first),
                          std::span<const double>(first.y), std::span<const double>(first.w),
                          config)
                .first;
  }
  static rh::MatrixView<double> view(const Batch& b) {
    return rh::MatrixView<double>{b.X.data(), kRows, kFeatures};
  }
  void update(rh::cpu::Engine& engine) const {
    auto out = engine.update(state, view(second), std::span<const double>(second.y),
                             std::span<const double>(second.w), config);
    benchmark::DoNotOptimize(out.first.coef.data());
  }
  rh::Config config{};
  Batch first, second;
  rh::State<double> state;
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

enum Variant : int { none, attached_off, immediate, per_batch, deferred };

void BM_SteadyUpdate(benchmark::State& bench) {
  const Fixture& f = fixture();
  rh::cpu::Engine engine({.threads = static_cast<std::size_t>(bench.range(1))});
  const auto variant = static_cast<Variant>(bench.range(0));
  std::shared_ptr<rh::bricks::Profiler> prof;
  if (variant != none) {
    rh::bricks::Options options;
    options.trace_capacity = 1 << 16;
    std::unique_ptr<rh::bricks::ClockSource> clock;
    switch (variant) {
      case attached_off: options.sync_mode = rh::bricks::SyncMode::off; break;
      case immediate: options.sync_mode = rh::bricks::SyncMode::immediate; break;
      case per_batch:
        options.sync_mode = rh::bricks::SyncMode::per_batch;
        clock = std::make_unique<rh::bricks::SteadyClockSource>();
        break;
      default:
        options.sync_mode = rh::bricks::SyncMode::deferred;
        clock = std::make_unique<rh::bricks::SteadyClockSource>();
        break;
    }
    prof = std::make_shared<rh::bricks::Profiler>(rh::engine_brick_table(), options,
                                                  std::move(clock));
    engine.set_profiler(prof);
  }
  f.update(engine);  // warm-up: workspaces, threads, the profiler's per-thread state
  for (auto _ : bench) f.update(engine);
  if (prof) {
    const rh::bricks::Report r = prof->report();
    std::uint64_t scopes = 0;
    for (const auto& b : r.bricks) scopes += b.stats.count;
    bench.counters["scopes_per_update"] =
        static_cast<double>(scopes) / static_cast<double>(bench.iterations() + 1);
    bench.counters["forced_flushes"] = static_cast<double>(r.metadata.forced_flushes);
  }
  bench.counters["rows_per_s"] =
      benchmark::Counter(static_cast<double>(kRows), benchmark::Counter::kIsIterationInvariantRate);
}
// threads 1: the CPU time is the whole cost (least disturbed by other load); 2: both cores here.
BENCHMARK(BM_SteadyUpdate)
    ->ArgNames({"variant", "threads"})
    ->ArgsProduct({{none, attached_off, immediate, per_batch, deferred}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

// The same five variants alternated update by update on one engine (one engine thread; only the
// attached profiler changes, so workspace placement cannot favour a variant), in a fresh random
// order every round, so that load from other processes falls on all of them alike. Each round
// gives every variant a ratio to `none` of the same round; the median ratio over the rounds, with
// its distribution-free 95 % confidence interval (order statistics of the binomial, no
// assumption on the noise), is the overhead. Process CPU time: the engine's pool thread does
// the work. Counters: overhead_pct_<variant> (median), ci_low_pct_<variant>, ci_high_pct_<variant>.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

void BM_PairedOverhead(benchmark::State& bench) {
  const Fixture& f = fixture();
  constexpr int kVariants = 5;
  const int rounds = static_cast<int>(bench.range(0));
  const char* names[kVariants] = {"none", "off", "immediate", "per_batch", "deferred"};
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = 1});
  std::vector<std::shared_ptr<rh::bricks::Profiler>> profilers(kVariants);  // none: nullptr
  for (int v = 0; v < kVariants; ++v) {
    if (v == none) continue;
    rh::bricks::Options options;
    options.trace_capacity = 1 << 16;
    options.sync_mode = v == attached_off ? rh::bricks::SyncMode::off
                        : v == immediate  ? rh::bricks::SyncMode::immediate
                        : v == per_batch  ? rh::bricks::SyncMode::per_batch
                                          : rh::bricks::SyncMode::deferred;
    std::unique_ptr<rh::bricks::ClockSource> clock;
    if (v == per_batch || v == deferred) clock = std::make_unique<rh::bricks::SteadyClockSource>();
    profilers[v] = std::make_shared<rh::bricks::Profiler>(rh::engine_brick_table(), options,
                                                          std::move(clock));
  }
  std::vector<std::vector<double>> ratios(kVariants);
  std::mt19937 shuffle_rng(12345);
  std::array<int, kVariants> order{0, 1, 2, 3, 4};
  for (const auto& prof : profilers) {  // warm-up, every profiler's per-thread state included
    engine.set_profiler(prof);
    f.update(engine);
  }
  for (auto _ : bench) {
    for (int round = 0; round < rounds; ++round) {
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      std::array<double, kVariants> ms{};
      for (const int v : order) {
        engine.set_profiler(profilers[v]);
        const double t0 = process_cpu_ms();
        f.update(engine);
        ms[v] = process_cpu_ms() - t0;
      }
      for (int v = 0; v < kVariants; ++v) ratios[v].push_back(ms[v] / ms[none]);
      for (auto& prof : profilers) {
        if (prof) prof->reset();  // bound the trace and batch logs
      }
    }
  }
  // The median's 95 % interval: ranks n/2 -+ 1.96 sqrt(n)/2 of the sorted ratios.
  for (int v = 1; v < kVariants; ++v) {
    auto& r = ratios[v];
    std::sort(r.begin(), r.end());
    const double n = static_cast<double>(r.size());
    const auto rank = [&](double x) {
      return r[static_cast<std::size_t>(std::clamp(x, 0.0, n - 1.0))];
    };
    const double half_width = 1.96 * std::sqrt(n) / 2.0;
    bench.counters[std::string("overhead_pct_") + names[v]] = 100.0 * (rank(n / 2) - 1.0);
    bench.counters[std::string("ci_low_pct_") + names[v]] =
        100.0 * (rank(std::floor(n / 2 - half_width)) - 1.0);
    bench.counters[std::string("ci_high_pct_") + names[v]] =
        100.0 * (rank(std::ceil(n / 2 + half_width)) - 1.0);
  }
}
BENCHMARK(BM_PairedOverhead)->ArgName("rounds")->Arg(200)->Iterations(1)->Unit(benchmark::kMillisecond);

// One CPU record: a scope's start and stop on the TSC, counters only and with tracing.
void BM_CpuRecord(benchmark::State& bench) {
  rh::bricks::Options options;
  options.trace_capacity = bench.range(0) ? 4096 : 0;
  rh::bricks::Profiler prof(rh::engine_brick_table(), options);
  for (auto _ : bench) {
    RH_BRICK_SCOPE(prof, rh::EngineBrick::gram, 1, 8, 2);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CpuRecord)->ArgName("tracing")->Arg(0)->Arg(1);

// A deferred record on SteadyClockSource, its resolution at flush() amortized (every 256 scopes,
// about one engine thread's share of a steady update).
void BM_DeferredRecord(benchmark::State& bench) {
  rh::bricks::Options options;
  options.sync_mode = rh::bricks::SyncMode::deferred;
  options.trace_capacity = 4096;
  rh::bricks::Profiler prof(rh::engine_brick_table(), options,
                            std::make_unique<rh::bricks::SteadyClockSource>());
  std::size_t n = 0;
  for (auto _ : bench) {
    { RH_BRICK_SCOPE(prof, rh::EngineBrick::gram, 1, 8, 2); }
    if (++n % 256 == 0) prof.flush();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_DeferredRecord);

// What an engine adds per update besides its scopes: begin_batch() and end_batch(), each reading
// /proc/self/stat for the page faults.
void BM_BatchBoundary(benchmark::State& bench) {
  rh::bricks::Profiler prof(rh::engine_brick_table());
  for (auto _ : bench) {
    prof.begin_batch(kRows);
    prof.set_iteration(3);
    prof.end_batch();
    if (bench.iterations() % 1000 == 0) prof.reset();  // bound the batch log
  }
}
BENCHMARK(BM_BatchBoundary);

// The floor of a CPU record: two TSC reads.
void BM_TwoTscReads(benchmark::State& bench) {
  rh::bricks::CpuClock clock;
  for (auto _ : bench) {
    benchmark::DoNotOptimize(clock.ticks());
    benchmark::DoNotOptimize(clock.ticks());
  }
}
BENCHMARK(BM_TwoTscReads);

}  // namespace

BENCHMARK_MAIN();
