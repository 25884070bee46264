#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <cmath>
#include <numeric>
#include <random>
#include <type_traits>
#include <rh/order_statistic.hpp>
#include <rh/weighted_stats.hpp>
#include <utility>
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

// order_statistic against nth_element on all the values, bit for bit, on sets above the sampled
// selection's threshold: continuous values, heavy ties, signed zeros at rank k, NaN, infinities,
// and a set whose strided sample sees other values than the rest (its bounds miss rank k).
template <class V>
void expect_same_order_statistic(const std::vector<V>& values, std::size_t k) {
  const auto value = [&](std::size_t i) { return values[i]; };
  const V fast = rh::detail::order_statistic<V>(values.size(), k, value);
  const V full = rh::detail::order_statistic_full<V>(values.size(), k, value);
  using Bits = std::conditional_t<sizeof(V) == 8, std::uint64_t, std::uint32_t>;
  EXPECT_EQ(std::bit_cast<Bits>(fast), std::bit_cast<Bits>(full)) << "n " << values.size() << " k " << k;
}

TEST(OrderStatistic, IsNthElementsValueBitForBit) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  for (const std::size_t n : {std::size_t{100}, std::size_t{8191}, std::size_t{8192},
                              std::size_t{20001}, std::size_t{65536}}) {
    std::vector<double> continuous(n);
    std::vector<double> ties(n);
    std::vector<float> single(n);
    for (std::size_t i = 0; i < n; ++i) {
      continuous[i] = normal(rng) / std::sqrt(std::max(1e-3, std::fabs(normal(rng))));
      ties[i] = static_cast<double>(static_cast<int>(rng() % 7) - 3);
      single[i] = static_cast<float>(continuous[i]);
    }
    for (const std::size_t k : {std::size_t{0}, (n - 1) / 2, n / 3, n - 1}) {
      expect_same_order_statistic(continuous, k);
      expect_same_order_statistic(ties, k);  // rank (n - 1) / 2 is a zero: the full selection
      expect_same_order_statistic(single, k);
    }
  }
}

TEST(OrderStatistic, SignedZerosNaNAndInfinitiesTakeTheFullSelection) {
  const std::size_t n = 30000;
  std::vector<double> zeros(n);
  for (std::size_t i = 0; i < n; ++i) zeros[i] = i % 3 == 0 ? -0.0 : (i % 3 == 1 ? 0.0 : 1.0 + i);
  expect_same_order_statistic(zeros, (n - 1) / 2);
  expect_same_order_statistic(zeros, n / 4);
  std::vector<double> with_nan(n);
  for (std::size_t i = 0; i < n; ++i) with_nan[i] = static_cast<double>((i * 7919) % n);
  with_nan[12345] = std::numeric_limits<double>::quiet_NaN();
  expect_same_order_statistic(with_nan, (n - 1) / 2);
  std::vector<double> infinite(n);
  for (std::size_t i = 0; i < n; ++i) {
    infinite[i] = i % 2 == 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(i);
  }
  expect_same_order_statistic(infinite, (n - 1) / 2);
  expect_same_order_statistic(infinite, n - 1);
}

TEST(OrderStatistic, ASampleThatMissesRankKStillGivesItExactly) {
  // Every value the strided sample reads (i = j n / m) is large, the others small: the sample's
  // bounds say nothing about rank k, and the full selection answers.
  const std::size_t n = 65536;
  const std::size_t m = rh::detail::selection_sample;
  std::vector<double> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = 1.0 + static_cast<double>((i * 2654435761u) % 1000);
  for (std::size_t j = 0; j < m; ++j) values[j * n / m] = 1e6 + static_cast<double>(j);
  expect_same_order_statistic(values, (n - 1) / 2);
}

