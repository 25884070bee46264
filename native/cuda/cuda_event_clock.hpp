#pragma once
// A bricks ClockSource (rh/bricks/clock.hpp) on CUDA events: mark() records an event on the
// stream and returns at once, so a scope around queued work measures the device's time, not the
// launch's. Marks are read after synchronize(); run the profiler in SyncMode::per_batch (one
// synchronization per batch) or deferred.
//
// The profiler calls mark(), synchronize() and resolve_ns() from noexcept scopes, so they never
// throw: the first failure poisons the clock (it records nothing more, and reads as 0) and
// error() describes it, for the engine to report when the profile is read.
//
// Timeline: ns since the clock was created (construct it just before the profiler). Each
// resolve measures from an anchor event no older than the last recycle(), because
// cudaEventElapsedTime returns float milliseconds, which over a long run would lose the
// sub-microsecond resolution the events have.
//
//   auto clock = std::make_unique<rh::cuda::CudaEventClock>(stream);
//   rh::bricks::Profiler profiler(table, {.sync_mode = SyncMode::per_batch}, std::move(clock));

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rh/bricks/clock.hpp"

namespace rh::cuda {

class CudaEventClock final : public bricks::ClockSource {
 public:
  // The stream must outlive the clock. Events are created up front (`reserve`) and whenever a
  // batch needs more, so a warm profiler creates none.
  explicit CudaEventClock(cudaStream_t stream, std::size_t reserve = 1024);
  ~CudaEventClock() override;
  CudaEventClock(const CudaEventClock&) = delete;
  CudaEventClock& operator=(const CudaEventClock&) = delete;

  std::string_view name() const noexcept override { return "cuda_event"; }
  Token mark() noexcept override;
  void synchronize() noexcept override;
  std::int64_t resolve_ns(Token token) noexcept override;
  void recycle() noexcept override;

  cudaStream_t stream() const noexcept { return stream_; }
  // "" while every mark was recorded and read; else what failed first (the profile is lost).
  std::string error() const;

 private:
  // Keeps the first failure (no allocation: it runs in noexcept code); `status` is cudaSuccess
  // for a failure of the clock's own bookkeeping.
  void fail(const char* what, cudaError_t status) noexcept;
  bool failed() const noexcept { return failure_ != nullptr; }

  cudaStream_t stream_;
  const char* failure_ = nullptr;
  cudaError_t failure_status_ = cudaSuccess;
  std::vector<cudaEvent_t> events_;  // events_[k] is token base_ + k while in use
  std::size_t used_ = 0;
  Token base_ = 0;
  cudaEvent_t anchor_ = nullptr;     // a completed event at anchor_ns_ on the timeline
  std::int64_t anchor_ns_ = 0;
  Token last_resolved_ = 0;          // the latest-resolved token, the next anchor
  std::int64_t last_resolved_ns_ = 0;
  bool any_resolved_ = false;
};

}  // namespace rh::cuda
