// Streams a synthetic contaminated regression problem through the CPU engine, one batch at a
// time, and prints how far the coefficients are from the truth after each batch.
//
// Usage: stream_fit [batches] [rows per batch] [features]
// Exits with status 1 if the final slope error exceeds 0.05 (a regression check).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <rh/cpu/engine.hpp>
#include <rh/error.hpp>
#include <string>
#include <vector>

namespace {

struct Batch {
  std::vector<double> X, y, w;
};

// y = x^T beta + 2 + N(0, 1) noise, with 10% of the responses shifted by +/- 50.
Batch make_batch(std::mt19937_64& rng, std::size_t rows, const std::vector<double>& slopes) {
  std::normal_distribution<double> normal;
  std::bernoulli_distribution outlier(0.1);
  std::bernoulli_distribution positive(0.5);
  const std::size_t p = slopes.size();
  Batch batch{std::vector<double>(rows * p), std::vector<double>(rows),
              std::vector<double>(rows, 1.0)};
  for (std::size_t i = 0; i < rows; ++i) {
    double mean = 2.0;
    for (std::size_t j = 0; j < p; ++j) {
      batch.X[i * p + j] = normal(rng);
      mean += batch.X[i * p + j] * slopes[j];
    }
    batch.y[i] = mean + normal(rng) + (outlier(rng) ? (positive(rng) ? 50.0 : -50.0) : 0.0);
  }
  return batch;
}

std::size_t argument(int argc, char** argv, int index, std::size_t fallback) {
  return argc > index ? std::stoul(argv[index]) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t batches = argument(argc, argv, 1, 20);
  const std::size_t rows = argument(argc, argv, 2, 2000);
  const std::size_t p = argument(argc, argv, 3, 8);

  std::mt19937_64 rng(20261129);
  std::vector<double> slopes(p);
  for (std::size_t j = 0; j < p; ++j) slopes[j] = 1.0 + 0.5 * static_cast<double>(j);

  rh::cpu::Engine engine;
  rh::Config config;  // Huber with an intercept, epsilon = 1.345, no penalty
  auto state = rh::State<double>::empty(p + 1);
  double error = 0.0;
  try {
    for (std::size_t b = 0; b < batches; ++b) {
      const Batch batch = make_batch(rng, rows, slopes);
      auto [next, diagnostics] =
          engine.update(state, rh::MatrixView<double>{batch.X.data(), rows, p},
                        std::span<const double>(batch.y), std::span<const double>(batch.w), config);
      state = std::move(next);
      error = 0.0;
      for (std::size_t j = 0; j < p; ++j)
        error = std::max(error, std::fabs(state.coef[j] - slopes[j]));
      std::printf(
          "batch %3zu  max |coef - truth| = %.5f  intercept = %.4f  solver = %s  iterations = "
          "%lld\n",
          b + 1, error, state.coef[p], std::string(rh::to_string(diagnostics.solver)).c_str(),
          static_cast<long long>(diagnostics.n_iter));
    }
  } catch (const rh::Error& e) {
    std::fprintf(stderr, "update failed: %s\n", e.what());
    return 2;
  }
  return error <= 0.05 ? 0 : 1;
}
