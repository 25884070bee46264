// The regime screen's start gradient (rh/screen.hpp) against its definition written out plainly:
// medians by a full sort, the product row by row.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "rh/error.hpp"
#include "rh/screen.hpp"

namespace {

double sorted_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

template <class T>
struct Screen {
  std::vector<T> x;
  std::vector<double> y;
  std::size_t rows, cols;

  Screen(std::size_t n, std::size_t p, unsigned seed) : rows(n), cols(p) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    std::student_t_distribution<double> noise(3.0);
    for (std::size_t i = 0; i < n * p; ++i) x.push_back(static_cast<T>(normal(rng)));
    for (std::size_t i = 0; i < n; ++i) y.push_back(2.0 * x[i * p] + noise(rng) + 3.0);
  }

  // The definition: r0 = y - median(y) (or y), tau = factor * median |r0 - centre|, g = |X'psi|/n.
  std::pair<std::vector<double>, double> reference(std::optional<double> tau, double factor,
                                                   bool intercept) const {
    std::vector<double> r0 = y;
    if (intercept) {
      const double m = sorted_median(y);
      for (double& r : r0) r -= m;
    }
    double t = tau.value_or(0.0);
    if (!tau) {
      const double centre = intercept ? 0.0 : sorted_median(r0);
      std::vector<double> dev;
      for (double r : r0) dev.push_back(std::abs(r - centre));
      t = factor * sorted_median(dev);
    }
    std::vector<double> g(cols, 0.0);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        g[j] += static_cast<double>(x[i * cols + j]) * std::clamp(r0[i], -t, t);
    for (double& v : g) v = std::abs(v) / static_cast<double>(rows);
    return {g, t};
  }
};

template <class T>
class StartGradient : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(StartGradient, Types);

TYPED_TEST(StartGradient, IsItsDefinitionWithAndWithoutAnInterceptAndAGivenTau) {
  for (std::size_t n : {1U, 2U, 9U, 2048U}) {
    for (std::size_t p : {1U, 5U, 33U}) {
      const Screen<TypeParam> s(n, p, static_cast<unsigned>(n * 100 + p));
      for (bool intercept : {true, false}) {
        for (std::optional<double> tau : {std::optional<double>{}, std::optional<double>{0.8}}) {
          std::vector<double> g(p, -1.0);
          const double t =
              rh::start_gradient<TypeParam>(s.x, n, p, s.y, tau, 1.5, intercept, g);
          const auto [g_ref, t_ref] = s.reference(tau, 1.5, intercept);
          if (!(t_ref > 0.0)) {  // one row with an intercept: a zero scale, nothing to tell
            EXPECT_EQ(t, 0.0);
            continue;
          }
          EXPECT_EQ(t, t_ref) << n << " x " << p;
          const double scale = *std::max_element(g_ref.begin(), g_ref.end());
          for (std::size_t j = 0; j < p; ++j) EXPECT_NEAR(g[j], g_ref[j], 1e-12 * scale) << j;
        }
      }
    }
  }
}

TYPED_TEST(StartGradient, CannotTellFromTargetsThatAreNotFiniteOrAZeroScale) {
  Screen<TypeParam> s(64, 3, 7);
  std::vector<double> g(3, -1.0);
  s.y[10] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(rh::start_gradient<TypeParam>(s.x, 64, 3, s.y, std::nullopt, 1.5, true, g), 0.0);
  EXPECT_EQ(g, std::vector<double>(3, 0.0));
  std::fill(s.y.begin(), s.y.end(), 2.0);  // every residual 0 at the median: MAD 0
  EXPECT_EQ(rh::start_gradient<TypeParam>(s.x, 64, 3, s.y, std::nullopt, 1.5, true, g), 0.0);
  EXPECT_EQ(rh::start_gradient<TypeParam>({}, 0, 3, {}, std::nullopt, 1.5, true, g), 0.0);
}

TYPED_TEST(StartGradient, RefusesShapesThatDisagree) {
  const Screen<TypeParam> s(8, 2, 1);
  std::vector<double> g(3);
  EXPECT_THROW(rh::start_gradient<TypeParam>(s.x, 8, 2, s.y, std::nullopt, 1.5, true, g),
               rh::InvalidArgument);
}

}  // namespace
