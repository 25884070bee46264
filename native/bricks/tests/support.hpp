// Shared test fixtures: a small brick table, a manual asynchronous clock and a profiler on it.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/clock.hpp"
#include "rh/bricks/profiler.hpp"

namespace rh::bricks::testing {

enum class B : BrickId { load, scale, gemv, gemm, factor, copy, kCount };

inline BrickTable test_table(std::size_t capacity = 16) {
  return BrickTable({{0, "load", Category::data},
                     {1, "scale", Category::elementwise},
                     {2, "gemv", Category::blas2},
                     {3, "gemm", Category::blas3},
                     {4, "factor", Category::factor},
                     {5, "copy", Category::data}},
                    capacity);
}

// An asynchronous clock driven by the test: marks take the current `now`. Resolving a mark before
// synchronize() or after recycle() is an error, as reading an unfinished or reused CUDA event
// would be. Storage is reserved up front so the clock itself does not allocate per mark.
class ManualClock final : public ClockSource {
 public:
  struct Counters {
    int marks = 0, syncs = 0, resolves = 0, recycles = 0;
  };
  explicit ManualClock(Counters* counters) : c_(counters) { times_.reserve(1 << 20); }
  std::string_view name() const noexcept override { return "manual"; }
  Token mark() override {
    ++c_->marks;
    times_.push_back(now);
    return base_ + times_.size() - 1;
  }
  void synchronize() override {
    ++c_->syncs;
    synced_up_to_ = base_ + times_.size();
  }
  std::int64_t resolve_ns(Token t) override {
    ++c_->resolves;
    if (t >= synced_up_to_) throw std::logic_error("mark resolved before synchronize()");
    if (t < base_) throw std::logic_error("mark resolved after recycle()");
    return times_.at(t - base_);
  }
  void recycle() override {
    ++c_->recycles;
    base_ += times_.size();
    times_.clear();
  }
  void advance(std::int64_t ns) { now += ns; }

  std::int64_t now = 0;

 private:
  Counters* c_;
  std::vector<std::int64_t> times_;
  Token base_ = 0;  // token of times_[0]
  Token synced_up_to_ = 0;
};

// A profiler timing with a ManualClock (trace of 64 events, no page-fault counting); the tests
// advance the clock and read its counters.
struct ManualProfiler {
  ManualClock::Counters counters;
  ManualClock* clock = nullptr;
  std::unique_ptr<Profiler> p;

  explicit ManualProfiler(SyncMode mode, std::size_t pending = 64) {
    auto c = std::make_unique<ManualClock>(&counters);
    clock = c.get();
    Options o;
    o.sync_mode = mode;
    o.trace_capacity = 64;
    o.pending_capacity = pending;
    o.track_page_faults = false;
    p = std::make_unique<Profiler>(test_table(), o, std::move(c));
  }
  BrickStats stats(B b) const { return p->stats(static_cast<BrickId>(b)); }
};

}  // namespace rh::bricks::testing
