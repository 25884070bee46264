// The later batch's row kernels: the row dot products (row_dots.hpp) against their written-out
// order bit for bit and a long-double dot product within rounding, and the information pass's
// per-row terms (row_kernels.hpp information_rows) against the formulas row by row.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gram_kernel.hpp"
#include "row_dots.hpp"
#include "row_kernels.hpp"

namespace {

// The order row_dots.hpp states: 8 lanes of fused multiply-add chains, then (v0 + v1) + (v2 + v3)
// with v_k = s_k + s_(k+4).
template <class T>
T stated_order(const T* x, std::size_t features, const T* v) {
  std::array<T, 8> s{};
  for (std::size_t j = 0; j < (features + 7) / 8 * 8; ++j) {
    s[j % 8] = std::fma(j < features ? x[j] : T{0}, j < features ? v[j] : T{0}, s[j % 8]);
  }
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

template <class T>
void expect_row_dots() {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (std::size_t features : {1, 3, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 90, 91}) {
    for (std::size_t rows : {1, 3, 4, 7, 101}) {
      std::vector<T> X(rows * features), v(features), out(rows);
      for (T& x : X) x = static_cast<T>(normal(rng) * std::pow(10.0, normal(rng)));
      for (T& x : v) x = static_cast<T>(normal(rng));
      rh::cpu::row_dots(X.data(), rows, features, v.data(), out.data());
      std::vector<T> portable(rows);
      rh::cpu::detail::row_dots_portable(X.data(), rows, features, v.data(), portable.data());
      EXPECT_EQ(out, portable) << "the variant this CPU runs against the portable one";
      for (std::size_t i = 0; i < rows; ++i) {
        const T* x = X.data() + i * features;
        EXPECT_EQ(out[i], stated_order(x, features, v.data())) << features << " x " << rows;
        long double exact = 0.0L, scale = 0.0L;
        for (std::size_t j = 0; j < features; ++j) {
          exact += static_cast<long double>(x[j]) * v[j];
          scale += std::fabs(static_cast<long double>(x[j]) * v[j]);
        }
        const long double bound = (features + 2) * std::numeric_limits<T>::epsilon() * scale;
        EXPECT_LE(std::fabs(static_cast<long double>(out[i]) - exact), bound);
      }
    }
  }
}

// The variant this CPU runs (AVX2 + FMA where it has them) gives the stated order's bits, so no
// result depends on which one runs.
TEST(RowDots, StatedOrderBitForBitAndWithinRounding) {
  expect_row_dots<double>();
  expect_row_dots<float>();
}

// add_weighted_rows: one fused multiply-add chain per column in row order, the variant this CPU
// runs against the portable one bit for bit, the same bits however the rows are cut into calls
// (a block's chunks), and within rounding of a long-double sum.
template <class T>
void expect_weighted_rows() {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> normal;
  for (std::size_t features : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 90, 91}) {
    for (std::size_t rows : {0, 1, 3, 4, 7, 101}) {
      std::vector<T> X(rows * features), s(rows), start(features);
      for (T& x : X) x = static_cast<T>(normal(rng) * std::pow(10.0, normal(rng)));
      for (T& x : s) x = static_cast<T>(normal(rng));
      for (T& x : start) x = static_cast<T>(normal(rng));
      std::vector<T> out = start, portable = start, chained = start, in_parts = start;
      rh::cpu::add_weighted_rows(X.data(), rows, features, s.data(), out.data());
      rh::cpu::detail::add_weighted_rows_portable(X.data(), rows, features, s.data(),
                                                  portable.data());
      EXPECT_EQ(out, portable) << "the variant this CPU runs against the portable one";
      for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < features; ++j) {
          chained[j] = std::fma(X[i * features + j], s[i], chained[j]);
        }
      }
      EXPECT_EQ(out, chained) << features << " x " << rows << ": the stated order";
      const std::size_t cut = rows / 3;
      rh::cpu::add_weighted_rows(X.data(), cut, features, s.data(), in_parts.data());
      rh::cpu::add_weighted_rows(X.data() + cut * features, rows - cut, features, s.data() + cut,
                                 in_parts.data());
      EXPECT_EQ(out, in_parts) << "rows cut into two calls";
      for (std::size_t j = 0; j < features; ++j) {
        long double exact = start[j], scale = std::fabs(static_cast<long double>(start[j]));
        for (std::size_t i = 0; i < rows; ++i) {
          exact += static_cast<long double>(X[i * features + j]) * s[i];
          scale += std::fabs(static_cast<long double>(X[i * features + j]) * s[i]);
        }
        const long double bound = (rows + 2) * std::numeric_limits<T>::epsilon() * scale;
        EXPECT_LE(std::fabs(static_cast<long double>(out[j]) - exact), bound);
      }
    }
  }
}

TEST(AddWeightedRows, StatedOrderBitForBitAndWithinRounding) {
  expect_weighted_rows<double>();
  expect_weighted_rows<float>();
}

TEST(InformationRows, TermsAndBandWeightsFollowTheFormulas) {
  const std::vector<double> r = {-3.0, -1.2, -1.0, -0.5, 0.0, -0.0, 0.4, 0.99, 1.0, 1.1, 2.5, 7.0};
  const std::size_t n = r.size();
  std::vector<double> w(n), kept(n);
  for (std::size_t i = 0; i < n; ++i) {
    w[i] = 0.5 + 0.25 * static_cast<double>(i % 3);
    kept[i] = std::fabs(r[i]) <= 1.0 ? w[i] : 0.0;
  }
  const double tau = 1.0, two_h = 0.4;
  for (bool smoothed : {false, true}) {
    std::vector<double> terms(3 * n), added(n), removed(n), outliers(n), inside(n);
    rh::cpu::information_rows(r.data(), w.data(), kept.data(), n, tau, two_h, smoothed,
                              terms.data(), terms.data() + n, terms.data() + 2 * n,
                              smoothed ? added.data() : nullptr, smoothed ? removed.data() : nullptr,
                              outliers.data(), inside.data());
    for (std::size_t i = 0; i < n; ++i) {
      const double psi = std::clamp(r[i], -tau, tau);
      const double c = smoothed ? std::clamp(0.5 + (tau - std::fabs(r[i])) / two_h, 0.0, 1.0)
                                : (std::fabs(r[i]) <= tau ? 1.0 : 0.0);
      EXPECT_EQ(terms[i], w[i] * psi * psi) << i;
      EXPECT_EQ(terms[n + i], w[i] * c) << i;
      EXPECT_EQ(terms[2 * n + i], w[i] * c * c) << i;
      const bool in_q = kept[i] != 0.0;
      if (smoothed) {
        EXPECT_EQ(added[i], in_q ? 0.0 : w[i] * c) << i;
        EXPECT_EQ(removed[i], in_q ? w[i] - w[i] * c : 0.0) << i;
      }
      EXPECT_EQ(outliers[i], in_q ? 0.0 : w[i]) << i;
      EXPECT_EQ(inside[i], in_q ? w[i] * psi * psi : 0.0) << i;
    }
  }
}

}  // namespace
