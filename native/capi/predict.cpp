// rh_cpu.h: predictions X coef + intercept on the engine's own threads.
//
// Written here rather than left to NumPy's matmul: NumPy's OpenBLAS runs a large product on its
// own worker threads, which then poll for ~0.1 s (OpenBLAS's THREAD_TIMEOUT) beside the engine's
// threads; a stream that predicts each batch before learning from it (prequential evaluation,
// `rhuber profile`) took 1.7x as long at n_jobs=2 (docs/native.md, "Predictions"). The engine's
// pool sleeps between runs outside an update, and its row kernel is the one the residuals use.

#include <cstddef>
#include <cstdint>

#include "capi.hpp"
#include "row_blocks.hpp"
#include "row_dots.hpp"
#include "thread_pool.hpp"

namespace {

template <class T>
void predict_rows(const T* x, std::size_t rows, std::size_t cols, const T* coef, T intercept,
                  std::size_t threads, T* out) {
  const auto predict = [&](std::size_t begin, std::size_t end) {
    rh::cpu::row_dots(x + begin * cols, end - begin, cols, coef, out + begin);
    for (std::size_t i = begin; i < end; ++i) out[i] += intercept;
  };
  // One pass, outside an update: the pool's workers are asleep, and waking one (~50 µs on a KVM
  // guest) is repaid from about 2^20 entries (~0.4 ms on one thread); a 4,096 x 32 block took
  // 81 us on two threads and 23 on one.
  constexpr std::size_t min_pool_entries = std::size_t{1} << 20;
  if (threads <= 1 || rows * cols < min_pool_entries) {
    predict(0, rows);
    return;
  }
  const rh::cpu::RowBlocks blocks(rows);
  rh::cpu::shared_pool(threads)->run(blocks.count(), [&](std::size_t b) {
    predict(blocks.begin(b), blocks.end(b));
  });
}

}  // namespace

extern "C" {

using rh::capi::guarded;
using rh::capi::need;

int rh_cpu_predict(const void* x, int32_t dtype, int64_t rows, int64_t cols, const void* coef,
                   double intercept, int32_t threads, void* out) {
  return guarded([&] {
    if (rows < 0 || cols < 1) {
      rh::fail("rows must be >= 0 and cols >= 1, got ", rows, " and ", cols);
    }
    if (threads < 0) rh::fail("threads must be >= 0 (0: all cores), got ", threads);
    if (rows == 0) return;
    need(x, "x");
    need(coef, "coef");
    need(out, "out");
    const auto n = static_cast<std::size_t>(rows);
    const auto p = static_cast<std::size_t>(cols);
    const std::size_t workers = rh::cpu::resolve_threads(static_cast<std::size_t>(threads));
    if (dtype == RH_CPU_FLOAT32) {
      predict_rows(static_cast<const float*>(x), n, p, static_cast<const float*>(coef),
                   static_cast<float>(intercept), workers, static_cast<float*>(out));
    } else if (dtype == RH_CPU_FLOAT64) {
      predict_rows(static_cast<const double*>(x), n, p, static_cast<const double*>(coef),
                   intercept, workers, static_cast<double*>(out));
    } else {
      rh::fail("dtype must be RH_CPU_FLOAT32 or RH_CPU_FLOAT64, got ", dtype);
    }
  });
}

}  // extern "C"
