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

bricks::ClockSource::Token CudaEventClock::mark() {
  if (used_ == events_.size()) events_.push_back(timing_event());  // warm-up only
  check(cudaEventRecord(events_[used_], stream_), "cudaEventRecord");
  return base_ + used_++;
}

void CudaEventClock::synchronize() {
  if (used_ > 0) check(cudaEventSynchronize(events_[used_ - 1]), "cudaEventSynchronize");
}

cudaEvent_t CudaEventClock::event(Token token) const {
  if (token < base_ || token >= base_ + used_) {
    throw Error("CudaEventClock: token " + std::to_string(token) +
                " is not a live mark (resolved after recycle(), or never issued)");
  }
  return events_[token - base_];
}

std::int64_t CudaEventClock::resolve_ns(Token token) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, anchor_, event(token)), "cudaEventElapsedTime");
  const std::int64_t ns = anchor_ns_ + std::llround(static_cast<double>(ms) * 1e6);
  if (!any_resolved_ || token > last_resolved_) {
    last_resolved_ = token;
    last_resolved_ns_ = ns;
    any_resolved_ = true;
  }
  return ns;
}

void CudaEventClock::recycle() {
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
