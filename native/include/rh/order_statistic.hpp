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
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) && !defined(__CUDACC__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace rh::detail {

// Below this many values no sample is drawn (it would cost as much as the selection it saves):
// a guess's window (guessed_selection_min), else all of them.
inline constexpr std::size_t sampled_selection_min = 8192;
// Sample size; rank k's place in the sample is widened by this many of a sample rank's standard
// deviations on each side (a miss, by chance, costs the full selection once more).
inline constexpr std::size_t selection_sample = 2048;
inline constexpr double selection_spread = 5.0;
// A window of at least this many values is narrowed once more before its nth_element (a sample of
// an eighth of it, the same spread, one more pass over it).
inline constexpr std::size_t nested_selection_min = 4096;

// nth_element on all n values value(i), in index order: the reference result.
template <class V, class Value>
V order_statistic_full(std::size_t n, std::size_t k, Value&& value) {
  std::vector<V> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = value(i);
  const auto kth = all.begin() + static_cast<std::ptrdiff_t>(k);
  std::nth_element(all.begin(), kth, all.end());
  return *kth;
}

// One pass over the values for a window [lo, hi]: how many lie below it and above it, and the
// ones inside gathered into between[0, count) in index order. The pass stops at the end of a
// block of values once more than `capacity` are inside (below + count + above < n then). NaN
// (anywhere, or as a bound) is none of below, inside and above. `between` has room for
// capacity + window_room values.
struct Window {
  std::size_t below = 0;
  std::size_t count = 0;
  std::size_t above = 0;
};
inline constexpr std::size_t window_block = 1024;
inline constexpr std::size_t window_room = window_block + 16;

// One value into the window without a branch: stored at the window's end and kept there only
// if it is inside.
template <class V>
inline void add_to_window(Window& w, V v, V lo, V hi, V* between) {
  w.below += static_cast<std::size_t>(v < lo);
  w.above += static_cast<std::size_t>(v > hi);
  between[w.count] = v;
  w.count += static_cast<std::size_t>(v >= lo) & static_cast<std::size_t>(v <= hi);
}

template <class V, class Value>
Window gather_window(std::size_t n, Value&& value, V lo, V hi, V* between,
                     std::size_t capacity) {
  Window w;
  for (std::size_t start = 0; start < n && w.count <= capacity; start += window_block) {
    const std::size_t end = std::min(n, start + window_block);
    for (std::size_t i = start; i < end; ++i) add_to_window<V>(w, value(i), lo, hi, between);
  }
  return w;
}

#if defined(__x86_64__) && !defined(__CUDACC__) && defined(__GNUC__)
#define RH_WINDOW_SIMD 1
// gather_window over values v[i] (float64), or the deviations |v[i] - center| in float64 of
// float64 or float32 values, eight at a time: the comparisons as masks, their counts by popcount,
// the inside values compressed in index order (the same window, the same counts and bits as the
// loop above: the conversion, the subtraction and the absolute value are the scalar ones, lane by
// lane). The scalar loop takes ~60 us for 65,536 values at baseline x86-64; with this pass the
// MAD of 65,536 residuals took 140 us instead of 275 (experiment scale-window-pass-avx512).
// Hand-written: the scale's two selections on every large batch read each residual once here,
// and no library offers a counted, compressing window pass. Call only where cpu_has_avx512f().
template <class S>
__attribute__((target("avx512f,popcnt"))) inline Window gather_window_avx512(
    const S* v, std::size_t n, double center, bool deviations, double lo, double hi,
    double* between, std::size_t capacity) {
  static_assert(std::is_same_v<S, double> || std::is_same_v<S, float>);
  Window w;
  const __m512d low = _mm512_set1_pd(lo);
  const __m512d high = _mm512_set1_pd(hi);
  const __m512d middle = _mm512_set1_pd(center);
  for (std::size_t start = 0; start < n && w.count <= capacity; start += window_block) {
    const std::size_t end = std::min(n, start + window_block);
    std::size_t i = start;
    for (; i + 8 <= end; i += 8) {
      __m512d x;
      if constexpr (std::is_same_v<S, double>) {
        x = _mm512_loadu_pd(v + i);
      } else {
        // The zero-masked form: GCC 12 warns of the plain one's undefined pass-through.
        x = _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xff), _mm256_loadu_ps(v + i));
      }
      if (deviations) x = _mm512_abs_pd(_mm512_sub_pd(x, middle));
      const __mmask8 below = _mm512_cmp_pd_mask(x, low, _CMP_LT_OQ);
      const __mmask8 above = _mm512_cmp_pd_mask(x, high, _CMP_GT_OQ);
      const __mmask8 inside =
          _mm512_cmp_pd_mask(x, low, _CMP_GE_OQ) & _mm512_cmp_pd_mask(x, high, _CMP_LE_OQ);
      w.below += static_cast<std::size_t>(__builtin_popcount(below));
      w.above += static_cast<std::size_t>(__builtin_popcount(above));
      _mm512_storeu_pd(between + w.count, _mm512_maskz_compress_pd(inside, x));
      w.count += static_cast<std::size_t>(__builtin_popcount(inside));
    }
    for (; i < end; ++i) {
      const auto value = static_cast<double>(v[i]);
      add_to_window(w, deviations ? std::fabs(value - center) : value, lo, hi, between);
    }
  }
  return w;
}

