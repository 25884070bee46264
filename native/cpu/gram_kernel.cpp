// The thin-Gram kernel's dispatch and its portable variant (gram_kernel.hpp).
//
// Why a hand-written kernel: the engine's Gram X~^T diag(w c) X~ is thin, d = p + 1 of the order
// of 5 to 100 against tens of thousands of rows, and no library does these shapes well. OpenBLAS
// 0.3.21 (Debian, its Zen kernels) DSYRK on rows scaled beforehand, one thread, 65,536 rows,
// reaches 9-10 GFLOP/s at d = 17 and 13-14 at d = 33 in float64 (14-17 and 21-25 in float32) on
// an AMD EPYC (Zen 3) whose one-core DGEMM peak is 39.2 GFLOP/s; the engine's library path also
// pays the sqrt(w c)-scaled copy of the rows (20-50 % more at d <= 33). This kernel reads X once,
// stages sqrt(w)-scaled rows in L1-sized sub-chunks and keeps register tiles of 12 accumulators
// busy on them (gram_kernel_tiles.hpp, AVX2 then): 1.3-1.65x DSYRK in float64 and 1.4-1.9x in float32 at
// d = 5..65 there (per-block minimum times, a loaded 2-core machine, experiments
// thin-gram-round-3-* in docs/perf/experiments.jsonl), 1.5-2.2x the previous version of this
// kernel; measured by native/bench/bench_gram_kernel.cpp. The crossovers below are the
// measured ones (docs/native.md, "Thin Gram kernel").

#include "gram_kernel.hpp"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rh::cpu::gram {
namespace {

Mode mode_from_environment() {
  const char* value = std::getenv("RH_GRAM_KERNEL");
  if (value == nullptr) return Mode::automatic;
  if (std::strcmp(value, "library") == 0) return Mode::library;
  if (std::strcmp(value, "scalar") == 0) return Mode::scalar;
  if (std::strcmp(value, "avx2") == 0) return Mode::avx2;
  if (std::strcmp(value, "avx512") == 0) return Mode::avx512;
  return Mode::automatic;
}

std::atomic<Mode>& mode_slot() {
  static std::atomic<Mode> slot{mode_from_environment()};
  return slot;
}

// The portable variant: per row, u = sqrt(w) x~ into a row buffer, then the triangle row by row,
// g[a][b] += u[b] * u[a] (multiply, then add: this file is compiled with -ffp-contract=off).
template <class T>
void accumulate_scalar(const T* X, std::size_t features, bool intercept, const T* weights,
                       const std::size_t* rows, std::size_t count, T* gram) {
  const std::size_t dim = features + (intercept ? 1 : 0);
  thread_local std::vector<T> buffer;
  if (buffer.size() < dim) buffer.resize(dim);
  T* u = buffer.data();
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t row = rows[k];
    const T* x = X + row * features;
    const T root = std::sqrt(weights[row]);
    for (std::size_t b = 0; b < features; ++b) u[b] = root * x[b];
    if (intercept) u[features] = root;
    for (std::size_t a = 0; a < dim; ++a) {
      const T ua = u[a];
      T* g = gram + a * dim;
      for (std::size_t b = 0; b <= a; ++b) g[b] += u[b] * ua;
    }
  }
}

}  // namespace

Mode mode() { return mode_slot().load(std::memory_order_relaxed); }
void set_mode(Mode m) { mode_slot().store(m, std::memory_order_relaxed); }

bool cpu_has_avx2_fma() {
#if defined(RH_GRAM_KERNEL_AVX2)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(RH_GRAM_KERNEL_AVX2)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

Isa kernel_isa() {
  const Mode m = mode();
  if (m == Mode::scalar) return Isa::scalar;
  if (m != Mode::avx2 && cpu_has_avx512()) return Isa::avx512;
  return cpu_has_avx2_fma() ? Isa::avx2 : Isa::scalar;
}

// Measured with native/bench/bench_gram_kernel.cpp against the engine's library path (scaled
// copy + SYRK), one thread. The first kernel on the Xeon reference machine (CPU time, best of 7):
// float64 kernel/library 1.2-1.4x at d = 9..65, 0.99x at 91, 0.83x at 129, 0.71x at 257;
// float32 1.2-1.7x at d = 9..129, 0.73x at 257. The current kernel on an AMD EPYC (Zen 3, CPU-time
// medians of 7, loaded machine): float64 1.08x at d = 65, 1.09x at 91, 1.04x at 129 (a wash);
// float32 0.97x at 65, 1.7x at 91, 1.2x at 129, 1.03x at 257. The crossovers stay where both
// machines agree the kernel wins. The AVX-512 kernel on an AMD EPYC (Zen 5, whose Debian
// OpenBLAS runs its Haswell kernels; real-time medians of 3 rounds x 3 repetitions,
// 2026-12-05): float64 1.9x the library at d = 129 and 1.7x at 257, float32 2.1x and 1.9x. On
// the Xeon it ran 1.4x its AVX2 variant at d = 91, which would put it about level with the
// library there at 257 (0.71x x 1.4; estimated, not measured). So with AVX-512 the kernel forms
// every Gram up to 257, the largest d measured. The portable variant never beats the library
// (0.3-0.6x): on a CPU without AVX2 + FMA the library forms every Gram.
template <std::floating_point T>
std::size_t crossover(Isa isa) {
  if (isa == Isa::scalar) return 0;
  if (isa == Isa::avx512) return 257;
  return std::same_as<T, double> ? 96 : 160;
}

template <std::floating_point T>
bool use_kernel(std::size_t dim) {
  switch (mode()) {
    case Mode::library: return false;
    case Mode::scalar:
    case Mode::avx2:
    case Mode::avx512: return true;
    case Mode::automatic: break;
  }
  return dim <= crossover<T>(kernel_isa());
}

template <std::floating_point T>
void accumulate_lower(Isa isa, const T* X, std::size_t features, bool intercept, const T* weights,
                      const std::size_t* rows, std::size_t count, T* gram) {
  if (count == 0) return;
#if defined(RH_GRAM_KERNEL_AVX2)
  if (isa == Isa::avx512 && cpu_has_avx512()) {
    detail::accumulate_lower_avx512(X, features, intercept, weights, rows, count, gram);
    return;
  }
  if (isa != Isa::scalar && cpu_has_avx2_fma()) {
    detail::accumulate_lower_avx2(X, features, intercept, weights, rows, count, gram);
    return;
  }
#else
  (void)isa;
#endif
  accumulate_scalar(X, features, intercept, weights, rows, count, gram);
}

template std::size_t crossover<float>(Isa);
template std::size_t crossover<double>(Isa);
template bool use_kernel<float>(std::size_t);
template bool use_kernel<double>(std::size_t);
template void accumulate_lower<float>(Isa, const float*, std::size_t, bool, const float*,
                                      const std::size_t*, std::size_t, float*);
template void accumulate_lower<double>(Isa, const double*, std::size_t, bool, const double*,
                                       const std::size_t*, std::size_t, double*);

}  // namespace rh::cpu::gram
