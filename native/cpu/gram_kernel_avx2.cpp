// The thin-Gram kernel's AVX2 + FMA variant (gram_kernel.hpp). This file alone is compiled with
// -mavx2 -mfma (native/CMakeLists.txt); it is called only after a run-time check of the CPU.
//
// Per L1-sized sub-chunk of the listed rows, the rows u = sqrt(w) x~ are staged (the intercept's
// entry sqrt(w), the row padded with zeros to whole vectors), rounded exactly as the library
// path's scaled rows; then the lower triangle is cut into column panels of up to 2 vectors and,
// within a panel, rows a of the triangle go 6 at a time through a register tile of accumulators:
// acc[a][b..] = fma(u[b..], broadcast u[a], acc). Each tile loads its accumulators from the Gram,
// runs over the sub-chunk and stores them back, so each entry is one running sum over all rows
// in order, whatever the cut. Why stage rather than weight one side in registers: the product
// must be symmetric, (sqrt(w) x_a)(sqrt(w) x_b), for exactly duplicated columns to give exactly
// duplicated Gram rows (w x_b) x_a is not); scaling the broadcast side in registers too would
// add a multiply per broadcast (about 40 % more arithmetic at d = 17), the L1 staging about 8 %.

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gram_kernel.hpp"

namespace rh::cpu::gram::detail {
namespace {

template <class T>
struct Simd;

template <>
struct Simd<double> {
  using Reg = __m256d;
  using Mask = __m256i;
  static constexpr std::size_t lanes = 4;
  static Reg zero() { return _mm256_setzero_pd(); }
  static Reg load(const double* p) { return _mm256_loadu_pd(p); }
  static Reg load(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, Mask m, Reg v) { _mm256_maskstore_pd(p, m, v); }
  static Reg broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_pd(a, b); }
  static Reg add(Reg a, Reg b) { return _mm256_add_pd(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_pd(a, b, c); }
  static Reg bit_or(Reg a, Reg b) { return _mm256_or_pd(a, b); }
  // Lanes i with first + i < limit set.
  // In registers (a compare with the lane indices): no round trip through memory, which stalls
  // on store forwarding; every tile builds its masks.
  static Mask below(std::ptrdiff_t first, std::ptrdiff_t limit) {
    const std::int64_t n = std::clamp<std::ptrdiff_t>(limit - first, -1, lanes);
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static Reg unit(std::ptrdiff_t lane) {  // 1.0 in `lane` (if in range), +0.0 elsewhere
    alignas(32) std::array<double, lanes> v{};
    if (lane >= 0 && lane < std::ptrdiff_t(lanes)) v[std::size_t(lane)] = 1.0;
    return _mm256_load_pd(v.data());
  }
};

template <>
struct Simd<float> {
  using Reg = __m256;
  using Mask = __m256i;
  static constexpr std::size_t lanes = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, Mask m, Reg v) { _mm256_maskstore_ps(p, m, v); }
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg bit_or(Reg a, Reg b) { return _mm256_or_ps(a, b); }
  static Mask below(std::ptrdiff_t first, std::ptrdiff_t limit) {
    const auto n = static_cast<std::int32_t>(std::clamp<std::ptrdiff_t>(limit - first, -1, lanes));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Reg unit(std::ptrdiff_t lane) {
    alignas(32) std::array<float, lanes> v{};
    if (lane >= 0 && lane < std::ptrdiff_t(lanes)) v[std::size_t(lane)] = 1.0f;
    return _mm256_load_ps(v.data());
  }
};

// Tiles of up to 6 rows x 2 vectors: 12 accumulators, 2 column vectors and a broadcast (15 of
// the 16 ymm registers), 8 columns in float64 and 16 in float32. Per staged row: 2 loads, 6
// broadcasts and 12 FMAs, which two FMA ports retire in 6 cycles.
constexpr std::size_t max_rows = 6;
constexpr std::size_t max_vectors = 2;

// A sub-chunk of staged rows u_k = sqrt(w) x~ (stride a multiple of the lanes, zero padded) and
// the Gram it is added to.
template <class T>
struct Staged {
  const T* u;
  std::size_t stride;
  std::size_t count;
  T* gram;
  std::size_t dim;
};

template <class T>
inline typename Simd<T>::Mask store_mask(const Staged<T>& s, std::size_t a, std::size_t b) {
  // Lanes of row a of the triangle from column b: b + i <= a and b + i < d.
  return Simd<T>::below(std::ptrdiff_t(b), std::ptrdiff_t(std::min(a + 1, s.dim)));
}

// Rows a0 .. a0 + R - 1 of the triangle, columns b0 .. b0 + NV * lanes - 1.
template <class T, std::size_t R, std::size_t NV>
void tile(const Staged<T>& s, std::size_t a0, std::size_t b0) {
  using S = Simd<T>;
  typename S::Reg acc[R][NV];
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t v = 0; v < NV; ++v) {
      acc[r][v] = S::load(s.gram + (a0 + r) * s.dim + b0 + v * S::lanes,
                          store_mask(s, a0 + r, b0 + v * S::lanes));
    }
  }
  const T* u = s.u;
  for (std::size_t k = 0; k < s.count; ++k, u += s.stride) {
    typename S::Reg cols[NV];
    for (std::size_t v = 0; v < NV; ++v) cols[v] = S::load(u + b0 + v * S::lanes);
    for (std::size_t r = 0; r < R; ++r) {
      const typename S::Reg ua = S::broadcast(u + a0 + r);
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::fma(cols[v], ua, acc[r][v]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t v = 0; v < NV; ++v) {
      S::store(s.gram + (a0 + r) * s.dim + b0 + v * S::lanes,
               store_mask(s, a0 + r, b0 + v * S::lanes), acc[r][v]);
    }
  }
}

template <class T, std::size_t NV>
void panel(const Staged<T>& s, std::size_t b0) {
  std::size_t a = b0;
  for (; a + max_rows <= s.dim; a += max_rows) tile<T, max_rows, NV>(s, a, b0);
  switch (s.dim - a) {
    case 5: tile<T, 5, NV>(s, a, b0); break;
    case 4: tile<T, 4, NV>(s, a, b0); break;
    case 3: tile<T, 3, NV>(s, a, b0); break;
    case 2: tile<T, 2, NV>(s, a, b0); break;
    case 1: tile<T, 1, NV>(s, a, b0); break;
    default: break;
  }
}

template <class T>
void accumulate(const T* X, std::size_t features, bool intercept, const T* weights,
                const std::size_t* rows, std::size_t count, T* gram) {
  using S = Simd<T>;
  const std::size_t dim = features + (intercept ? 1 : 0);
  const std::size_t stride = (dim + S::lanes - 1) / S::lanes * S::lanes;
  constexpr std::size_t width = max_vectors * S::lanes;
  // Sub-chunks of about 24 KiB of staged rows: they stay in L1 while every tile runs over them.
  const std::size_t sub = std::max<std::size_t>(16, (24u << 10) / (stride * sizeof(T)));
  thread_local std::vector<T> buffer;
  if (buffer.size() < sub * stride) buffer.assign(sub * stride, T{0});
  for (std::size_t k0 = 0; k0 < count; k0 += sub) {
    const std::size_t n = std::min(count, k0 + sub) - k0;
    T* u = buffer.data();
    for (std::size_t k = 0; k < n; ++k, u += stride) {
      const std::size_t row = rows[k0 + k];
      const T root = std::sqrt(weights[row]);
      const T* x = X + row * features;
      for (std::size_t j = 0; j < features; ++j) u[j] = root * x[j];
      if (intercept) u[features] = root;
      for (std::size_t j = dim; j < stride; ++j) u[j] = T{0};
    }
    const Staged<T> s{buffer.data(), stride, n, gram, dim};
    for (std::size_t b0 = 0; b0 < dim; b0 += width) {
      if (dim - b0 > S::lanes) {
        panel<T, 2>(s, b0);
      } else {
        panel<T, 1>(s, b0);
      }
    }
  }
}

}  // namespace

void accumulate_lower_avx2(const double* X, std::size_t features, bool intercept,
                           const double* weights, const std::size_t* rows, std::size_t count,
                           double* gram) {
  accumulate(X, features, intercept, weights, rows, count, gram);
}

void accumulate_lower_avx2(const float* X, std::size_t features, bool intercept,
                           const float* weights, const std::size_t* rows, std::size_t count,
                           float* gram) {
  accumulate(X, features, intercept, weights, rows, count, gram);
}

}  // namespace rh::cpu::gram::detail
