// The thin-Gram kernel's AVX2 + FMA variant (gram_kernel.hpp; the body: gram_kernel_tiles.hpp).
// This file alone is compiled with -mavx2 -mfma (native/CMakeLists.txt); it is called only after
// a run-time check of the CPU.

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "gram_kernel.hpp"
#include "gram_kernel_tiles.hpp"

namespace rh::cpu::gram::detail {
namespace {

// Register tiles: 1 vector x up to 12 rows (12 accumulators, the column, a broadcast) or
// 2 vectors x up to 6 rows (12 accumulators, 2 columns, a broadcast): 14 or 15 of the 16 ymm
// registers. Per staged row, 12 FMAs and 13 or 8 loads.
template <class T>
struct Avx2;

template <>
struct Avx2<double> {
  using Reg = __m256d;
  using Mask = __m256i;
  using Unit = __m256d;
  static constexpr std::size_t lanes = 4;
  static constexpr std::size_t max_rows_1 = 12;
  static constexpr std::size_t max_rows_2 = 6;
  static Reg load(const double* p) { return _mm256_loadu_pd(p); }
  static Reg load(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void store(double* p, Reg v) { _mm256_storeu_pd(p, v); }
  static Reg broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_pd(a, b); }
  static Reg sqrt(Reg a) { return _mm256_sqrt_pd(a); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_pd(a, b, c); }
  // Lanes i with first + i < limit set, built in registers (a compare with the lane indices).
  static Mask below(std::ptrdiff_t first, std::ptrdiff_t limit) {
    const std::int64_t n = std::clamp<std::ptrdiff_t>(limit - first, -1, lanes);
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static Unit unit(std::ptrdiff_t lane) {  // 1.0 in `lane` (if in range), +0.0 elsewhere
    alignas(32) std::array<double, lanes> v{};
    if (lane >= 0 && lane < std::ptrdiff_t(lanes)) v[std::size_t(lane)] = 1.0;
    return _mm256_load_pd(v.data());
  }
  // root * 1.0 in the unit's lane, root * +0 = +0 elsewhere, OR-ed into v (+0 there).
  static Reg with_unit(Reg v, Unit one, Reg root) { return _mm256_or_pd(v, _mm256_mul_pd(one, root)); }
};

template <>
struct Avx2<float> {
  using Reg = __m256;
  using Mask = __m256i;
  using Unit = __m256;
  static constexpr std::size_t lanes = 8;
  static constexpr std::size_t max_rows_1 = 12;
  static constexpr std::size_t max_rows_2 = 6;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg sqrt(Reg a) { return _mm256_sqrt_ps(a); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Mask below(std::ptrdiff_t first, std::ptrdiff_t limit) {
    const auto n = static_cast<std::int32_t>(std::clamp<std::ptrdiff_t>(limit - first, -1, lanes));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Unit unit(std::ptrdiff_t lane) {
    alignas(32) std::array<float, lanes> v{};
    if (lane >= 0 && lane < std::ptrdiff_t(lanes)) v[std::size_t(lane)] = 1.0f;
    return _mm256_load_ps(v.data());
  }
  static Reg with_unit(Reg v, Unit one, Reg root) { return _mm256_or_ps(v, _mm256_mul_ps(one, root)); }
};

}  // namespace

void accumulate_lower_avx2(const double* X, std::size_t features, bool intercept,
                           const double* weights, const std::size_t* rows, std::size_t count,
                           double* gram) {
  tiles::accumulate<Avx2<double>>(X, features, intercept, weights, rows, count, gram);
}

void accumulate_lower_avx2(const float* X, std::size_t features, bool intercept,
                           const float* weights, const std::size_t* rows, std::size_t count,
                           float* gram) {
  tiles::accumulate<Avx2<float>>(X, features, intercept, weights, rows, count, gram);
}

}  // namespace rh::cpu::gram::detail