TEST(WeightedMad, UnitWeightsOnALargeSetMatchTheDefinitionsMedians) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  const std::size_t n = 50001;
  std::vector<double> v(n);
  for (double& x : v) x = 3.0 + normal(rng) * 2.0;
  const std::vector<double> units(n, 1.0);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const double center = sorted[(n - 1) / 2];
  EXPECT_EQ(wmedian(v, units), center);
  std::vector<double> deviations(n);
  for (std::size_t i = 0; i < n; ++i) deviations[i] = std::fabs(v[i] - center);
  std::sort(deviations.begin(), deviations.end());
  EXPECT_EQ(rh::weighted_mad(std::span<const double>(v), std::span<const double>(units)),
            deviations[(n - 1) / 2]);
}

// nth_element's k-th smallest of `values` (order_statistic_full): the reference.
double kth_of(const std::vector<double>& values, std::size_t k) {
  return rh::detail::order_statistic_full<double>(
      values.size(), k, [&](std::size_t i) { return values[i]; });
}

// n values around 2 with Student-t(3) tails, as a stream's residuals.
std::vector<double> t3_values(std::mt19937_64& rng, std::size_t n) {
  std::student_t_distribution<double> t(3.0);
  std::vector<double> values(n);
  for (double& v : values) v = 2.0 + t(rng);
  return values;
}

// order_statistic over `values` for rank k with `guess` first, counting its window passes.
double select_with_guess(const std::vector<double>& values, std::size_t k,
                         const rh::detail::SelectionGuess<double>& guess, int& passes) {
  const auto value = [&](std::size_t i) { return values[i]; };
  passes = 0;
  return rh::detail::order_statistic<double>(
      values.size(), k, value,
      [&](double lo, double hi, double* between, std::size_t capacity) {
        ++passes;
        return rh::detail::gather_window<double>(values.size(), value, lo, hi, between, capacity);
      },
      &guess);
}

// A guessed window (a stream's last batch's) that holds rank k answers in one window pass; one
// that misses it (too far, too full, NaN) costs that pass and the sample's after it; either way
// the value is nth_element's.
TEST(OrderStatistic, AGuessedWindowAnswersInOnePassAndAMissStillGivesRankK) {
  std::mt19937_64 rng(3);
  const std::size_t n = 65536;
  const std::size_t k = (n - 1) / 2;
  const std::vector<double> values = t3_values(rng, n);
  const double full = kth_of(values, k);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  int passes = 0;
  EXPECT_EQ(select_with_guess(values, k, {full - 0.05, full + 0.05}, passes), full);
  EXPECT_EQ(passes, 1);
  for (const auto& miss : std::vector<rh::detail::SelectionGuess<double>>{
           {full + 0.01, full + 0.05},  // rank k below the window
           {full - 50.0, full + 50.0},  // every value inside: past its capacity
           {nan, full}}) {
    EXPECT_EQ(select_with_guess(values, k, miss, passes), full);
    EXPECT_EQ(passes, miss.lo <= miss.hi ? 2 : 1);  // a NaN bound skips the guess
  }
}

