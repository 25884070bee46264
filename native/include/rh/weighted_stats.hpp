#pragma once
// Weighted median, MAD and standard deviation exactly as docs/numerics.md defines them, so the
// scale (and hence tau) is the same number in every engine.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

namespace rh {

// Consistency constant of the MAD at the Gaussian: 1 / Phi^-1(3/4).
inline constexpr double mad_k = 1.482602218505602;

// The lower weighted median: sort stably, accumulate weights sequentially in float64, return the
// first value whose cumulative weight reaches half of the sequential total. Values compare in
// their own type. Requires a positive total weight.
template <class V, class W>
double weighted_median(std::span<const V> values, std::span<const W> weights) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> cumulative(order.size());
  double total = 0.0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    total += static_cast<double>(weights[order[k]]);
    cumulative[k] = total;
  }
  const double half = 0.5 * total;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (cumulative[k] >= half) return static_cast<double>(values[order[k]]);
  }
  return static_cast<double>(values[order.back()]);  // unreachable for a positive total
}

// wMAD(v, w) = wmedian(|v - wmedian(v, w)|, w), deviations in float64.
template <class V, class W>
double weighted_mad(std::span<const V> values, std::span<const W> weights) {
  const double center = weighted_median(values, weights);
  std::vector<double> deviations(values.size());
  std::transform(values.begin(), values.end(), deviations.begin(),
                 [&](V v) { return std::fabs(static_cast<double>(v) - center); });
  return weighted_median(std::span<const double>(deviations), weights);
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
