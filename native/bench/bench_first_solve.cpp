// The engine's first solve and a steady streaming batch (docs/native.md, "Passes over X per
// batch"): the CPU engine's own update, no Python around it, tau fixed (1.345), Student-t(3)
// noise, Gaussian design, an intercept.
//   first/<rows>/<features>/<threads>   a fresh state: the first batch's whole solve
//   steady/65536/32/<threads>           batch 2 of a stream (state after batch 1 fixed; on one
//                                       thread its CPU time is the batch's whole work), and
//   read/65536/32/<threads>             one read of that batch's X on that many threads (the
//                                       in-run bound's unit)
//   steady_stream, read_stream          the same, each repetition on the next of 8 distinct
//                                       batches (128 MiB, several times a server's L3): X comes
//                                       from memory, as a long stream's batches do, where the
//                                       two above find it in the cache
//   later<T>/4096/16/<threads>          make bench's steady latency batch: the batch again on
//                                       the state it left (tau fixed, smoothed curvature, as
//                                       the seed-matched estimator row runs), float64/float32
// X is allocated as NumPy allocates a large array on Linux (madvised for transparent huge
// pages), so the passes and the read see the TLB a Python caller's batch sees;
// RH_BENCH_SMALL_PAGES=1 leaves it on 4 KiB pages (a C++ caller's std::vector). Probe:
// RH_BENCH_TAU=1.5 runs steady_stream with that fixed tau instead of the default scale (no
// scale pass: the first evaluation's pass reads X from memory).
// Before/after: build this file against both trees and run the binaries alternately, e.g.
//   rh_first_solve_bench --benchmark_repetitions=20 --benchmark_report_aggregates_only=true
//       --benchmark_enable_random_interleaving=true

#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "rh/cpu/engine.hpp"
#include "thread_pool.hpp"

namespace {

// X allocated as NumPy allocates an array's data on Linux (numpy/_core/src/multiarray/alloc.c):
// malloc, then from 4 MiB on, madvise(MADV_HUGEPAGE) from the first page boundary on.
template <class T>
struct NumpyLikeAllocator {
  using value_type = T;
  NumpyLikeAllocator() = default;
  template <class U>
  NumpyLikeAllocator(const NumpyLikeAllocator<U>&) {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    constexpr std::size_t page = 4096;
    if (bytes >= (std::size_t(4) << 20) && std::getenv("RH_BENCH_SMALL_PAGES") == nullptr) {
      const std::size_t offset = page - reinterpret_cast<std::uintptr_t>(p) % page;
      madvise(static_cast<char*>(p) + offset, bytes - offset, MADV_HUGEPAGE);
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U>
  bool operator==(const NumpyLikeAllocator<U>&) const { return true; }
};
template <class T>
using Rows = std::vector<T, NumpyLikeAllocator<T>>;

template <class T = double>
struct Batch {
  std::size_t rows, features;
  Rows<T> X;
  std::vector<T> y, w;
  rh::MatrixView<T> view() const { return {X.data(), rows, features}; }
  template <class U>
  Batch<U> as() const {
    return {rows, features, Rows<U>(X.begin(), X.end()), std::vector<U>(y.begin(), y.end()),
            std::vector<U>(w.begin(), w.end())};
  }
};

Batch<> make_batch(std::size_t rows, std::size_t features, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::chi_squared_distribution<double> chi(3.0);
  Batch<> b{rows, features, Rows<double>(rows * features), std::vector<double>(rows),
          std::vector<double>(rows, 1.0)};
  for (double& x : b.X) x = normal(rng);
  for (std::size_t i = 0; i < rows; ++i) {
    double fit = 0.5;
    for (std::size_t j = 0; j < features; ++j) {
      fit += b.X[i * features + j] * (-1.0 + 2.0 * double(j) / double(features));
    }
    b.y[i] = fit + normal(rng) / std::sqrt(chi(rng) / 3.0);
  }
  return b;
}

rh::Config fixed_tau() {
  rh::Config config;
  config.tau = 1.345;
  return config;
}

void first_solve(benchmark::State& st) {
  const auto rows = std::size_t(st.range(0));
  const auto features = std::size_t(st.range(1));
  const Batch<> b = make_batch(rows, features, 1);
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = std::size_t(st.range(2))});
  const rh::Config config = fixed_tau();
  const auto empty = rh::State<double>::empty(features + 1);
  for (auto _ : st) {
    auto out = engine.update(empty.view(), b.view(), std::span<const double>(b.y),
                             std::span<const double>(b.w), config);
    benchmark::DoNotOptimize(out.first.coef.data());
    st.counters["iterations"] = double(out.second.n_iter);
  }
}

void steady_batch(benchmark::State& st) {
  const auto rows = std::size_t(st.range(0));
  const auto features = std::size_t(st.range(1));
  const Batch<> first = make_batch(rows, features, 1);
  const Batch<> second = make_batch(rows, features, 2);
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = std::size_t(st.range(2))});
  const rh::Config config;  // the default scale
  const auto state = engine.update(rh::State<double>::empty(features + 1).view(), first.view(),
                                   std::span<const double>(first.y),
                                   std::span<const double>(first.w), config)
                         .first;
  for (auto _ : st) {
    auto out = engine.update(state.view(), second.view(), std::span<const double>(second.y),
                             std::span<const double>(second.w), config);
    benchmark::DoNotOptimize(out.first.coef.data());
  }
}