// gather_window over float32 values compared in float32 (the median of a float32 batch's
// residuals), sixteen at a time, as above.
__attribute__((target("avx512f,popcnt"))) inline Window gather_window_avx512(
    const float* v, std::size_t n, float lo, float hi, float* between, std::size_t capacity) {
  Window w;
  const __m512 low = _mm512_set1_ps(lo);
  const __m512 high = _mm512_set1_ps(hi);
  for (std::size_t start = 0; start < n && w.count <= capacity; start += window_block) {
    const std::size_t end = std::min(n, start + window_block);
    std::size_t i = start;
    for (; i + 16 <= end; i += 16) {
      const __m512 x = _mm512_loadu_ps(v + i);
      const __mmask16 below = _mm512_cmp_ps_mask(x, low, _CMP_LT_OQ);
      const __mmask16 above = _mm512_cmp_ps_mask(x, high, _CMP_GT_OQ);
      const __mmask16 inside =
          _mm512_cmp_ps_mask(x, low, _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, high, _CMP_LE_OQ);
      w.below += static_cast<std::size_t>(__builtin_popcount(below));
      w.above += static_cast<std::size_t>(__builtin_popcount(above));
      _mm512_storeu_ps(between + w.count, _mm512_maskz_compress_ps(inside, x));
      w.count += static_cast<std::size_t>(__builtin_popcount(inside));
    }
    for (; i < end; ++i) add_to_window(w, v[i], lo, hi, between);
  }
  return w;
}

inline bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// The same passes for CPUs with AVX2 but not AVX-512 (AMD Zen 2 and 3, Intel before Ice Lake),
// four float64 or eight float32 lanes at a time. AVX2 has no compress: the inside lanes are moved
// to the front by a permutation looked up by their mask (vpermps on 32-bit halves), the whole
// vector stored at the window's end and the end advanced by their count, as the scalar loop
// stores every value and keeps the inside ones. The MAD of 65,536 residuals took 92 us instead of
// 192 in float64 and 54 instead of 169 in float32, the AVX-512 pass's 90 and 47 (this pass
// measured on an AVX-512 CPU with that pass turned off: experiment scale-window-pass-avx2).
// Call only where cpu_has_avx2().
template <int Values>  // per vector: 4 float64 or 8 float32
struct CompressPermutations {
  std::int32_t index[1 << Values][8];  // for each mask of the values, the 32-bit lanes to take
};

