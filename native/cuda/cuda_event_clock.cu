#include "cuda_event_clock.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "rh/error.hpp"

namespace rh::cuda {
namespace {

// The clock is linked without the engine, so it reports CUDA failures itself.
void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw Error(std::string("CudaEventClock: ") + call + " failed: " + cudaGetErrorName(status) +
                " (" + cudaGetErrorString(status) + ")");
  }
}

cudaEvent_t timing_event() {
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDefault), "cudaEventCreateWithFlags");
  return event;
}

}  // namespace

CudaEventClock::CudaEventClock(cudaStream_t stream, std::size_t reserve) : stream_(stream) {
  events_.reserve(reserve);
  try {
    for (std::size_t k = 0; k < reserve; ++k) events_.push_back(timing_event());
    anchor_ = timing_event();
    check(cudaEventRecord(anchor_, stream_), "cudaEventRecord");
  } catch (...) {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (anchor_ != nullptr) cudaEventDestroy(anchor_);
    throw;
  }
}

CudaEventClock::~CudaEventClock() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  cudaEventDestroy(anchor_);
}

void CudaEventClock::fail(const char* what, cudaError_t status) noexcept {
  if (failed()) return;
  failure_ = what;
  failure_status_ = status;
  // Take a non-sticky error off the thread, so that the engine's next launch check does not
  // report the profiler's failure as its own.
  if (status != cudaSuccess) cudaGetLastError();
}

std::string CudaEventClock::error() const {
  if (!failed()) return "";
  std::string message = std::string("CudaEventClock: ") + failure_;
  if (failure_status_ != cudaSuccess) {
    message += std::string(" failed: ") + cudaGetErrorName(failure_status_) + " (" +
               cudaGetErrorString(failure_status_) + ")";
  }
  return message;
}

bricks::ClockSource::Token CudaEventClock::mark() noexcept {
  if (failed()) return base_;  // never resolved: a poisoned clock reads 0
  if (used_ == events_.size()) {  // warm-up only
    cudaEvent_t created = nullptr;
    const cudaError_t status = cudaEventCreateWithFlags(&created, cudaEventDefault);
    if (status != cudaSuccess) {
      fail("cudaEventCreateWithFlags", status);
      return base_;
    }
    try {
      events_.push_back(created);
    } catch (...) {  // out of host memory
      cudaEventDestroy(created);
      fail("growing the event pool", cudaErrorMemoryAllocation);
      return base_;
    }
  }
  const cudaError_t status = cudaEventRecord(events_[used_], stream_);
  if (status != cudaSuccess) {
    fail("cudaEventRecord", status);
    return base_;
  }
  return base_ + used_++;
}

void CudaEventClock::synchronize() noexcept {
  if (failed() || used_ == 0) return;
  const cudaError_t status = cudaEventSynchronize(events_[used_ - 1]);
  if (status != cudaSuccess) fail("cudaEventSynchronize", status);
}

std::int64_t CudaEventClock::resolve_ns(Token token) noexcept {
  if (failed()) return 0;
  if (token < base_ || token >= base_ + used_) {
    fail("resolve_ns of a token that is not a live mark (resolved after recycle(), or never "
         "issued)", cudaSuccess);
    return 0;
  }
  float ms = 0.0f;
  const cudaError_t status = cudaEventElapsedTime(&ms, anchor_, events_[token - base_]);
  if (status != cudaSuccess) {
    fail("cudaEventElapsedTime", status);
    return 0;
  }
  const std::int64_t ns = anchor_ns_ + std::llround(static_cast<double>(ms) * 1e6);
  if (!any_resolved_ || token > last_resolved_) {
    last_resolved_ = token;
    last_resolved_ns_ = ns;
    any_resolved_ = true;
  }
  return ns;
}

void CudaEventClock::recycle() noexcept {
  // The newest resolved mark becomes the anchor: its event moves out of the pool, the old anchor
  // takes its slot, and every later elapsed time is measured from it.
  if (any_resolved_) {
    std::swap(anchor_, events_[last_resolved_ - base_]);
    anchor_ns_ = last_resolved_ns_;
    any_resolved_ = false;
  }
  base_ += used_;
  used_ = 0;
}

}  // namespace rh::cuda
