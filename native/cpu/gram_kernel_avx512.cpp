// The thin-Gram kernel's AVX-512 variant (gram_kernel.hpp; the body: gram_kernel_tiles.hpp).
// This file alone is compiled with -mavx512f (native/CMakeLists.txt); it is called only after a
// run-time check of the CPU. The same chain of fused multiply-adds per entry as the AVX2
// variant, twice as many lanes a vector and twice the registers: the same bits, about half the
// instructions (at d = 17 in float64, 27 FMAs a staged row instead of 53; at d = 91, 612 instead
// of 1,128).

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "gram_kernel.hpp"
#include "gram_kernel_tiles.hpp"

namespace rh::cpu::gram::detail {
namespace {

// Register tiles: 1 vector x up to 24 rows (24 accumulators, the column, a broadcast) or
// 2 vectors x up to 12 rows (24 accumulators, 2 columns, a broadcast) of the 32 zmm registers.
template <class T>
struct Avx512;

template <>
struct Avx512<double> {
  using Reg = __m512d;
  using Mask = __mmask8;
  using Unit = __mmask8;
  static constexpr std::size_t lanes = 8;
  static constexpr std::size_t max_rows_1 = 24;
  static constexpr std::size_t max_rows_2 = 12;
  static Reg load(const double* p) { return _mm512_loadu_pd(p); }
  static Reg load(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, Reg v) { _mm512_storeu_pd(p, v); }
  static Reg broadcast(const double* p) { return _mm512_set1_pd(*p); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_pd(a, b); }
  // Every lane (the zero-masking form: the plain one trips GCC 12's -Wmaybe-uninitialized).
  static Reg sqrt(Reg a) { return _mm512_maskz_sqrt_pd(Mask(0xFF), a); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_pd(a, b, c); }
  static Mask below(std::ptrdiff_t first, std::ptrdiff_t limit) {
    const std::ptrdiff_t n = std::clamp<std::ptrdiff_t>(limit - first, 0, lanes);
    return static_cast<Mask>((1u << n) - 1u);
  }
  static Unit unit(std::ptrdiff_t lane) {
    return lane >= 0 && lane < std::ptrdiff_t(lanes) ? static_cast<Unit>(1u << lane) : Unit{0};
  }
  static Reg with_unit(Reg v, Unit one, Reg root) { return _mm512_mask_mov_pd(v, one, root); }
};

template <>
struct Avx512<float> {
  using Reg = __m512;
  using Mask = __mmask16;
  using Unit = __mmask16;
  static constexpr std::size_t lanes = 16;
  static constexpr std::size_t max_rows_1 = 24;
  static constexpr std::size_t max_rows_2 = 12;
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static Reg load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg sqrt(Reg a) { return _mm512_maskz_sqrt_ps(Mask(0xFFFF), a); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Mask below(std::ptrdiff_t first, std::ptrdiff_t limit) {
    const std::ptrdiff_t n = std::clamp<std::ptrdiff_t>(limit - first, 0, lanes);
    return static_cast<Mask>((1u << n) - 1u);
  }
  static Unit unit(std::ptrdiff_t lane) {
    return lane >= 0 && lane < std::ptrdiff_t(lanes) ? static_cast<Unit>(1u << lane) : Unit{0};
  }
  static Reg with_unit(Reg v, Unit one, Reg root) { return _mm512_mask_mov_ps(v, one, root); }
};

}  // namespace

void accumulate_lower_avx512(const double* X, std::size_t features, bool intercept,
                             const double* weights, const std::size_t* rows, std::size_t count,
                             double* gram) {
  tiles::accumulate<Avx512<double>>(X, features, intercept, weights, rows, count, gram);
}

void accumulate_lower_avx512(const float* X, std::size_t features, bool intercept,
                             const float* weights, const std::size_t* rows, std::size_t count,
                             float* gram) {
  tiles::accumulate<Avx512<float>>(X, features, intercept, weights, rows, count, gram);
}

}  // namespace rh::cpu::gram::detail