// Below the sample's size (sampled_selection_min) a guessed window is still tried, and may hold up
// to half the values: a hit answers in that one pass, a miss falls to nth_element on all of them
// (no sample); below guessed_selection_min no guess is tried. The value is nth_element's
// throughout, including a rank whose value is zero (nth_element's own choice among +0 and -0).
TEST(OrderStatistic, ASmallSetTriesTheGuessThenSelectsOnAll) {
  std::mt19937_64 rng(5);
  for (const std::size_t n : {std::size_t{600}, std::size_t{3000}, std::size_t{8191},
                              rh::detail::guessed_selection_min,
                              rh::detail::guessed_selection_min - 1}) {
    SCOPED_TRACE(n);
    const std::size_t k = (n - 1) / 2;
    const std::vector<double> values = t3_values(rng, n);
    const double full = kth_of(values, k);
    const int tried = n >= rh::detail::guessed_selection_min ? 1 : 0;
    int passes = 0;
    // A window as wide as the guess a stream's last batch gives (13 MADs / sqrt(n) each side).
    const double half = 13.0 * 0.8 / std::sqrt(static_cast<double>(n));
    EXPECT_EQ(select_with_guess(values, k, {full - half, full + half}, passes), full);
    EXPECT_EQ(passes, tried);
    for (const auto& miss : std::vector<rh::detail::SelectionGuess<double>>{
             {full + 0.01, full + 0.05}, {full - 50.0, full + 50.0}}) {
      EXPECT_EQ(select_with_guess(values, k, miss, passes), full);
      EXPECT_EQ(passes, tried);
    }
  }
  // Rank k's value is 0 among signed zeros: the window answers nothing, nth_element decides.
  std::vector<double> zeros(3000);
  for (std::size_t i = 0; i < zeros.size(); ++i) {
    zeros[i] = i % 3 == 0 ? 0.0 : i % 3 == 1 ? -0.0 : 1.0 + static_cast<double>(i);
  }
  const std::size_t k = 1000;
  const double expected = kth_of(zeros, k);
  int passes = 0;
  const double got = select_with_guess(zeros, k, {-1.0, 1.0}, passes);
  EXPECT_EQ(std::signbit(got), std::signbit(expected));
  EXPECT_EQ(got, expected);
}

// weighted_mad with a ScaleGuess carried from batch to batch: the same median and MAD as without,
// bit for bit, whether the guess holds (alike batches), misses (a batch shifted and spread
// differently), is past float32's range or holds an exact fit's zero MAD; and it leaves the
// batch's median and MAD as the next guess.
template <class V>
void expect_guessed_mad_is_the_mad(std::size_t n) {
  std::mt19937_64 rng(9);
  std::student_t_distribution<double> t(3.0);
  const std::vector<V> units(n, V{1});
  rh::ScaleGuess guess;
  for (const double shift : {0.0, 0.0, 0.0, 40.0, 40.0, 0.0}) {
    std::vector<V> v(n);
    for (V& x : v) x = static_cast<V>(shift + (1.0 + shift) * t(rng));
    const std::span<const V> values(v);
    const double expected = rh::weighted_mad(values, std::span<const V>(units));
    const double center = rh::weighted_median(values, std::span<const V>(units));
    EXPECT_EQ(rh::weighted_mad(values, std::span<const V>(units), &guess), expected);
    EXPECT_EQ(guess.center, center);
    EXPECT_EQ(guess.deviation, expected);
  }
  guess = {.center = 1e300, .deviation = 1e300};
  std::vector<V> v(n);
  for (V& x : v) x = static_cast<V>(t(rng));
  EXPECT_EQ(rh::weighted_mad(std::span<const V>(v), std::span<const V>(units), &guess),
            rh::weighted_mad(std::span<const V>(v), std::span<const V>(units)));
  const std::vector<V> constant(n, V{5});
  EXPECT_EQ(rh::weighted_mad(std::span<const V>(constant), std::span<const V>(units), &guess), 0.0);
  EXPECT_EQ(guess.deviation, 0.0);
}

TEST(WeightedMad, AGuessFromTheLastBatchGivesTheSameMedianAndMad) {
  // Batches of the sampled selections' sizes and of smaller ones (a guess, then all values).
  for (const std::size_t n : {65536, 3000, 600}) {
    SCOPED_TRACE(n);
    expect_guessed_mad_is_the_mad<double>(n);
    expect_guessed_mad_is_the_mad<float>(n);
  }
}