template <int Values>
constexpr CompressPermutations<Values> make_compress_permutations() {
  CompressPermutations<Values> table{};
  constexpr int lanes_per_value = 8 / Values;
  for (int mask = 0; mask < (1 << Values); ++mask) {
    int to = 0;
    for (int lane = 0; lane < Values; ++lane) {
      if ((mask >> lane) & 1) {
        for (int half = 0; half < lanes_per_value; ++half) {
          table.index[mask][to++] = lane * lanes_per_value + half;
        }
      }
    }
  }
  return table;
}
inline constexpr CompressPermutations<4> compress_float64 = make_compress_permutations<4>();
inline constexpr CompressPermutations<8> compress_float32 = make_compress_permutations<8>();

template <class S>
__attribute__((target("avx2,popcnt"))) inline Window gather_window_avx2(
    const S* v, std::size_t n, double center, bool deviations, double lo, double hi,
    double* between, std::size_t capacity) {
  static_assert(std::is_same_v<S, double> || std::is_same_v<S, float>);
  Window w;
  const __m256d low = _mm256_set1_pd(lo);
  const __m256d high = _mm256_set1_pd(hi);
  const __m256d middle = _mm256_set1_pd(center);
  const __m256d sign = _mm256_set1_pd(-0.0);
  for (std::size_t start = 0; start < n && w.count <= capacity; start += window_block) {
    const std::size_t end = std::min(n, start + window_block);
    std::size_t i = start;
    for (; i + 4 <= end; i += 4) {
      __m256d x;
      if constexpr (std::is_same_v<S, double>) {
        x = _mm256_loadu_pd(v + i);
      } else {
        x = _mm256_cvtps_pd(_mm_loadu_ps(v + i));
      }
      if (deviations) x = _mm256_andnot_pd(sign, _mm256_sub_pd(x, middle));  // fabs: the sign bit
      const int below = _mm256_movemask_pd(_mm256_cmp_pd(x, low, _CMP_LT_OQ));
      const int above = _mm256_movemask_pd(_mm256_cmp_pd(x, high, _CMP_GT_OQ));
      const int inside = _mm256_movemask_pd(
          _mm256_and_pd(_mm256_cmp_pd(x, low, _CMP_GE_OQ), _mm256_cmp_pd(x, high, _CMP_LE_OQ)));
      w.below += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(below)));
      w.above += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(above)));
      const __m256i order = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(compress_float64.index[inside]));
      _mm256_storeu_pd(between + w.count,
                       _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(x), order)));
      w.count += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(inside)));
    }
    for (; i < end; ++i) {
      const auto value = static_cast<double>(v[i]);
      add_to_window(w, deviations ? std::fabs(value - center) : value, lo, hi, between);
    }
  }
  return w;
}

__attribute__((target("avx2,popcnt"))) inline Window gather_window_avx2(
    const float* v, std::size_t n, float lo, float hi, float* between, std::size_t capacity) {
  Window w;
  const __m256 low = _mm256_set1_ps(lo);
  const __m256 high = _mm256_set1_ps(hi);
  for (std::size_t start = 0; start < n && w.count <= capacity; start += window_block) {
    const std::size_t end = std::min(n, start + window_block);
    std::size_t i = start;
    for (; i + 8 <= end; i += 8) {
      const __m256 x = _mm256_loadu_ps(v + i);
      const int below = _mm256_movemask_ps(_mm256_cmp_ps(x, low, _CMP_LT_OQ));
      const int above = _mm256_movemask_ps(_mm256_cmp_ps(x, high, _CMP_GT_OQ));
      const int inside = _mm256_movemask_ps(
          _mm256_and_ps(_mm256_cmp_ps(x, low, _CMP_GE_OQ), _mm256_cmp_ps(x, high, _CMP_LE_OQ)));
      w.below += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(below)));
      w.above += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(above)));
      const __m256i order = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(compress_float32.index[inside]));
      _mm256_storeu_ps(between + w.count, _mm256_permutevar8x32_ps(x, order));
      w.count += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(inside)));
    }
    for (; i < end; ++i) add_to_window(w, v[i], lo, hi, between);
  }
  return w;
}

inline bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

