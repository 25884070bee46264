#pragma once
// Weighted median, MAD and standard deviation exactly as docs/numerics.md defines them, so the
// scale (and hence tau) is the same number in every engine.

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <type_traits>
#include <vector>

#include "rh/order_statistic.hpp"

namespace rh {

// Consistency constant of the MAD at the Gaussian: 1 / Phi^-1(3/4).
inline constexpr double mad_k = 1.482602218505602;

// A stream's last residual median and MAD (NaN: none yet), from which the next batch's
// selections guess their windows (order_statistic.hpp, SelectionGuess): the batches of a stream
// are alike, so the next median and MAD lie within a few of their sampling standard deviations
// of these. Only a guess: a window that misses costs a pass, never the result.
struct ScaleGuess {
  double center = std::numeric_limits<double>::quiet_NaN();
  double deviation = std::numeric_limits<double>::quiet_NaN();
  // Set by the engine for its current batch when its validation's scan found every weight
  // exactly 1 (rh::ValueScan): the selections then skip their own scan of the weights.
  bool unit_weights = false;
};
// The guessed windows' half-width, in deviation / sqrt(n): five standard deviations of the
// difference of two batches' Gaussian medians (5 sqrt(2) 1.2533 mad_k = 13.1); the MAD's own
// spread is smaller.
inline constexpr double scale_guess_spread = 13.0;

namespace detail {

// The definition itself: sort stably, accumulate in that order.
template <class V, class W>
double weighted_median_sorted(std::span<const V> values, std::span<const W> weights) {
  // Sorting (value, index) pairs orders exactly as a stable sort by value, with direct
  // comparisons instead of indirect ones.
  struct Entry {
    V value;
    std::size_t index;
  };
  std::vector<Entry> order(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) order[i] = {values[i], i};
  std::sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
    return a.value < b.value || (!(b.value < a.value) && a.index < b.index);
  });
  double total = 0.0;
  for (const Entry& e : order) total += static_cast<double>(weights[e.index]);
  const double half = 0.5 * total;
  double cumulative = 0.0;
  for (const Entry& e : order) {
    cumulative += static_cast<double>(weights[e.index]);
    if (cumulative >= half) return static_cast<double>(e.value);
  }
  return static_cast<double>(order.back().value);  // unreachable for a positive total
}

// The same number in expected linear time when every partial sum of the weights is exact
// (integer weights, total <= 2^53): then the cumulative weight up to a value no longer depends
// on the order of the sum, and the answer is the smallest value v with C(v) = sum of the
// weights of values <= v reaching half the total. Quickselect narrows [lo, hi) around it, with
// `below` the exact weight of everything left of lo.
template <class V, class W>
double weighted_median_exact_sums(std::span<const V> values, std::span<const W> weights,
                                  double total) {
  struct Entry {
    V value;
    double weight;
  };
  std::vector<Entry> entries(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    entries[i] = {values[i], static_cast<double>(weights[i])};
  }
  const double half = 0.5 * total;
  const auto by_value = [](const Entry& a, const Entry& b) { return a.value < b.value; };
  auto lo = entries.begin();
  auto hi = entries.end();
  double below = 0.0;  // < half throughout
  while (lo < hi) {
    const auto mid = lo + (hi - lo) / 2;
    std::nth_element(lo, mid, hi, by_value);  // [lo, mid) <= *mid <= (mid, hi)
    double before_mid = below;
    for (auto it = lo; it < mid; ++it) before_mid += it->weight;
    if (before_mid >= half) {
      hi = mid;  // C reaches half at the largest value of [lo, mid) already
    } else if (before_mid + mid->weight >= half) {
      return static_cast<double>(mid->value);  // every smaller value stays below half
    } else {
      below = before_mid + mid->weight;  // ties of *mid right of it are counted there
      lo = mid + 1;
    }
  }
  return static_cast<double>(entries.back().value);  // unreachable for a positive total
}

}  // namespace detail

namespace detail {

enum class WeightKind { units, integers, general };

// Whether every weight is exactly 1: bit patterns compared in blocks, with no branch or float
// add chain per weight, so the loop vectorizes (the default weights take this path on every
// scale; the loop below runs at a float add's latency per weight, ~75 us on 65,536 weights).
template <class W>
bool all_unit_weights(std::span<const W> weights) {
  using Bits = std::conditional_t<sizeof(W) == 8, std::uint64_t, std::uint32_t>;
  constexpr Bits one = std::bit_cast<Bits>(W{1});
  constexpr std::size_t block = 512;
  for (std::size_t start = 0; start < weights.size(); start += block) {
    const std::size_t end = std::min(weights.size(), start + block);
    Bits differ = 0;
    for (std::size_t i = start; i < end; ++i) differ |= std::bit_cast<Bits>(weights[i]) ^ one;
    if (differ != 0) return false;
  }
  return true;
}

// What the weights allow: all 1 (the default), integers with exact sums (total <= 2^53), or
// neither; and their float64 total.
template <class W>
WeightKind weight_kind(std::span<const W> weights, double& total) {
  constexpr double exact_limit = 9007199254740992.0;  // 2^53
  if constexpr (std::floating_point<W> && (sizeof(W) == 4 || sizeof(W) == 8)) {
    if (all_unit_weights(weights)) {
      total = static_cast<double>(weights.size());  // exact: n < 2^53
      return WeightKind::units;
    }
  }
  total = 0.0;
  bool units = true;
  bool integers = true;
  for (const W w : weights) {
    const auto weight = static_cast<double>(w);
    units = units && weight == 1.0;
    integers = integers && weight == std::floor(weight);
    total += weight;
  }
  if (integers && total <= exact_limit) return units ? WeightKind::units : WeightKind::integers;
  return WeightKind::general;
}

// Unit weights: the first sorted value whose count reaches n / 2 is the order statistic of rank
// ceil(n / 2) - 1, the same number the stable sort gives (order_statistic.hpp finds it).
inline std::size_t unit_median_rank(std::size_t n) { return (n - 1) / 2; }

template <class V, class W>
double weighted_median_of(std::span<const V> values, std::span<const W> weights,
                          WeightKind kind, double total) {
  if (kind == WeightKind::units) {
    return static_cast<double>(order_statistic_of_values(values, unit_median_rank(values.size())));
  }
  if (kind == WeightKind::integers) return weighted_median_exact_sums(values, weights, total);
  return weighted_median_sorted(values, weights);
}

}  // namespace detail