// weighted_median_and_mad's two numbers are weighted_median's and weighted_mad's, bit for bit,
// for each kind of weights (units, integers, fractions): the first batch's pilot scale gives
// the intercept's start from it instead of selecting on y again.
TEST(WeightedMad, WithItsMedianIsTheMedianAndTheMad) {
  std::mt19937_64 rng(11);
  std::student_t_distribution<double> t(3.0);
  std::uniform_int_distribution<int> counts(0, 3);
  std::uniform_real_distribution<double> fractions(0.1, 2.0);
  for (const std::size_t n : {std::size_t{7}, std::size_t{600}, std::size_t{3000}}) {
    std::vector<double> v(n);
    for (double& x : v) x = std::round(4.0 * t(rng)) / 4.0;  // ties, as rounded data have
    std::vector<double> units(n, 1.0), integers(n), general(n);
    for (std::size_t i = 0; i < n; ++i) {
      integers[i] = i == 0 ? 1.0 : counts(rng);
      general[i] = fractions(rng);
    }
    for (const auto* w : {&units, &integers, &general}) {
      SCOPED_TRACE(n);
      const std::span<const double> values(v), weights(*w);
      const rh::MedianAndMad both = rh::weighted_median_and_mad(values, weights);
      EXPECT_EQ(both.median, rh::weighted_median(values, weights));
      EXPECT_EQ(both.mad, rh::weighted_mad(values, weights));
    }
  }
}

TEST(WeightedMad, IsTheWeightedMedianOfAbsoluteDeviations) {
  const std::vector<double> v = {1, 2, 3, 4, 100};
  const std::vector<double> w = {1, 1, 1, 1, 1};
  // median 3; deviations 2, 1, 0, 1, 97 -> lower median 1.
  EXPECT_EQ(rh::weighted_mad(std::span<const double>(v), std::span<const double>(w)), 1.0);
}

#if defined(RH_WINDOW_SIMD)
// Two passes' Windows and their windows' values, bit for bit.
template <class V>
void expect_same_window(const rh::detail::Window& expected, const std::vector<V>& expected_values,
                        const rh::detail::Window& got, const std::vector<V>& got_values) {
  using Bits = std::conditional_t<sizeof(V) == 8, std::uint64_t, std::uint32_t>;
  EXPECT_EQ(expected.below, got.below);
  EXPECT_EQ(expected.count, got.count);
  EXPECT_EQ(expected.above, got.above);
  for (std::size_t k = 0; k < expected.count; ++k) {
    EXPECT_EQ(std::bit_cast<Bits>(expected_values[k]), std::bit_cast<Bits>(got_values[k]));
  }
}

// A vector window pass gives the portable loop's Window and window, value for value: values and
// deviations, windows that hold many values, NaN in the values and as a bound, a window that
// outgrows its capacity (the pass stops at the same block), lengths that are not multiples of the
// lanes. `of_double(v, n, center, deviations, lo, hi, between, capacity)` and `of_float` are the
// pass's float64 and float32-widened forms, `float_values(f, n, lo, hi, between, capacity)` its
// float32 one.
template <class OfDouble, class OfFloat, class FloatValues>
void expect_window_pass_matches_the_portable_one(const OfDouble& of_double,
                                                 const OfFloat& of_float,
                                                 const FloatValues& float_values) {
  std::mt19937_64 rng(11);
  std::student_t_distribution<double> t(3.0);
  for (const std::size_t n : {std::size_t{7}, std::size_t{1029}, std::size_t{20001}}) {
    std::vector<double> v(n);
    for (double& x : v) x = std::round(t(rng) * 8.0) / 8.0;  // ties
    if (n > 100) v[n / 3] = std::numeric_limits<double>::quiet_NaN();
    for (const bool deviations : {false, true}) {
      for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
               {-0.5, 0.25}, {-100.0, 100.0}, {0.0, 0.0},
               {std::numeric_limits<double>::quiet_NaN(), 1.0}}) {
        for (const std::size_t capacity : {n / 4, n}) {
          const auto value = [&](std::size_t i) {
            return deviations ? std::fabs(v[i] - 0.125) : v[i];
          };
          std::vector<double> expected(capacity + rh::detail::window_room);
          std::vector<double> got(capacity + rh::detail::window_room);
          const auto a = rh::detail::gather_window<double>(n, value, lo, hi, expected.data(),
                                                           capacity);
          const auto b = of_double(v.data(), n, 0.125, deviations, lo, hi, got.data(), capacity);
          expect_same_window(a, expected, b, got);
          // float32 values: their deviations in float64, and the values in float32.
          const std::vector<float> f(v.begin(), v.end());
          const auto f_value = [&](std::size_t i) {
            return deviations ? std::fabs(static_cast<double>(f[i]) - 0.125)
                              : static_cast<double>(f[i]);
          };
          const auto c = rh::detail::gather_window<double>(n, f_value, lo, hi, expected.data(),
                                                           capacity);
          const auto d = of_float(f.data(), n, 0.125, deviations, lo, hi, got.data(), capacity);
          expect_same_window(c, expected, d, got);
          if (!deviations) {
            std::vector<float> f_expected(capacity + rh::detail::window_room);
            std::vector<float> f_got(capacity + rh::detail::window_room);
            const auto flo = static_cast<float>(lo);
            const auto fhi = static_cast<float>(hi);
            const auto e = rh::detail::gather_window<float>(
                n, [&](std::size_t i) { return f[i]; }, flo, fhi, f_expected.data(), capacity);
            const auto g = float_values(f.data(), n, flo, fhi, f_got.data(), capacity);
            expect_same_window(e, f_expected, g, f_got);
          }
        }
      }
    }
  }
}