// The values at the sample's ranks that bound where rank p * n of the whole set lies, p * m
// widened by selection_spread standard deviations of a sample rank (and 8) on each side.
template <class V>
std::pair<V, V> sample_bounds(std::vector<V>& sample, double p) {
  const std::size_t m = sample.size();
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
  return {lo, sample[hi_rank]};
}

// gather_window over v[i] in float64, or over the deviations |v[i] - center| formed in float64,
// for float64 or float32 v: by gather_window_avx512 on a CPU with AVX-512, else by
// gather_window_avx2 on one with AVX2, else the portable loop.
template <class S>
Window gather_widened(const S* v, std::size_t n, double center, bool deviations, double lo,
                      double hi, double* between, std::size_t capacity) {
#if defined(RH_WINDOW_SIMD)
  if constexpr (std::is_same_v<S, double> || std::is_same_v<S, float>) {
    if (cpu_has_avx512f()) {
      return gather_window_avx512(v, n, center, deviations, lo, hi, between, capacity);
    }
    if (cpu_has_avx2()) {
      return gather_window_avx2(v, n, center, deviations, lo, hi, between, capacity);
    }
  }
#endif
  if (deviations) {
    const auto deviation = [v, center](std::size_t i) {
      return std::fabs(static_cast<double>(v[i]) - center);
    };
    return gather_window<double>(n, deviation, lo, hi, between, capacity);
  }
  const auto value = [v](std::size_t i) { return static_cast<double>(v[i]); };
  return gather_window<double>(n, value, lo, hi, between, capacity);
}

// gather_window over values[0, n) compared in their own type: float64 by gather_widened, float32
// by the AVX-512 or AVX2 pass where the CPU has one.
template <class V>
Window gather_contiguous(const V* values, std::size_t n, V lo, V hi, V* between,
                         std::size_t capacity) {
  if constexpr (std::is_same_v<V, double>) {
    return gather_widened(values, n, 0.0, false, lo, hi, between, capacity);
  } else {
#if defined(RH_WINDOW_SIMD)
    if constexpr (std::is_same_v<V, float>) {
      if (cpu_has_avx512f()) return gather_window_avx512(values, n, lo, hi, between, capacity);
      if (cpu_has_avx2()) return gather_window_avx2(values, n, lo, hi, between, capacity);
    }
#endif
    return gather_window<V>(n, [values](std::size_t i) { return values[i]; }, lo, hi, between,
                            capacity);
  }
}

// The k-th smallest of values[0, count) (which it reorders): the value nth_element puts at k.
// A large window is narrowed once more first (nth_element mispredicts a branch on most of its
// comparisons): the MAD of 65,536 residuals took 78-90 us instead of ~140.
template <class V>
V kth_smallest(V* values, std::size_t count, std::size_t k) {
  if (count >= nested_selection_min) {
    const std::size_t m = count / 8;
    std::vector<V> sample(m);
    for (std::size_t j = 0; j < m; ++j) sample[j] = values[j * count / m];
    const auto [lo, hi] =
        sample_bounds(sample, static_cast<double>(k) / static_cast<double>(count));
    const std::size_t capacity = count / 4;
    const std::unique_ptr<V[]> inner(new V[capacity + window_room]);
    const Window w = gather_contiguous(values, count, lo, hi, inner.get(), capacity);
    if (w.below + w.count + w.above == count && w.below <= k && k < w.below + w.count) {
      V* const kth = inner.get() + (k - w.below);
      std::nth_element(inner.get(), kth, inner.get() + w.count);
      return *kth;
    }
  }
  std::nth_element(values, values + k, values + count);
  return values[k];
}

// Bounds [lo, hi] where rank k is expected from an earlier, similar set (a stream's last batch:
// weighted_stats.hpp, ScaleGuess), tried before the sample. A hit saves the sample's selections
// (or, below sampled_selection_min, nth_element on every value); a miss costs a window pass,
// stopped once the window holds more than max(n / guessed_window_share, min(n / 2,
// selection_sample)) values. The window's share of the values grows as n shrinks (its half-width
// is a few sampling deviations, ~1 / sqrt(n)): a window of up to the sample's size costs no more
// to select on than the sample it saves, and below that, half the values still cost less than
// nth_element on all of them (a copy of every value, a branch mispredicted on most comparisons).
template <class V>
struct SelectionGuess {
  V lo;
  V hi;
};
inline constexpr std::size_t guessed_window_share = 16;
// The fewest values a guess is tried on: below, nth_element on all of them is as quick.
inline constexpr std::size_t guessed_selection_min = 512;

