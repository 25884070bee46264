#pragma once
// What every engine does with its profiler around a batch update (docs/profiling.md): scopes of
// an engine nobody profiles point at an off profiler, and a batch scope opens and closes the
// profiler's batch. Only engines built with rh::bricks include this.

#include <cstddef>
#include <cstdint>

#include "rh/bricks/profiler.hpp"
#include "rh/engine_bricks.hpp"

namespace rh {

// The profiler of an engine that is not profiling: its mode is off, so each scope is one
// predictable branch and nothing is recorded; its clock is never read, so it skips the TSC
// calibration (a 5 ms sleep in a process's first update).
inline rh::bricks::Profiler& off_engine_profiler() {
  static rh::bricks::Profiler off = [] {
    rh::bricks::Options options;
    options.sync_mode = rh::bricks::SyncMode::off;
    options.track_page_faults = false;
    options.tsc = false;
    return rh::bricks::Profiler(engine_brick_table(), options);
  }();
  return off;
}

// begin_batch() now, end_batch() however the update leaves (a validation error too), with the
// batch's iteration count as the solver reported it. A failure to close the batch (a device
// clock that cannot be read, say) loses this batch's timing, never the update.
class EngineBatchScope {
 public:
  EngineBatchScope(rh::bricks::Profiler& prof, std::size_t rows)
      : prof_(prof), on_(prof.recording()) {
    if (on_) prof_.begin_batch(rows);
  }
  ~EngineBatchScope() {
    if (!on_) return;
    try {
      if (iterations_ > 0) prof_.set_iteration(static_cast<std::uint32_t>(iterations_ - 1));
      prof_.end_batch();
    } catch (...) {
    }
  }
  EngineBatchScope(const EngineBatchScope&) = delete;
  EngineBatchScope& operator=(const EngineBatchScope&) = delete;
  void set_iterations(std::int64_t n) { iterations_ = n; }

 private:
  rh::bricks::Profiler& prof_;
  bool on_;
  std::int64_t iterations_ = 0;
};

}  // namespace rh