TEST(OrderStatistic, Avx512WindowPassMatchesThePortableOne) {
  if (!rh::detail::cpu_has_avx512f()) {
    GTEST_SKIP() << "this CPU has no AVX-512: its window pass cannot run here";
  }
  expect_window_pass_matches_the_portable_one(
      [](auto... args) { return rh::detail::gather_window_avx512<double>(args...); },
      [](auto... args) { return rh::detail::gather_window_avx512<float>(args...); },
      [](auto... args) { return rh::detail::gather_window_avx512(args...); });
}

TEST(OrderStatistic, Avx2WindowPassMatchesThePortableOne) {
  if (!rh::detail::cpu_has_avx2()) {
    GTEST_SKIP() << "this CPU has no AVX2: its window pass cannot run here";
  }
  expect_window_pass_matches_the_portable_one(
      [](auto... args) { return rh::detail::gather_window_avx2<double>(args...); },
      [](auto... args) { return rh::detail::gather_window_avx2<float>(args...); },
      [](auto... args) { return rh::detail::gather_window_avx2(args...); });
}

// Every signed zero, subnormal, infinity and NaN as values, bounds and centre: the permutation
// tables move exactly the inside lanes, whatever their bits.
TEST(OrderStatistic, Avx2WindowPassKeepsEveryLanesBits) {
  if (!rh::detail::cpu_has_avx2()) {
    GTEST_SKIP() << "this CPU has no AVX2: its window pass cannot run here";
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double tiny = std::numeric_limits<double>::denorm_min();
  const std::vector<double> specials = {0.0, -0.0, tiny, -tiny, 1.0, -1.0, inf, -inf, nan, 2.5};
  std::vector<double> v;
  for (std::size_t i = 0; i < 4096; ++i) v.push_back(specials[(i * 7 + i / 11) % specials.size()]);
  const std::size_t n = v.size();
  const std::vector<float> f(v.begin(), v.end());
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {-0.0, 0.0}, {-tiny, tiny}, {-inf, inf}, {-1.0, 2.5}, {nan, nan}}) {
    for (const bool deviations : {false, true}) {
      const auto value = [&](std::size_t i) { return deviations ? std::fabs(v[i] - 0.0) : v[i]; };
      std::vector<double> expected(n + rh::detail::window_room), got(n + rh::detail::window_room);
      const auto a = rh::detail::gather_window<double>(n, value, lo, hi, expected.data(), n);
      const auto b = rh::detail::gather_window_avx2(v.data(), n, 0.0, deviations, lo, hi,
                                                    got.data(), n);
      expect_same_window(a, expected, b, got);
    }
    std::vector<float> f_expected(n + rh::detail::window_room), f_got(n + rh::detail::window_room);
    const auto flo = static_cast<float>(lo);
    const auto fhi = static_cast<float>(hi);
    const auto c = rh::detail::gather_window<float>(
        n, [&](std::size_t i) { return f[i]; }, flo, fhi, f_expected.data(), n);
    const auto d = rh::detail::gather_window_avx2(f.data(), n, flo, fhi, f_got.data(), n);
    expect_same_window(c, f_expected, d, f_got);
  }
}
#endif

