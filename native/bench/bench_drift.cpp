// What the drift test (rh/drift.hpp) costs a batch of the reference shape (32,768 x 90 + an
// intercept, float64) on the CPU engine: the test's host work from a captured probe (J~^-1 A with
// one factorization, V, V^-1 U, the chi-square tail) against a whole later-batch update, which
// includes it. OpenBLAS on one thread, as in the engine.
//
//   build-bench/bench/rh_drift_bench --benchmark_repetitions=9
//       --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstddef>
#include <random>
#include <vector>

#include "dense_solver.hpp"
#include "rh/cpu/engine.hpp"
#include "rh/drift.hpp"

namespace {

constexpr std::size_t kRows = 32'768;

struct Batch {
  std::vector<double> X, y, w;
};

Batch make_batch(std::size_t features, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::student_t_distribution<double> noise(3.0);
  Batch b{std::vector<double>(kRows * features), std::vector<double>(kRows),
          std::vector<double>(kRows, 1.0)};
  for (std::size_t i = 0; i < kRows; ++i) {
    double mean = 1.0;
    for (std::size_t j = 0; j < features; ++j) {
      const double x = normal(rng);
      b.X[i * features + j] = x;
      mean += 0.01 * static_cast<double>(j) * x;
    }
    b.y[i] = mean + noise(rng);
  }
  return b;
}

rh::State<double> first_state(rh::cpu::Engine& engine, const Batch& b, std::size_t features) {
  const rh::State<double> empty = rh::State<double>::empty(features + 1);
  return engine
      .update(empty.view(), rh::MatrixView<double>{b.X.data(), kRows, features},
              std::span<const double>(b.y), std::span<const double>(b.w), rh::Config{})
      .first;
}

void BM_later_batch_update(benchmark::State& state) {
  const auto features = static_cast<std::size_t>(state.range(0));
  openblas_set_num_threads(1);
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = 1});
  const Batch a = make_batch(features, 1), b = make_batch(features, 2);
  const rh::State<double> previous = first_state(engine, a, features);
  for (auto _ : state) {
    auto out = engine.update(previous.view(),
                             rh::MatrixView<double>{b.X.data(), kRows, features},
                             std::span<const double>(b.y), std::span<const double>(b.w),
                             rh::Config{});
    benchmark::DoNotOptimize(out.second.drift_statistic);
  }
}

void BM_drift_test_host_work(benchmark::State& state) {
  const auto features = static_cast<std::size_t>(state.range(0));
  const std::size_t d = features + 1;
  openblas_set_num_threads(1);
  rh::cpu::Engine engine(rh::cpu::EngineOptions{.threads = 1});
  const Batch a = make_batch(features, 1);
  const rh::State<double> previous = first_state(engine, a, features);
  // A probe of the shape the first Newton point gives: A ~ J~ / 1 batch, U of its scale.
  rh::DriftProbe probe;
  probe.captured = true;
  probe.gram.assign(previous.information.begin(), previous.information.end());
  probe.score.assign(d, 0.0);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  for (double& u : probe.score) u = 100.0 * normal(rng);
  probe.score_sq_sum = 0.9 * kRows;
  probe.curvature_sum = 0.8 * kRows;
  rh::cpu::DenseSolver<double> solver;
  solver.resize(d);
  for (auto _ : state) {
    const rh::DriftResult result =
        rh::drift_test(probe, std::span<const double>(previous.information), solver);
    benchmark::DoNotOptimize(result.pvalue);
  }
}

BENCHMARK(BM_later_batch_update)->Arg(16)->Arg(90)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_drift_test_host_work)->Arg(16)->Arg(90)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
