#pragma once
// The thin-Gram kernel: the lower triangle of sum_k w_r x~_r x~_r^T over a list of rows r of X
// (x~ = x with the intercept's 1 appended when there is one), straight from X and w: the rows are
// scaled by sqrt(w) into an L1-sized buffer of the thread's on the way (gram_kernel_tiles.hpp). BatchOps uses it for the weighted Gram
// X~^T diag(w c) X~ (full, per row block, and the incremental rank-k corrections) when
// use_kernel<T>(d) says so, and the library's SYRK on sqrt-scaled staged rows otherwise
// (gram_kernel.cpp: why, and the measured crossover).
//
// Every entry (a, b), a >= b, is acc = acc + u_rb u_ra, u_r = sqrt(w_r) x~_r rounded as the
// library path's scaled rows, over the rows in list order (a fused multiply-add in the AVX2 and
// AVX-512 variants, the same bits in both; a multiply then an add in the portable one): the
// result does not depend on how the rows are cut into calls, so an evaluation pass (chunk by
// chunk) and full_gram give the same bits, and the row blocks' fixed partition keeps results
// independent of the thread count. The product is symmetric and every entry, the intercept's
// included, takes the same operations, so exactly duplicated columns (or a column of ones with
// the intercept) give exactly duplicated Gram rows, an exactly singular Gram, as with SYRK.

#include <concepts>
#include <cstddef>

namespace rh::cpu::gram {

enum class Isa { scalar, avx2, avx512 };
// How the Gram is formed: `automatic` picks by d and dtype on the best ISA this CPU runs
// (use_kernel); the others force a path, for tests and benchmarks. Read once from the
// environment variable RH_GRAM_KERNEL (auto | library | scalar | avx2 | avx512; unknown values
// mean auto), changed by set_mode (tests, benchmarks; not thread-safe against running batches).
enum class Mode { automatic, library, scalar, avx2, avx512 };

Mode mode();
void set_mode(Mode mode);
// The ISA of the kernel as the mode selects it: automatic, the widest this CPU runs (AVX-512,
// else AVX2 + FMA, else the portable one); a forced ISA the CPU lacks falls back the same way.
// The AVX2 and AVX-512 variants give the same bits, so the choice changes only the speed.
Isa kernel_isa();
bool cpu_has_avx2_fma();
bool cpu_has_avx512();

// Whether a d-dimensional Gram in T is formed by this kernel (else by the library): d <= the
// crossover measured for T on the ISA, or forced by the mode. Depends on d, T, the mode and the
// CPU only, never on the thread count.
template <std::floating_point T>
bool use_kernel(std::size_t dim);
// The crossover of the automatic mode: the kernel for d <= this.
template <std::floating_point T>
std::size_t crossover(Isa isa);

// gram (d x d, row-major, stride d, d = features + intercept): its lower triangle (a >= b) +=
// sum over k < count of weights[r] x~_r x~_r^T, r = rows[k], x~_r = X + r * features (and 1).
// The strictly upper triangle is not touched.
template <std::floating_point T>
void accumulate_lower(Isa isa, const T* X, std::size_t features, bool intercept, const T* weights,
                      const std::size_t* rows, std::size_t count, T* gram);
template <std::floating_point T>
void accumulate_lower(const T* X, std::size_t features, bool intercept, const T* weights,
                      const std::size_t* rows, std::size_t count, T* gram) {
  accumulate_lower(kernel_isa(), X, features, intercept, weights, rows, count, gram);
}

namespace detail {
// The AVX2 + FMA variant (gram_kernel_avx2.cpp, compiled with -mavx2 -mfma): call only where
// cpu_has_avx2_fma().
void accumulate_lower_avx2(const double* X, std::size_t features, bool intercept,
                           const double* weights, const std::size_t* rows, std::size_t count,
                           double* gram);
void accumulate_lower_avx2(const float* X, std::size_t features, bool intercept,
                           const float* weights, const std::size_t* rows, std::size_t count,
                           float* gram);
// The AVX-512 variant (gram_kernel_avx512.cpp, compiled with -mavx512f): call only where
// cpu_has_avx512().
void accumulate_lower_avx512(const double* X, std::size_t features, bool intercept,
                             const double* weights, const std::size_t* rows, std::size_t count,
                             double* gram);
void accumulate_lower_avx512(const float* X, std::size_t features, bool intercept,
                             const float* weights, const std::size_t* rows, std::size_t count,
                             float* gram);
}  // namespace detail

}  // namespace rh::cpu::gram
