// rh_cpu.h: the L1 penalty's regime screen (rh/screen.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "capi.hpp"
#include "rh/screen.hpp"

extern "C" {

using rh::capi::guarded;
using rh::capi::need;

int rh_cpu_start_gradient(const void* x, int32_t dtype, int64_t rows, int64_t cols,
                          const void* y, int32_t y_dtype, int32_t has_tau, double tau,
                          double mad_factor, int32_t fit_intercept, double* gradient,
                          double* tau_out) {
  return guarded([&] {
    need(tau_out, "tau_out");
    if (rows < 0 || cols < 1) {
      rh::fail("rows must be >= 0 and cols >= 1, got ", rows, " and ", cols);
    }
    const auto n = static_cast<std::size_t>(rows);
    const auto p = static_cast<std::size_t>(cols);
    if (n > 0) {
      need(x, "x");
      need(y, "y");
    }
    std::vector<double> targets(n);
    if (y_dtype == RH_CPU_FLOAT32) {
      std::copy_n(static_cast<const float*>(y), n, targets.begin());
    } else if (y_dtype == RH_CPU_FLOAT64) {
      std::copy_n(static_cast<const double*>(y), n, targets.begin());
    } else {
      rh::fail("y_dtype must be RH_CPU_FLOAT32 or RH_CPU_FLOAT64, got ", y_dtype);
    }
    const std::span<double> out(need(gradient, "gradient"), p);
    const std::optional<double> given = has_tau ? std::optional<double>(tau) : std::nullopt;
    const bool intercept = fit_intercept != 0;
    if (dtype == RH_CPU_FLOAT32) {
      *tau_out = rh::start_gradient<float>({static_cast<const float*>(x), n * p}, n, p, targets,
                                           given, mad_factor, intercept, out);
    } else if (dtype == RH_CPU_FLOAT64) {
      *tau_out = rh::start_gradient<double>({static_cast<const double*>(x), n * p}, n, p,
                                            targets, given, mad_factor, intercept, out);
    } else {
      rh::fail("dtype must be RH_CPU_FLOAT32 or RH_CPU_FLOAT64, got ", dtype);
    }
  });
}

}  // extern "C"
