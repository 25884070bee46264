#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <rh/weighted_stats.hpp>
#include <vector>

namespace {

double wmedian(const std::vector<double>& v, const std::vector<double>& w) {
  return rh::weighted_median(std::span<const double>(v), std::span<const double>(w));
}

TEST(WeightedMedian, UnitWeightsGiveTheLowerMedian) {
  EXPECT_EQ(wmedian({4, 1, 3, 2}, {1, 1, 1, 1}), 2.0);  // cum 2 >= half 2 at value 2
  EXPECT_EQ(wmedian({5, 1, 3}, {1, 1, 1}), 3.0);
}

TEST(WeightedMedian, WeightsMoveTheMedian) {
  EXPECT_EQ(wmedian({1, 2, 3}, {1, 1, 5}), 3.0);
  EXPECT_EQ(wmedian({1, 2, 3}, {3, 1, 1}), 1.0);
}

TEST(WeightedMedian, ZeroWeightsAreIgnored) {
  EXPECT_EQ(wmedian({-100, 1, 2, 3, 100}, {0, 1, 1, 1, 0}), 2.0);
  // A zero-weight value between the halves is never the first to reach half the total.
  EXPECT_EQ(wmedian({1, 2, 3}, {1, 0, 1}), 1.0);
  EXPECT_EQ(wmedian({1, 2, 3}, {0.5, 0, 1}), 3.0);
}

TEST(WeightedMedian, TiesKeepInputOrderAndTheirTotalWeight) {
  EXPECT_EQ(wmedian({2, 1, 2, 2, 3}, {1, 1, 1, 1, 1}), 2.0);
  EXPECT_EQ(wmedian({7, 7, 7}, {0, 0, 1}), 7.0);
}

TEST(WeightedMedian, ExactlyHalfIsReached) {
  // cum = 1, 2, 4 with half = 2: the second value.
  EXPECT_EQ(wmedian({10, 20, 30}, {1, 1, 2}), 20.0);
}

TEST(WeightedMedian, ComparesFloat32ValuesInFloat32) {
  const std::vector<float> v = {0.1f, 0.3f, 0.2f};
  const std::vector<float> w = {1, 1, 1};
  EXPECT_EQ(rh::weighted_median(std::span<const float>(v), std::span<const float>(w)),
            static_cast<double>(0.2f));
}

// The definition read literally: a stable sort of indices, sequential float64 sums.
double wmedian_by_definition(const std::vector<double>& v, const std::vector<double>& w) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  double total = 0.0;
  for (const std::size_t i : order) total += w[i];
  double cumulative = 0.0;
  for (const std::size_t i : order) {
    cumulative += w[i];
    if (cumulative >= 0.5 * total) return v[i];
  }
  return v[order.back()];
}

TEST(WeightedMedian, SelectionAndSortAgreeWithTheDefinition) {
  // Integer weights take the selection path, fractional ones the sort; many ties and zeros.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + rng() % 60;
    std::vector<double> v(n);
    std::vector<double> integer_w(n);
    std::vector<double> fractional_w(n);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = static_cast<double>(static_cast<int>(rng() % 9) - 4) * 0.5;
      integer_w[i] = static_cast<double>(rng() % 4);
      fractional_w[i] = static_cast<double>(rng() % 7) * 0.1;
    }
    integer_w[rng() % n] += 1.0;  // a positive total
    fractional_w[rng() % n] += 0.3;
    EXPECT_EQ(wmedian(v, integer_w), wmedian_by_definition(v, integer_w));
    EXPECT_EQ(wmedian(v, fractional_w), wmedian_by_definition(v, fractional_w));
    // Unit weights take the order statistic; the MAD's deviations too.
    const std::vector<double> units(n, 1.0);
    EXPECT_EQ(wmedian(v, units), wmedian_by_definition(v, units));
    const double center = wmedian_by_definition(v, units);
    std::vector<double> deviations(n);
    for (std::size_t i = 0; i < n; ++i) deviations[i] = std::fabs(v[i] - center);
    EXPECT_EQ(rh::weighted_mad(std::span<const double>(v), std::span<const double>(units)),
              wmedian_by_definition(deviations, units));
  }
}

TEST(WeightedMad, IsTheWeightedMedianOfAbsoluteDeviations) {
  const std::vector<double> v = {1, 2, 3, 4, 100};
  const std::vector<double> w = {1, 1, 1, 1, 1};
  // median 3; deviations 2, 1, 0, 1, 97 -> lower median 1.
  EXPECT_EQ(rh::weighted_mad(std::span<const double>(v), std::span<const double>(w)), 1.0);
}

TEST(WeightedStd, MatchesTheDefinition) {
  const std::vector<double> v = {1, 3};
  const std::vector<double> w = {1, 3};
  // mean 2.5; variance (1 * 2.25 + 3 * 0.25) / 4 = 0.75.
  EXPECT_DOUBLE_EQ(rh::weighted_std(std::span<const double>(v), std::span<const double>(w)),
                   std::sqrt(0.75));
}

}  // namespace
