// Row dot products, the AVX2 + FMA variant (row_dots.hpp: the order it computes). This file alone
// is compiled with -mavx2 -mfma (native/CMakeLists.txt); called only after a run-time check.
// Four rows at a time: their lane sums in registers, then the lanes of the four reduced together
// by horizontal adds, whose pairings are the order's.

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "row_dots.hpp"

namespace rh::cpu::detail {
namespace {

// v padded with zeros to whole blocks of 8, and the masks of the last block's columns.
template <class T>
const T* padded(const T* v, std::size_t features) {
  thread_local std::vector<T> buffer;
  const std::size_t size = (features + 7) / 8 * 8;
  if (buffer.size() < size) buffer.resize(size);
  std::copy_n(v, features, buffer.data());
  std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(features),
            buffer.begin() + static_cast<std::ptrdiff_t>(size), T{0});
  return buffer.data();
}

__m256i lanes_below(std::int64_t n) {  // 64-bit lanes i < n set
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

// Lane sums of one row (lanes 0-3 in lo, 4-7 in hi): x's last block by masked loads.
inline __m256d row_lanes(const double* x, const double* v, std::size_t full, bool tail,
                         __m256i mask_lo, __m256i mask_hi) {
  __m256d lo = _mm256_setzero_pd();
  __m256d hi = _mm256_setzero_pd();
  std::size_t j = 0;
  for (; j < full; j += 8) {
    lo = _mm256_fmadd_pd(_mm256_loadu_pd(x + j), _mm256_loadu_pd(v + j), lo);
    hi = _mm256_fmadd_pd(_mm256_loadu_pd(x + j + 4), _mm256_loadu_pd(v + j + 4), hi);
  }
  if (tail) {
    lo = _mm256_fmadd_pd(_mm256_maskload_pd(x + j, mask_lo), _mm256_loadu_pd(v + j), lo);
    hi = _mm256_fmadd_pd(_mm256_maskload_pd(x + j + 4, mask_hi), _mm256_loadu_pd(v + j + 4), hi);
  }
  return _mm256_add_pd(lo, hi);  // v_k = s_k + s_(k+4)
}

// The same lane sums of x . v and of x . x, from one load of x.
inline void row_lanes_and_squares(const double* x, const double* v, std::size_t full, bool tail,
                                  __m256i mask_lo, __m256i mask_hi, __m256d& dot,
                                  __m256d& square) {
  __m256d lo = _mm256_setzero_pd();
  __m256d hi = _mm256_setzero_pd();
  __m256d square_lo = _mm256_setzero_pd();
  __m256d square_hi = _mm256_setzero_pd();
  std::size_t j = 0;
  for (; j < full; j += 8) {
    const __m256d a = _mm256_loadu_pd(x + j);
    const __m256d b = _mm256_loadu_pd(x + j + 4);
    lo = _mm256_fmadd_pd(a, _mm256_loadu_pd(v + j), lo);
    hi = _mm256_fmadd_pd(b, _mm256_loadu_pd(v + j + 4), hi);
    square_lo = _mm256_fmadd_pd(a, a, square_lo);
    square_hi = _mm256_fmadd_pd(b, b, square_hi);
  }
  if (tail) {
    const __m256d a = _mm256_maskload_pd(x + j, mask_lo);
    const __m256d b = _mm256_maskload_pd(x + j + 4, mask_hi);
    lo = _mm256_fmadd_pd(a, _mm256_loadu_pd(v + j), lo);
    hi = _mm256_fmadd_pd(b, _mm256_loadu_pd(v + j + 4), hi);
    square_lo = _mm256_fmadd_pd(a, a, square_lo);
    square_hi = _mm256_fmadd_pd(b, b, square_hi);
  }
  dot = _mm256_add_pd(lo, hi);
  square = _mm256_add_pd(square_lo, square_hi);
}

inline void row_lanes_and_squares(const float* x, const float* v, std::size_t full, bool tail,
                                  __m256i mask, __m256i /*unused*/, __m128& dot, __m128& square) {
  __m256 s = _mm256_setzero_ps();
  __m256 q = _mm256_setzero_ps();
  std::size_t j = 0;
  for (; j < full; j += 8) {
    const __m256 a = _mm256_loadu_ps(x + j);
    s = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + j), s);
    q = _mm256_fmadd_ps(a, a, q);
  }
  if (tail) {
    const __m256 a = _mm256_maskload_ps(x + j, mask);
    s = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + j), s);
    q = _mm256_fmadd_ps(a, a, q);
  }
  dot = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  square = _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1));
}