// Eight distinct batches of 65,536 x 32 (16 MiB each): a stream's batches, not one in cache.
constexpr std::size_t kStreamBatches = 8;

std::vector<Batch<>> stream_batches(std::size_t rows, std::size_t features) {
  std::vector<Batch<>> batches;
  for (std::size_t k = 0; k < kStreamBatches; ++k) batches.push_back(make_batch(rows, features, 2 + k));
  return batches;
}

void steady_stream(benchmark::State& st) {
  const auto rows = std::size_t(st.range(0));
  const auto features = std::size_t(st.range(1));
  const Batch<> first = make_batch(rows, features, 1);
  const std::vector<Batch<>> batches = stream_batches(rows, features);
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = std::size_t(st.range(2))});
  rh::Config config;
  if (const char* t = std::getenv("RH_BENCH_TAU")) config.tau = std::atof(t);
  const auto state = engine.update(rh::State<double>::empty(features + 1).view(), first.view(),
                                   std::span<const double>(first.y),
                                   std::span<const double>(first.w), config)
                         .first;
  std::size_t next = 0;
  for (auto _ : st) {
    const Batch<>& b = batches[next++ % kStreamBatches];
    auto out = engine.update(state.view(), b.view(), std::span<const double>(b.y),
                             std::span<const double>(b.w), config);
    benchmark::DoNotOptimize(out.first.coef.data());
  }
}

template <class T>
void later_batch(benchmark::State& st) {
  const auto rows = std::size_t(st.range(0));
  const auto features = std::size_t(st.range(1));
  const Batch<T> b = make_batch(rows, features, 1).template as<T>();
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = std::size_t(st.range(2))});
  rh::Config config = fixed_tau();
  config.curvature = rh::Curvature::smoothed;
  const auto state = engine.update(rh::State<T>::empty(features + 1).view(), b.view(),
                                   std::span<const T>(b.y), std::span<const T>(b.w), config)
                         .first;
  for (auto _ : st) {
    auto out = engine.update(state.view(), b.view(), std::span<const T>(b.y),
                             std::span<const T>(b.w), config);
    benchmark::DoNotOptimize(out.first.coef.data());
    st.counters["iterations"] = double(out.second.n_iter);
  }
}

// One read of X: the sum of its entries in 16 independent lanes (so the adds vectorize and the
// loop runs at memory speed, not at one add's latency), each thread summing its own slice on
// the engine's pool: what a pass over the batch costs at least on that many threads.
void read_batches(benchmark::State& st, const std::vector<Batch<>>& batches) {
  const std::size_t threads = std::size_t(st.range(2));
  const auto pool = rh::cpu::shared_pool(threads);
  std::vector<double> sums(threads);
  std::size_t next = 0;
  for (auto _ : st) {
    const Batch<>& b = batches[next++ % batches.size()];
    const std::size_t slice = (b.X.size() / threads) & ~std::size_t(15);
    pool->run(threads, [&](std::size_t t) {
      const double* x = b.X.data() + t * slice;
      const std::size_t n = t + 1 == threads ? b.X.size() - t * slice : slice;
      double lanes[16] = {};
      std::size_t i = 0;
      for (; i + 16 <= n; i += 16)
        for (std::size_t j = 0; j < 16; ++j) lanes[j] += x[i + j];
      for (; i < n; ++i) lanes[0] += x[i];
      sums[t] = std::accumulate(std::begin(lanes), std::end(lanes), 0.0);
    });
    benchmark::DoNotOptimize(sums.data());
  }
}

void read_once(benchmark::State& st) {
  read_batches(st, {make_batch(std::size_t(st.range(0)), std::size_t(st.range(1)), 2)});
}

void read_stream(benchmark::State& st) {
  read_batches(st, stream_batches(std::size_t(st.range(0)), std::size_t(st.range(1))));
}

}  // namespace

BENCHMARK(first_solve)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({4096, 16, 1})
    ->Args({4096, 16, 2})
    ->Args({32768, 90, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(steady_batch)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({65536, 32, 1})
    ->Args({65536, 32, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(steady_stream)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({65536, 32, 1})
    ->Args({65536, 32, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(later_batch<double>)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({4096, 16, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(later_batch<float>)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({4096, 16, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(read_once)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({65536, 32, 1})
    ->Args({65536, 32, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(read_stream)
    ->ArgNames({"rows", "features", "threads"})
    ->Args({65536, 32, 1})
    ->Args({65536, 32, 2})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