// The window's selection, narrowed once more where the window is large, gives nth_element's
// value on the window: random values with ties, sorted and reversed ones, float64 and float32,
// every region of ranks.
template <class V>
void expect_kth_smallest_is_nth_elements() {
  std::mt19937_64 rng(13);
  std::student_t_distribution<double> t(3.0);
  for (const std::size_t count : {std::size_t{100}, std::size_t{4096}, std::size_t{30001}}) {
    for (const int order : {0, 1, 2}) {
      std::vector<V> values(count);
      for (V& x : values) x = static_cast<V>(std::round(t(rng) * 64.0) / 64.0);
      if (order == 1) std::sort(values.begin(), values.end());
      if (order == 2) std::sort(values.rbegin(), values.rend());
      for (const std::size_t k : {std::size_t{0}, count / 7, count / 2, count - 1}) {
        std::vector<V> expected = values;
        std::nth_element(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(k),
                         expected.end());
        std::vector<V> got = values;
        EXPECT_EQ(rh::detail::kth_smallest(got.data(), count, k), expected[k])
            << "count " << count << " order " << order << " k " << k;
      }
    }
  }
}

TEST(OrderStatistic, TheWindowsSelectionIsNthElementsValue) {
  expect_kth_smallest_is_nth_elements<double>();
  expect_kth_smallest_is_nth_elements<float>();
}

// The unit weights' check compares bit patterns in blocks: any weight that is not exactly +1,
// in any block (the last, partial one included), makes the set integer or general, as the
// sequential loop classifies it.
template <class W>
void expect_weight_kinds() {
  using rh::detail::WeightKind;
  double total = 0.0;
  for (const std::size_t n : {std::size_t{1}, std::size_t{511}, std::size_t{512},
                              std::size_t{513}, std::size_t{5000}}) {
    std::vector<W> w(n, W{1});
    EXPECT_EQ(rh::detail::weight_kind(std::span<const W>(w), total), WeightKind::units);
    EXPECT_EQ(total, static_cast<double>(n));
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      std::vector<W> other = w;
      other[at] = W{2};
      EXPECT_EQ(rh::detail::weight_kind(std::span<const W>(other), total), WeightKind::integers);
      EXPECT_EQ(total, static_cast<double>(n) + 1.0);
      other[at] = W{0.5};
      EXPECT_EQ(rh::detail::weight_kind(std::span<const W>(other), total), WeightKind::general);
      other[at] = std::nextafter(W{1}, W{2});  // one bit off 1
      EXPECT_EQ(rh::detail::weight_kind(std::span<const W>(other), total), WeightKind::general);
    }
  }
}

TEST(WeightKind, UnitsAreExactlyOneInEveryBlock) {
  expect_weight_kinds<double>();
  expect_weight_kinds<float>();
}

TEST(WeightedStd, MatchesTheDefinition) {
  const std::vector<double> v = {1, 3};
  const std::vector<double> w = {1, 3};
  // mean 2.5; variance (1 * 2.25 + 3 * 0.25) / 4 = 0.75.
  EXPECT_DOUBLE_EQ(rh::weighted_std(std::span<const double>(v), std::span<const double>(w)),
                   std::sqrt(0.75));
}

}  // namespace