inline __m128 row_lanes(const float* x, const float* v, std::size_t full, bool tail,
                        __m256i mask, __m256i /*unused*/) {
  __m256 s = _mm256_setzero_ps();
  std::size_t j = 0;
  for (; j < full; j += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(v + j), s);
  if (tail) s = _mm256_fmadd_ps(_mm256_maskload_ps(x + j, mask), _mm256_loadu_ps(v + j), s);
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));  // s_k + s_(k+4)
}

inline double finish(__m256d v) {  // (v0 + v1) + (v2 + v3)
  alignas(32) double l[4];
  _mm256_store_pd(l, v);
  return (l[0] + l[1]) + (l[2] + l[3]);
}

inline float finish(__m128 v) {
  alignas(16) float l[4];
  _mm_store_ps(l, v);
  return (l[0] + l[1]) + (l[2] + l[3]);
}

// The few AVX2 operations add_weighted_columns needs, per element type.
template <class T>
struct VectorOps;
template <>
struct VectorOps<double> {
  using Vector = __m256d;
  static constexpr std::size_t lanes = 4;
  static __m256i mask(std::int64_t n) { return lanes_below(n); }
  static Vector load(const double* p) { return _mm256_loadu_pd(p); }
  static Vector maskload(const double* p, __m256i m) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, Vector v) { _mm256_storeu_pd(p, v); }
  static void maskstore(double* p, __m256i m, Vector v) { _mm256_maskstore_pd(p, m, v); }
  static Vector broadcast(double v) { return _mm256_set1_pd(v); }
  static Vector fmadd(Vector a, Vector b, Vector c) { return _mm256_fmadd_pd(a, b, c); }
};
template <>
struct VectorOps<float> {
  using Vector = __m256;
  static constexpr std::size_t lanes = 8;
  static __m256i mask(std::int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<std::int32_t>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Vector load(const float* p) { return _mm256_loadu_ps(p); }
  static Vector maskload(const float* p, __m256i m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, Vector v) { _mm256_storeu_ps(p, v); }
  static void maskstore(float* p, __m256i m, Vector v) { _mm256_maskstore_ps(p, m, v); }
  static Vector broadcast(float v) { return _mm256_set1_ps(v); }
  static Vector fmadd(Vector a, Vector b, Vector c) { return _mm256_fmadd_ps(a, b, c); }
};

// X^T s into partial for the columns [first, first + width), width <= Vectors * lanes: the
// block's partial sums stay in registers over all the rows (the last vector's columns by masked
// loads and stores, whose lanes past width read and write nothing).
template <int Vectors, class T>
void add_weighted_columns(const T* X, std::size_t rows, std::size_t features, const T* s,
                          T* partial, std::size_t first, std::size_t width) {
  using Ops = VectorOps<T>;
  constexpr std::size_t lanes = Ops::lanes;
  const auto mask = Ops::mask(static_cast<std::int64_t>(width - (Vectors - 1) * lanes));
  typename Ops::Vector acc[Vectors];
  T* p = partial + first;
#pragma GCC unroll 8
  for (int v = 0; v + 1 < Vectors; ++v) acc[v] = Ops::load(p + v * lanes);
  acc[Vectors - 1] = Ops::maskload(p + (Vectors - 1) * lanes, mask);
  const T* x = X + first;
  for (std::size_t i = 0; i < rows; ++i, x += features) {
    const auto si = Ops::broadcast(s[i]);
#pragma GCC unroll 8
    for (int v = 0; v + 1 < Vectors; ++v) acc[v] = Ops::fmadd(Ops::load(x + v * lanes), si, acc[v]);
    acc[Vectors - 1] =
        Ops::fmadd(Ops::maskload(x + (Vectors - 1) * lanes, mask), si, acc[Vectors - 1]);
  }
#pragma GCC unroll 8
  for (int v = 0; v + 1 < Vectors; ++v) Ops::store(p + v * lanes, acc[v]);
  Ops::maskstore(p + (Vectors - 1) * lanes, mask, acc[Vectors - 1]);
}

template <class T>
void add_weighted_rows_blocks(const T* X, std::size_t rows, std::size_t features, const T* s,
                              T* partial) {
  constexpr std::size_t lanes = VectorOps<T>::lanes;
  constexpr std::size_t block = 8 * lanes;  // 8 accumulators of the 16 registers
  for (std::size_t first = 0; first < features; first += block) {
    const std::size_t width = std::min(block, features - first);
    switch ((width + lanes - 1) / lanes) {
      case 1: add_weighted_columns<1>(X, rows, features, s, partial, first, width); break;
      case 2: add_weighted_columns<2>(X, rows, features, s, partial, first, width); break;
      case 3: add_weighted_columns<3>(X, rows, features, s, partial, first, width); break;
      case 4: add_weighted_columns<4>(X, rows, features, s, partial, first, width); break;
      case 5: add_weighted_columns<5>(X, rows, features, s, partial, first, width); break;
      case 6: add_weighted_columns<6>(X, rows, features, s, partial, first, width); break;
      case 7: add_weighted_columns<7>(X, rows, features, s, partial, first, width); break;
      default: add_weighted_columns<8>(X, rows, features, s, partial, first, width); break;
    }
  }
}

}  // namespace

