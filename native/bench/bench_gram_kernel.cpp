// The thin-Gram kernel (native/cpu/gram_kernel.hpp) against the library's SYRK, on the engine's
// shapes: 65,536 rows, d = p + 1 (an intercept), the rows cut into the engine's row blocks
// (RowBlocks) and cache-sized chunks (chunk_rows, 256 KiB), one partial Gram per block, blocks on
// the engine's thread pool (1 or 2 threads). Paths, all forming the same d x d lower triangles:
//   staged  the engine's library path: sqrt(c)-scaled rows copied into a staging buffer (as
//           BatchOps::scale_row, stage_rows = max(chunk, 4 d)), then SYRK per stage
//   syrk    the library's SYRK alone, on rows scaled beforehand (untimed)
//   avx2    the kernel's AVX2 + FMA variant, straight from X and c
//   avx512  its AVX-512 variant (the same bits)
//   scalar  the kernel's portable variant
// GFLOP/s counts n d (d + 1) flops per Gram (the lower triangle). OpenBLAS runs on one thread, as
// in the engine (openblas_set_num_threads(1)); the engine's pool threads the blocks.
//
//   build-bench/bench/rh_gram_bench --benchmark_repetitions=15
//       --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true
//       --benchmark_filter='path:[12]/d:(17|33)/'   (the kernel against SYRK)

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "blas.hpp"
#include "gram_kernel.hpp"
#include "rh/cpu/engine.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"

namespace {

constexpr std::size_t kRows = 65'536;
enum Path : int { staged, syrk, avx2, scalar, avx512 };

template <class T>
struct Problem {
  std::size_t features, dim, chunk;
  std::vector<T> X, c, scaled;
  rh::cpu::RowBlocks blocks{kRows};
  std::vector<T> partials;

  explicit Problem(std::size_t d)
      : features(d - 1), dim(d), chunk(rh::cpu::chunk_rows(kRows, d - 1, sizeof(T), rh::cpu::default_chunk_bytes)) {
    std::mt19937_64 rng(17);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.5, 2.0);
    X.resize(kRows * features);
    for (T& x : X) x = static_cast<T>(normal(rng));
    c.resize(kRows);
    for (T& w : c) w = static_cast<T>(uniform(rng));
    scaled.resize(kRows * dim);
    for (std::size_t i = 0; i < kRows; ++i) scale_row(i, scaled.data() + i * dim);
    partials.assign(blocks.count() * dim * dim, T{0});
  }
  void scale_row(std::size_t i, T* out) const {
    const T root = std::sqrt(c[i]);
    for (std::size_t j = 0; j < features; ++j) out[j] = root * X[i * features + j];
    out[features] = root;
  }

  void block(Path path, std::size_t b) {
    T* partial = partials.data() + b * dim * dim;
    const std::size_t lo = blocks.begin(b), hi = blocks.end(b);
    if (path == syrk) {
      rh::cpu::blas::syrk_lower(hi - lo, dim, scaled.data() + lo * dim, T{0}, partial, dim);
      return;
    }
    if (path == staged) {
      thread_local std::vector<T> staging;
      const std::size_t stage = std::max(chunk, 4 * dim);
      staging.resize(std::max(staging.size(), stage * dim));
      std::size_t staged_rows = 0;
      bool first = true;
      for (std::size_t i = lo; i < hi; ++i) {
        scale_row(i, staging.data() + staged_rows++ * dim);
        if (staged_rows == stage || i + 1 == hi) {
          rh::cpu::blas::syrk_lower(staged_rows, dim, staging.data(), first ? T{0} : T{1}, partial, dim);
          first = false;
          staged_rows = 0;
        }
      }
      return;
    }
    thread_local std::vector<std::size_t> rows;
    rows.resize(std::max(rows.size(), chunk));
    std::fill_n(partial, dim * dim, T{0});
    const auto isa = path == avx2     ? rh::cpu::gram::Isa::avx2
                     : path == avx512 ? rh::cpu::gram::Isa::avx512
                                      : rh::cpu::gram::Isa::scalar;
    for (std::size_t k = lo; k < hi; k += chunk) {
      const std::size_t end = std::min(hi, k + chunk);
      std::size_t count = 0;
      for (std::size_t i = k; i < end; ++i) {
        if (c[i] != T{0}) rows[count++] = i;
      }
      rh::cpu::gram::accumulate_lower(isa, X.data(), features, true, c.data(), rows.data(), count,
                                      partial);
    }
  }
};

template <class T>
void BM_Gram(benchmark::State& state) {
  const auto path = static_cast<Path>(state.range(0));
  const auto dim = static_cast<std::size_t>(state.range(1));
  const auto threads = static_cast<std::size_t>(state.range(2));
  if (path == avx2 && !rh::cpu::gram::cpu_has_avx2_fma()) {
    state.SkipWithError("no AVX2 + FMA");
    return;
  }
  if (path == avx512 && !rh::cpu::gram::cpu_has_avx512()) {
    state.SkipWithError("no AVX-512");
    return;
  }
  openblas_set_num_threads(1);
  Problem<T> problem(dim);
  rh::cpu::ThreadPool pool(threads);
  const std::function<void(std::size_t)> task = [&](std::size_t b) { problem.block(path, b); };
  pool.run(problem.blocks.count(), task);  // warm-up
  for (auto _ : state) {
    pool.run(problem.blocks.count(), task);
    benchmark::DoNotOptimize(problem.partials.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      static_cast<double>(kRows * dim * (dim + 1)) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  static const char* names[] = {"staged", "syrk", "avx2", "scalar", "avx512"};
  state.SetLabel(names[path]);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"path", "d", "threads"});
  for (int d : {5, 9, 17, 33, 65, 91, 129, 257}) {
    for (int threads : {1, 2}) {
      for (int path : {staged, syrk, avx2, scalar, avx512}) {
        if (path == scalar && (threads == 2 || d > 129)) continue;
        b->Args({path, d, threads});
      }
    }
  }
  // The minimum next to the mean, median and stddev: on a shared machine the least disturbed
  // repetition.
  b->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics(
      "min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

BENCHMARK(BM_Gram<double>)->Apply(Args);
BENCHMARK(BM_Gram<float>)->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
