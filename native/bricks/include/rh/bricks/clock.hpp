// Where time comes from. The profiler reads the CPU clock inline on its hot path; any other clock
// (CUDA events, a test's manual clock) goes through ClockSource, whose marks may resolve later.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define RH_BRICKS_HAS_TSC 1
#else
#define RH_BRICKS_HAS_TSC 0
#endif

namespace rh::bricks {

// A clock whose readings ("marks") may only be known later, as with CUDA events recorded on a
// stream: mark() at scope start and stop returns tokens; the profiler asks for their times after
// synchronize(), when the sync mode says so (after each brick, each batch, or at flush).
// mark(), synchronize() and resolve_ns() run inside scope destructors and must not throw: a
// device clock that fails keeps the error for the engine to raise and returns 0.
class ClockSource {
 public:
  using Token = std::uint64_t;
  virtual ~ClockSource() = default;

  virtual std::string_view name() const noexcept = 0;
  // Records a mark at this point of the clock's timeline (for CUDA: an event on the stream).
  virtual Token mark() = 0;
  // Waits until every mark returned so far has happened, so resolve_ns() may be called on them.
  virtual void synchronize() = 0;
  // Time of a completed mark in ns on the profiler's timeline (the same epoch as now_ns()).
  virtual std::int64_t resolve_ns(Token token) = 0;
  // Every token issued so far has been resolved; the source may reuse their storage (event pools).
  virtual void recycle() = 0;
};

// ClockSource over std::chrono::steady_clock: a synchronous clock behind the asynchronous
// interface. It is the reference implementation for device clocks and lets the per_batch and
// deferred paths run, and be measured, without a device. Tokens are the readings themselves.
class SteadyClockSource final : public ClockSource {
 public:
  SteadyClockSource() noexcept;
  std::string_view name() const noexcept override { return "steady_clock_source"; }
  Token mark() override;
  void synchronize() override {}
  std::int64_t resolve_ns(Token token) override;
  void recycle() override {}

 private:
  std::int64_t epoch_ns_;
};

struct CpuFeatures {
  bool tsc = false;            // cpuid.1:EDX[4]
  bool invariant_tsc = false;  // cpuid.80000007:EDX[8]: constant rate, ticks through C-states
};
CpuFeatures detect_cpu_features() noexcept;

// The CPU timebase. With an invariant TSC it reads the time-stamp counter and converts ticks to ns
// with a factor calibrated once against steady_clock; ticks are then also the reported "cycles".
// Without one (or when told not to use it) it reads steady_clock and reports 0 cycles. The
// calibration sleeps ~5 ms, once per process, so a clock that is never read (an off profiler's)
// skips it. It reads with rdtsc, not rdtscp: rdtscp
// waits for earlier instructions to retire, which doubles the read on the reference machine
// (22.9 vs 11.4 ns; steady_clock is 29 ns), while the ordering error it removes, tens of cycles,
// is noise against bricks of microseconds.
class CpuClock {
 public:
  // allow_tsc false: steady_clock, with no TSC calibration.
  explicit CpuClock(bool allow_tsc = true) noexcept;

  bool uses_tsc() const noexcept { return use_tsc_; }
  double tsc_ghz() const noexcept { return use_tsc_ ? 1.0 / ns_per_tick_ : 0.0; }

  // Raw reading: TSC ticks, or steady_clock ns.
  std::uint64_t ticks() const noexcept {
#if RH_BRICKS_HAS_TSC
    if (use_tsc_) return __rdtsc();
#endif
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  // Converts a tick difference to ns; 128-bit fixed point so long spans do not overflow.
  std::int64_t to_ns(std::uint64_t dticks) const noexcept {
    if (!use_tsc_) return static_cast<std::int64_t>(dticks);
    __extension__ using u128 = unsigned __int128;  // __extension__: accepted under -Wpedantic
    return static_cast<std::int64_t>((static_cast<u128>(dticks) * mult_) >> 32);
  }
  // Cycles elapsed over a tick difference (0 when there is no TSC).
  std::uint64_t to_cycles(std::uint64_t dticks) const noexcept { return use_tsc_ ? dticks : 0; }

 private:
  bool use_tsc_;
  double ns_per_tick_ = 1.0;
  std::uint64_t mult_ = 0;  // ns per tick, Q32.32
};

}  // namespace rh::bricks