void add_weighted_rows_avx2(const double* X, std::size_t rows, std::size_t features,
                            const double* s, double* partial) {
  add_weighted_rows_blocks(X, rows, features, s, partial);
}

void add_weighted_rows_avx2(const float* X, std::size_t rows, std::size_t features,
                            const float* s, float* partial) {
  add_weighted_rows_blocks(X, rows, features, s, partial);
}

void row_dots_avx2(const double* X, std::size_t rows, std::size_t features, const double* v,
                   double* out) {
  const double* w = padded(v, features);
  const std::size_t full = features / 8 * 8;
  const bool tail = full < features;
  const auto rest = static_cast<std::int64_t>(features - full);
  const __m256i mask_lo = lanes_below(rest);
  const __m256i mask_hi = lanes_below(rest - 4);
  std::size_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const double* x = X + i * features;
    const __m256d a = row_lanes(x, w, full, tail, mask_lo, mask_hi);
    const __m256d b = row_lanes(x + features, w, full, tail, mask_lo, mask_hi);
    const __m256d c = row_lanes(x + 2 * features, w, full, tail, mask_lo, mask_hi);
    const __m256d d = row_lanes(x + 3 * features, w, full, tail, mask_lo, mask_hi);
    const __m256d ab = _mm256_hadd_pd(a, b);  // a0+a1, b0+b1, a2+a3, b2+b3
    const __m256d cd = _mm256_hadd_pd(c, d);
    const __m256d first = _mm256_permute2f128_pd(ab, cd, 0x20);   // (v0 + v1) of a, b, c, d
    const __m256d second = _mm256_permute2f128_pd(ab, cd, 0x31);  // (v2 + v3)
    _mm256_storeu_pd(out + i, _mm256_add_pd(first, second));
  }
  for (; i < rows; ++i) out[i] = finish(row_lanes(X + i * features, w, full, tail, mask_lo, mask_hi));
}

