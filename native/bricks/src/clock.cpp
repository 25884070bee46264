#include "rh/bricks/clock.hpp"

#include <thread>

#if RH_BRICKS_HAS_TSC
#include <cpuid.h>
#endif

namespace rh::bricks {

CpuFeatures detect_cpu_features() noexcept {
  CpuFeatures f;
#if RH_BRICKS_HAS_TSC
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) f.tsc = (d >> 4) & 1u;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d)) f.invariant_tsc = (d >> 8) & 1u;
#endif
  return f;
}

namespace {

// TSC rate in ticks per ns, measured once per process against steady_clock over ~5 ms: long
// enough that the two clocks' read jitter (~0.1 us) is below 1e-4 of the span.
double calibrate_ticks_per_ns() noexcept {
#if RH_BRICKS_HAS_TSC
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const std::uint64_t c0 = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto t1 = clock::now();
  const std::uint64_t c1 = __rdtsc();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  return ns > 0 ? double(c1 - c0) / ns : 0.0;
#else
  return 0.0;
#endif
}

struct TscCalibration {
  bool usable;
  double ns_per_tick;
};

const TscCalibration& tsc_calibration() noexcept {
  static const TscCalibration cal = [] {
    const CpuFeatures f = detect_cpu_features();
    if (!f.tsc || !f.invariant_tsc) return TscCalibration{false, 1.0};
    const double ticks_per_ns = calibrate_ticks_per_ns();
    if (!(ticks_per_ns > 0.0)) return TscCalibration{false, 1.0};
    return TscCalibration{true, 1.0 / ticks_per_ns};
  }();
  return cal;
}

}  // namespace

namespace {
std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

SteadyClockSource::SteadyClockSource() noexcept : epoch_ns_(steady_ns()) {}

ClockSource::Token SteadyClockSource::mark() { return static_cast<Token>(steady_ns()); }

std::int64_t SteadyClockSource::resolve_ns(Token token) {
  return static_cast<std::int64_t>(token) - epoch_ns_;
}

CpuClock::CpuClock(bool allow_tsc) noexcept {
  use_tsc_ = false;
  if (!allow_tsc) return;
  const TscCalibration& cal = tsc_calibration();
  use_tsc_ = cal.usable;
  if (use_tsc_) {
    ns_per_tick_ = cal.ns_per_tick;
    mult_ = static_cast<std::uint64_t>(ns_per_tick_ * 4294967296.0 + 0.5);
  }
}

}  // namespace rh::bricks
