// The first solve's Gram: after the least-squares start (every row inside), the first Newton
// matrix is that Gram less the outside rows, corrected per row block (gram_cache.cpp), and the
// row sums of the passes run in lanes by row index (row_kernels.hpp LaneSum).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "problems.hpp"
#include "row_kernels.hpp"

namespace {

using rh::test::update;

// Any cut of the rows into calls gives the same bits: the lanes are the rows' indices mod 8.
TEST(LaneSum, SameBitsForEveryCutOfTheRows) {
  std::vector<double> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = std::sin(static_cast<double>(i)) * std::pow(10.0, static_cast<double>(i % 17) - 8);
  }
  rh::cpu::LaneSum whole;
  whole.add(values.data(), 0, values.size());
  for (const std::size_t cut : {1u, 3u, 7u, 8u, 13u, 64u, 999u}) {
    rh::cpu::LaneSum pieces;
    for (std::size_t lo = 0; lo < values.size(); lo += cut) {
      const std::size_t hi = std::min(values.size(), lo + cut);
      pieces.add(values.data() + lo, lo, hi - lo);
    }
    EXPECT_EQ(pieces.total(), whole.total()) << "cut " << cut;
  }
  double naive = 0.0;
  for (const double v : values) naive += v;
  EXPECT_NEAR(whole.total(), naive, 1e-12 * std::fabs(naive) + 1e-20);
}

// Student-t(3) noise: about a quarter of the rows outside tau = 1.345 (symmetric, so the
// least-squares start sits near the answer, as on the benchmark's batches).
rh::test::Batch<double> student_t_batch(std::uint64_t seed, std::size_t rows, std::size_t p) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::chi_squared_distribution<double> chi(3.0);
  rh::test::Batch<double> batch{rows, p, std::vector<double>(rows * p), std::vector<double>(rows),
                                std::vector<double>(rows, 1.0)};
  for (std::size_t i = 0; i < rows; ++i) {
    double fit = 1.0;
    for (std::size_t j = 0; j < p; ++j) {
      batch.X[i * p + j] = normal(rng);
      fit += (0.5 + 0.1 * static_cast<double>(j)) * batch.X[i * p + j];
    }
    batch.y[i] = fit + normal(rng) / std::sqrt(chi(rng) / 3.0);
  }
  return batch;
}

// A first batch with about a quarter of its rows outside tau at the start: its first Newton
// matrix comes from the start's Gram by a downdate over many rows (more than rows / 8), on the
// pool's row blocks. The result is the same bits on 1 and 2 threads, and the information is the
// Gram of the final point's inside rows.
TEST(FirstSolve, GramDowndateIsThreadIndependentAndExact) {
  constexpr std::size_t p = 7;
  constexpr std::size_t d = p + 1;
  constexpr double tau = 1.345;
  auto batch = student_t_batch(31, 40000, p);
  for (std::size_t i = 0; i < batch.rows; i += 5) batch.w[i] = 2.5;
  rh::Config config;
  config.tau = tau;
  rh::cpu::Engine one(rh::cpu::EngineOptions{.threads = 1});
  rh::cpu::Engine two(rh::cpu::EngineOptions{.threads = 2});
  const auto empty = rh::State<double>::empty(d);
  const auto [a, a_diag] = update(one, empty, batch, config);
  const auto [b, b_diag] = update(two, empty, batch, config);
  ASSERT_TRUE(a_diag.converged);
  EXPECT_EQ(a.coef, b.coef);
  EXPECT_EQ(a.information, b.information);
  EXPECT_EQ(a_diag.objective, b_diag.objective);

  std::vector<double> gram(d * d, 0.0);
  std::size_t outside = 0;
  for (std::size_t i = 0; i < batch.rows; ++i) {
    const double* x = batch.X.data() + i * p;
    double r = batch.y[i] - a.coef[p];
    for (std::size_t j = 0; j < p; ++j) r -= x[j] * a.coef[j];
    ASSERT_GT(std::fabs(std::fabs(r) - tau), 1e-9);
    if (std::fabs(r) > tau) {
      ++outside;
      continue;
    }
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t k = 0; k < d; ++k) {
        gram[j * d + k] += batch.w[i] * (j < p ? x[j] : 1.0) * (k < p ? x[k] : 1.0);
      }
    }
  }
  EXPECT_GT(outside, batch.rows / 5);  // the downdate's case, not the rows / 8 one
  for (std::size_t k = 0; k < d * d; ++k) {
    EXPECT_NEAR(a.information[k], gram[k], 1e-10 * std::fabs(gram[k]) + 1e-9) << "entry " << k;
  }
}

}  // namespace
