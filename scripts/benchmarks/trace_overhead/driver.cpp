// Streams synthetic batches through rh::cpu::Engine::update and prints the fastest pass's time
// (JSON). Built against two native trees by run.sh, to time tracing switched off against the
// tree without tracing, and tracing on against off (docs/tracing.md, "Cost").
//
//   driver ROWS FEATURES BATCHES PASSES MODE      MODE: off | on (on needs RH_TRACE_DRIVER_ON)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <rh/cpu/engine.hpp>

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s ROWS FEATURES BATCHES PASSES off|on\n", argv[0]);
    return 2;
  }
  const std::size_t rows = std::stoul(argv[1]);
  const std::size_t features = std::stoul(argv[2]);
  const int batches = std::stoi(argv[3]);
  const int passes = std::stoi(argv[4]);
  const bool on = std::string(argv[5]) == "on";
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  std::bernoulli_distribution outlier(0.05);
  std::vector<std::vector<double>> X(batches), y(batches);
  const std::vector<double> w(rows, 1.0);
  for (int b = 0; b < batches; ++b) {
    X[b].resize(rows * features);
    y[b].resize(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      double mean = 0.5;
      for (std::size_t j = 0; j < features; ++j) {
        X[b][i * features + j] = normal(rng);
        mean += X[b][i * features + j] * (1.0 + 0.1 * static_cast<double>(j));
      }
      y[b][i] = mean + normal(rng) + (outlier(rng) ? 30.0 : 0.0);
    }
  }
  rh::cpu::Engine engine;
  rh::Config config;
  double best = 1e300;
  for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms up
    auto state = rh::State<double>::empty(features + 1);
    const auto start = std::chrono::steady_clock::now();
    for (int b = 0; b < batches; ++b) {
      const rh::MatrixView<double> view{X[b].data(), rows, features};
      const std::span<const double> response(y[b]), weights(w);
#ifdef RH_TRACE_DRIVER_ON
      rh::TraceSink sink;
      state = engine.update(state, view, response, weights, config, on ? &sink : nullptr).first;
#else
      if (on) return 3;
      state = engine.update(state, view, response, weights, config).first;
#endif
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass > 0) best = std::min(best, seconds);
  }
  std::printf("{\"seconds\": %.9g}\n", best);
  return 0;
}