// The lower weighted median: sort stably, accumulate weights sequentially in float64, return the
// first value whose cumulative weight reaches half of the sequential total. Values compare in
// their own type. Requires a positive total weight and finite values. Integer weights (the
// default unit weights, frequency weights) take a selection instead of a sort, with the same
// result: their sums are exact in any order; unit weights select on a copy of the values alone.
template <class V, class W>
double weighted_median(std::span<const V> values, std::span<const W> weights) {
  double total = 0.0;
  const detail::WeightKind kind = detail::weight_kind(weights, total);
  return detail::weighted_median_of(values, weights, kind, total);
}

// A weighted median and the weighted MAD about it: the two numbers weighted_mad finds.
struct MedianAndMad {
  double median;
  double mad;
};

// wMAD(v, w) = wmedian(|v - wmedian(v, w)|, w), deviations in float64, and wmedian(v, w) itself
// (the number weighted_median gives). With unit weights both medians are order statistics, and
// the deviations are formed as the selection reads them (no row-length buffer unless its sample
// misses); the general path holds a (value, weight) pair per row (docs/native.md, "Memory").
// With a guess (not null), unit weights try its windows first, and every call leaves its median
// and MAD there for the next.
template <class V, class W>
MedianAndMad weighted_median_and_mad(std::span<const V> values, std::span<const W> weights,
                                     ScaleGuess* guess = nullptr) {
  double total = static_cast<double>(weights.size());  // unit weights' (weight_kind's where asked)
  const detail::WeightKind kind = guess != nullptr && guess->unit_weights
                                      ? detail::WeightKind::units
                                      : detail::weight_kind(weights, total);
  if (kind == detail::WeightKind::units && guess != nullptr) {
    const std::size_t k = detail::unit_median_rank(values.size());
    const double half = scale_guess_spread * guess->deviation /
                        std::sqrt(static_cast<double>(values.size()));
    // NaN bounds (no guess yet, a NaN MAD, a bound past V's range) make the selections skip
    // the guess.
    const auto bound = [](double x) {
      return std::fabs(x) <= static_cast<double>(std::numeric_limits<V>::max())
                 ? static_cast<V>(x)
                 : std::numeric_limits<V>::quiet_NaN();
    };
    const detail::SelectionGuess<V> center_window{bound(guess->center - half),
                                                  bound(guess->center + half)};
    const detail::SelectionGuess<double> deviation_window{
        std::max(0.0, guess->deviation - half), guess->deviation + half};
    const auto center =
        static_cast<double>(detail::order_statistic_of_values(values, k, &center_window));
    const double mad = detail::order_statistic_of_deviations(values, k, center, &deviation_window);
    guess->center = center;
    guess->deviation = mad;
    return {center, mad};
  }
  const double center = detail::weighted_median_of(values, weights, kind, total);
  if (kind == detail::WeightKind::units) {
    return {center, detail::order_statistic_of_deviations(
                        values, detail::unit_median_rank(values.size()), center)};
  }
  std::vector<double> deviations(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    deviations[i] = std::fabs(static_cast<double>(values[i]) - center);
  }
  return {center,
          detail::weighted_median_of(std::span<const double>(deviations), weights, kind, total)};
}

// wMAD(v, w) alone (weighted_median_and_mad).
template <class V, class W>
double weighted_mad(std::span<const V> values, std::span<const W> weights,
                    ScaleGuess* guess = nullptr) {
  return weighted_median_and_mad(values, weights, guess).mad;
}

// sqrt(sum w (v - m)^2 / sum w) with m the weighted mean, all in float64.
template <class V, class W>
double weighted_std(std::span<const V> values, std::span<const W> weights) {
  double weight_sum = 0.0;
  double weighted_sum = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    weight_sum += static_cast<double>(weights[i]);
    weighted_sum += static_cast<double>(weights[i]) * static_cast<double>(values[i]);
  }
  const double mean = weighted_sum / weight_sum;
  double squares = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double deviation = static_cast<double>(values[i]) - mean;
    squares += static_cast<double>(weights[i]) * deviation * deviation;
  }
  return std::sqrt(squares / weight_sum);
}

}  // namespace rh
