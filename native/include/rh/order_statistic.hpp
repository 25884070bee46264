#pragma once
// The k-th smallest of n values, the number std::nth_element on all of them finds, in about one
// pass over the values and selections on small sets: a strided sample of the values bounds where
// rank k lies, one pass counts the values below the bounds and gathers those between, and the
// selection runs on those few. The scale's medians (weighted_stats.hpp) took two full
// nth_element calls on the batch's rows, ~11 % of a steady 65,536 x 32 batch.
//
// The result is exactly nth_element's: away from zero, values that compare equal have the same
// bits, so the k-th order statistic is one number however it is found. The cases where that is
// not so, or where the bounds miss rank k, take nth_element on all the values in index order, as
// before: a zero result (+0 and -0 compare equal, and which one nth_element returns depends on
// their places), a NaN anywhere (the order is not total), or a window that holds too many values.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

namespace rh::detail {

// Below this many values the selection runs on all of them (the sample would cost as much).
inline constexpr std::size_t sampled_selection_min = 8192;
// Sample size; rank k's place in the sample is widened by this many of a sample rank's standard
// deviations on each side (a miss, by chance, costs the full selection once more).
inline constexpr std::size_t selection_sample = 2048;
inline constexpr double selection_spread = 5.0;

// nth_element on all n values value(i), in index order: the reference result.
template <class V, class Value>
V order_statistic_full(std::size_t n, std::size_t k, Value&& value) {
  std::vector<V> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = value(i);
  const auto kth = all.begin() + static_cast<std::ptrdiff_t>(k);
  std::nth_element(all.begin(), kth, all.end());
  return *kth;
}

// The k-th smallest (0-based, k < n) of value(0), ..., value(n - 1), bit for bit what
// order_statistic_full gives; value(i) is called a few times per i (no copy of the whole set
// unless the sample's bounds miss).
template <class V, class Value>
V order_statistic(std::size_t n, std::size_t k, Value&& value) {
  if (n < sampled_selection_min) return order_statistic_full<V>(n, k, value);
  constexpr std::size_t m = selection_sample;
  std::vector<V> sample(m);
  for (std::size_t j = 0; j < m; ++j) sample[j] = value(j * n / m);
  const double p = static_cast<double>(k) / static_cast<double>(n);
  const double spread =
      selection_spread * std::sqrt(static_cast<double>(m) * p * (1.0 - p)) + 8.0;
  const double place = p * static_cast<double>(m);
  const auto lo_rank = static_cast<std::size_t>(std::max(0.0, std::floor(place - spread)));
  const auto hi_rank = static_cast<std::size_t>(
      std::min(static_cast<double>(m - 1), std::ceil(place + spread)));
  std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(lo_rank),
                   sample.end());
  const V lo = sample[lo_rank];
  std::nth_element(sample.begin() + static_cast<std::ptrdiff_t>(lo_rank),
                   sample.begin() + static_cast<std::ptrdiff_t>(hi_rank), sample.end());
  const V hi = sample[hi_rank];
  // The pass, without a branch per value: each value is stored at the window's end and kept
  // there only if it is inside [lo, hi]. NaN (anywhere, or as a bound) is none of below, inside
  // and above. The window's room is checked once per block of values.
  constexpr std::size_t block = 1024;
  const std::size_t capacity = n / 4;
  // Not value-initialized: only the slots the pass writes are read.
  const std::unique_ptr<V[]> between(new V[capacity + block]);
  std::size_t below = 0;
  std::size_t count = 0;
  std::size_t above = 0;
  for (std::size_t start = 0; start < n && count <= capacity; start += block) {
    const std::size_t end = std::min(n, start + block);
    for (std::size_t i = start; i < end; ++i) {
      const V v = value(i);
      below += static_cast<std::size_t>(v < lo);
      above += static_cast<std::size_t>(v > hi);
      between[count] = v;
      count += static_cast<std::size_t>(v >= lo) & static_cast<std::size_t>(v <= hi);
    }
  }
  const bool complete = below + count + above == n;  // every value ordered, none left unread
  if (complete && below <= k && k < below + count) {
    V* const kth = between.get() + (k - below);
    std::nth_element(between.get(), kth, between.get() + count);
    if (*kth != V{0}) return *kth;
  }
  return order_statistic_full<V>(n, k, value);
}

}  // namespace rh::detail
