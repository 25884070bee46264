#include "rh/trace.hpp"

#include <algorithm>

namespace rh {

double TensorStats::std_dev() const {
  const std::int64_t n = finite();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(squared_deviations / static_cast<double>(n));
}

void TensorStats::merge(const TensorStats& other) {
  const std::int64_t a = finite();
  const std::int64_t b = other.finite();
  count += other.count;
  nan += other.nan;
  inf += other.inf;
  if (b == 0) return;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  sum_squares += other.sum_squares;
  if (a == 0) {
    mean = other.mean;
    squared_deviations = other.squared_deviations;
    return;
  }
  const double na = static_cast<double>(a);
  const double nb = static_cast<double>(b);
  const double n = na + nb;
  const double delta = other.mean - mean;
  mean += delta * (nb / n);
  squared_deviations += other.squared_deviations + delta * delta * (na * nb / n);
}

template <std::floating_point T>
TensorStats TensorStats::of_values(const T* values, std::size_t n) {
  TensorStats stats;
  stats.count = static_cast<std::int64_t>(n);
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(values[i]);
    if (std::isnan(v)) {
      ++stats.nan;
    } else if (std::isinf(v)) {
      ++stats.inf;
    } else {
      sum += v;
      stats.min = std::min(stats.min, v);
      stats.max = std::max(stats.max, v);
    }
  }
  const std::int64_t finite = stats.finite();
  if (finite == 0) return stats;
  // The deviations in a second pass over the chunk (in cache): no cancellation of sum and sum of
  // squares.
  stats.mean = sum / static_cast<double>(finite);
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(values[i]);
    if (!std::isfinite(v)) continue;
    const double deviation = v - stats.mean;
    stats.squared_deviations += deviation * deviation;
    stats.sum_squares += v * v;
  }
  return stats;
}

template TensorStats TensorStats::of_values<float>(const float*, std::size_t);
template TensorStats TensorStats::of_values<double>(const double*, std::size_t);

}  // namespace rh
