// The engine's profiler (docs/cuda.md, "Profiling"): created when profiling is switched on, on
// CUDA events recorded on the engine's stream (CudaEventClock), resolved once per batch
// (RH_CUDA_PROFILE_PER_BATCH) or only when a report is asked for (RH_CUDA_PROFILE_DEFERRED).

#include <memory>
#include <string>
#include <utility>

#include "cuda_event_clock.hpp"
#include "engine_internal.hpp"
#include "rh/bricks/profiler.hpp"
#include "rh/engine_profiling.hpp"

namespace rh::cuda {
namespace {

rh::bricks::SyncMode sync_mode_of(std::int32_t mode) {
  switch (mode) {
    case RH_CUDA_PROFILE_PER_BATCH:
      return rh::bricks::SyncMode::per_batch;
    case RH_CUDA_PROFILE_DEFERRED:
      return rh::bricks::SyncMode::deferred;
    default:
      throw InvalidArgument("profiling mode must be RH_CUDA_PROFILE_OFF (0), _PER_BATCH (1) or "
                            "_DEFERRED (2), got " + std::to_string(mode));
  }
}

// Events kept for the trace; the counters behind the report are not bounded by it.
constexpr std::size_t trace_capacity = std::size_t{1} << 16;

}  // namespace

rh::bricks::Profiler& EngineCore::profiler() noexcept {
  return profiling_ ? *profiler_ : off_engine_profiler();
}

void EngineCore::set_profiling(std::int32_t mode) {
  DeviceGuard guard(device_);  // the flush and the clock below use the engine's events
  if (mode == RH_CUDA_PROFILE_OFF) {
    if (profiling_) profiler_->flush();  // the last marks become durations while still valid
    profiling_ = false;
    return;
  }
  const rh::bricks::SyncMode sync = sync_mode_of(mode);
  if (profiling_) {
    profiler_->set_sync_mode(sync);
    return;
  }
  rh::bricks::Options options;
  options.sync_mode = sync;
  options.trace_capacity = trace_capacity;
  options.track_page_faults = false;
  profiler_.reset();  // a new profile: its events are freed before the new clock makes its own
  auto clock = std::make_unique<CudaEventClock>(stream_->get());
  clock_ = clock.get();
  profiler_ = std::make_unique<rh::bricks::Profiler>(rh::engine_brick_table(), options,
                                                     std::move(clock));
  profiler_->set_metadata("engine", "cuda");
  profiler_->set_metadata("device", std::to_string(device_));
  profiling_ = true;
}

std::string EngineCore::profile_json(std::int32_t format) {
  if (!profiler_) {
    throw InvalidArgument("profiling was never switched on for this engine: call "
                          "rh_cuda_engine_set_profiling first");
  }
  DeviceGuard guard(device_);
  std::string json;
  switch (format) {
    case RH_CUDA_PROFILE_FORMAT_REPORT:
      json = profiler_->to_json();
      break;
    case RH_CUDA_PROFILE_FORMAT_TRACE:
      profiler_->flush();
      json = profiler_->to_chrome_trace();
      break;
    default:
      throw InvalidArgument("format must be RH_CUDA_PROFILE_FORMAT_REPORT (0) or "
                            "RH_CUDA_PROFILE_FORMAT_TRACE (1), got " + std::to_string(format));
  }
  // The clock cannot throw from the profiler's scopes: a failure it kept is reported here, once
  // its marks have all been read, rather than as a profile with missing or zero durations.
  const std::string failure = clock_->error();
  if (!failure.empty()) throw CudaError("the profile is lost: " + failure);
  return json;
}

}  // namespace rh::cuda
