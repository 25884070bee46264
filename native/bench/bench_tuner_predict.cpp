// One prediction of a tuner tree ensemble: 100 trees of depth 6 on 48 features (docs/tuner.md,
// "C++ inference"; target < 1 us). Run: build-bench/bench/rh_tuner_bench.
#include <benchmark/benchmark.h>

#include <random>

#include "model_files.hpp"
#include "rh/tuner/model.hpp"

namespace {

void run(benchmark::State& state, std::size_t n_outputs) {
  const rh::tuner::Model model = rh::tuner::Model::from_bytes(
      rh::tuner::testing::random_forest_file(100, 6, 48, n_outputs, 42));
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  constexpr std::size_t kRows = 256;  // cycle through rows so the branch history cannot learn one
  std::vector<double> xs(kRows * 48);
  for (double& v : xs) v = unit(rng);
  std::vector<double> out(n_outputs);
  std::size_t row = 0;
  for (auto _ : state) {
    model.predict(std::span<const double>(xs).subspan(row * 48, 48), out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    row = (row + 1) % kRows;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_TunerPredictRegressor(benchmark::State& state) { run(state, 1); }
void BM_TunerPredictClassifier8(benchmark::State& state) { run(state, 8); }

}  // namespace

BENCHMARK(BM_TunerPredictRegressor);
BENCHMARK(BM_TunerPredictClassifier8);
BENCHMARK_MAIN();