// The k-th smallest (0-based, k < n) of value(0), ..., value(n - 1), bit for bit what
// order_statistic_full gives; value(i) is called a few times per i (no copy of the whole set
// unless the sample's bounds miss). gather(lo, hi, between, capacity) makes the window's pass:
// gather_window over value, or a faster pass that gives the same Window. With a guess (not
// null), its window first.
template <class V, class Value, class Gather>
V order_statistic(std::size_t n, std::size_t k, Value&& value, Gather&& gather,
                  const SelectionGuess<V>* guess = nullptr) {
  if (n < guessed_selection_min) return order_statistic_full<V>(n, k, value);
  // Rank k from the window [lo, hi] when every value was ordered, rank k lies inside and its
  // value is not a zero; else nothing.
  const auto within = [&](V lo, V hi, std::size_t capacity) -> std::optional<V> {
    // Not value-initialized: only the slots the pass writes are read.
    const std::unique_ptr<V[]> between(new V[capacity + window_room]);
    const Window w = gather(lo, hi, between.get(), capacity);
    if (w.below + w.count + w.above != n || k < w.below || k >= w.below + w.count) {
      return std::nullopt;
    }
    const V kth = kth_smallest(between.get(), w.count, k - w.below);
    return kth != V{0} ? std::optional<V>(kth) : std::nullopt;
  };
  if (guess != nullptr && guess->lo <= guess->hi) {  // false for a NaN bound
    const std::size_t capacity =
        std::max(n / guessed_window_share, std::min(n / 2, selection_sample));
    if (const auto kth = within(guess->lo, guess->hi, capacity)) return *kth;
  }
  if (n < sampled_selection_min) return order_statistic_full<V>(n, k, value);
  constexpr std::size_t m = selection_sample;
  std::vector<V> sample(m);
  for (std::size_t j = 0; j < m; ++j) sample[j] = value(j * n / m);
  const auto [lo, hi] = sample_bounds(sample, static_cast<double>(k) / static_cast<double>(n));
  if (const auto kth = within(lo, hi, n / 4)) return *kth;
  return order_statistic_full<V>(n, k, value);
}

template <class V, class Value>
V order_statistic(std::size_t n, std::size_t k, Value&& value) {
  return order_statistic<V>(n, k, value, [&](V lo, V hi, V* between, std::size_t capacity) {
    return gather_window<V>(n, value, lo, hi, between, capacity);
  });
}

// The k-th smallest of the values, compared in their own type.
template <class V>
V order_statistic_of_values(std::span<const V> values, std::size_t k,
                            const SelectionGuess<V>* guess = nullptr) {
  const auto value = [&values](std::size_t i) { return values[i]; };
  return order_statistic<V>(
      values.size(), k, value,
      [&values](V lo, V hi, V* between, std::size_t capacity) {
        return gather_contiguous(values.data(), values.size(), lo, hi, between, capacity);
      },
      guess);
}

// The k-th smallest of the deviations |values[i] - center|, formed in float64 (their window's
// pass by gather_widened).
template <class V>
double order_statistic_of_deviations(std::span<const V> values, std::size_t k, double center,
                                     const SelectionGuess<double>* guess = nullptr) {
  const auto value = [&values, center](std::size_t i) {
    return std::fabs(static_cast<double>(values[i]) - center);
  };
  return order_statistic<double>(
      values.size(), k, value,
      [&](double lo, double hi, double* between, std::size_t capacity) {
        return gather_widened(values.data(), values.size(), center, true, lo, hi, between,
                              capacity);
      },
      guess);
}

}  // namespace rh::detail
