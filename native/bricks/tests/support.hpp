// Shared test fixtures: a small brick table and a manual asynchronous clock.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/clock.hpp"

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

}  // namespace rh::bricks::testing