void row_dots_avx2(const float* X, std::size_t rows, std::size_t features, const float* v,
                   float* out) {
  const float* w = padded(v, features);
  const std::size_t full = features / 8 * 8;
  const bool tail = full < features;
  const auto rest = static_cast<std::int32_t>(features - full);
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(rest), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  std::size_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* x = X + i * features;
    const __m128 a = row_lanes(x, w, full, tail, mask, mask);
    const __m128 b = row_lanes(x + features, w, full, tail, mask, mask);
    const __m128 c = row_lanes(x + 2 * features, w, full, tail, mask, mask);
    const __m128 d = row_lanes(x + 3 * features, w, full, tail, mask, mask);
    const __m128 ab = _mm_hadd_ps(a, b);  // a0+a1, a2+a3, b0+b1, b2+b3
    const __m128 cd = _mm_hadd_ps(c, d);
    _mm_storeu_ps(out + i, _mm_hadd_ps(ab, cd));  // (v0 + v1) + (v2 + v3) of a, b, c, d
  }
  for (; i < rows; ++i) out[i] = finish(row_lanes(X + i * features, w, full, tail, mask, mask));
}

void row_dots_and_squares_avx2(const double* X, std::size_t rows, std::size_t features,
                               const double* v, double* out, double* squares) {
  const double* w = padded(v, features);
  const std::size_t full = features / 8 * 8;
  const bool tail = full < features;
  const auto rest = static_cast<std::int64_t>(features - full);
  const __m256i mask_lo = lanes_below(rest);
  const __m256i mask_hi = lanes_below(rest - 4);
  // Four rows at a time, reduced as row_dots_avx2 reduces them.
  const auto reduce = [](__m256d a, __m256d b, __m256d c, __m256d d) {
    const __m256d ab = _mm256_hadd_pd(a, b);
    const __m256d cd = _mm256_hadd_pd(c, d);
    return _mm256_add_pd(_mm256_permute2f128_pd(ab, cd, 0x20), _mm256_permute2f128_pd(ab, cd, 0x31));
  };
  std::size_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const double* x = X + i * features;
    __m256d dot[4];
    __m256d square[4];
    for (std::size_t k = 0; k < 4; ++k) {
      row_lanes_and_squares(x + k * features, w, full, tail, mask_lo, mask_hi, dot[k], square[k]);
    }
    _mm256_storeu_pd(out + i, reduce(dot[0], dot[1], dot[2], dot[3]));
    _mm256_storeu_pd(squares + i, reduce(square[0], square[1], square[2], square[3]));
  }
  for (; i < rows; ++i) {
    __m256d dot;
    __m256d square;
    row_lanes_and_squares(X + i * features, w, full, tail, mask_lo, mask_hi, dot, square);
    out[i] = finish(dot);
    squares[i] = finish(square);
  }
}

void row_dots_and_squares_avx2(const float* X, std::size_t rows, std::size_t features,
                               const float* v, float* out, float* squares) {
  const float* w = padded(v, features);
  const std::size_t full = features / 8 * 8;
  const bool tail = full < features;
  const auto rest = static_cast<std::int32_t>(features - full);
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(rest), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const auto reduce = [](__m128 a, __m128 b, __m128 c, __m128 d) {
    return _mm_hadd_ps(_mm_hadd_ps(a, b), _mm_hadd_ps(c, d));
  };
  std::size_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* x = X + i * features;
    __m128 dot[4];
    __m128 square[4];
    for (std::size_t k = 0; k < 4; ++k) {
      row_lanes_and_squares(x + k * features, w, full, tail, mask, mask, dot[k], square[k]);
    }
    _mm_storeu_ps(out + i, reduce(dot[0], dot[1], dot[2], dot[3]));
    _mm_storeu_ps(squares + i, reduce(square[0], square[1], square[2], square[3]));
  }
  for (; i < rows; ++i) {
    __m128 dot;
    __m128 square;
    row_lanes_and_squares(X + i * features, w, full, tail, mask, mask, dot, square);
    out[i] = finish(dot);
    squares[i] = finish(square);
  }
}

}  // namespace rh::cpu::detail
