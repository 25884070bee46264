// Per-brick counters: the lock-free per-thread form written on the hot path, and the plain merged
// form readers get.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>

namespace rh::bricks {

struct BrickStats {
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t min_ns = 0;  // 0 when count == 0
  std::uint64_t max_ns = 0;
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
  std::uint64_t flops = 0;
  std::uint64_t cycles = 0;  // TSC ticks; 0 where the CPU has no invariant TSC

  double mean_ns() const noexcept { return count ? double(total_ns) / double(count) : 0.0; }
  void merge(const BrickStats& o) noexcept {
    if (o.count == 0) return;
    min_ns = count ? std::min(min_ns, o.min_ns) : o.min_ns;
    max_ns = std::max(max_ns, o.max_ns);
    count += o.count;
    total_ns += o.total_ns;
    elements += o.elements;
    bytes += o.bytes;
    flops += o.flops;
    cycles += o.cycles;
  }
};

namespace detail {

// A counter with one writer (its thread) and any number of readers. Relaxed load + store instead
// of fetch_add: no locked instruction on the hot path, and readers on other threads see whole
// values rather than racing on plain memory.
class RelaxedCounter {
 public:
  explicit RelaxedCounter(std::uint64_t v = 0) noexcept : v_(v) {}
  std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }
  void set(std::uint64_t v) noexcept { v_.store(v, std::memory_order_relaxed); }
  void add(std::uint64_t d) noexcept { set(get() + d); }

 private:
  std::atomic<std::uint64_t> v_;
};

// One cache line per brick per thread, so threads never share a line they write.
struct alignas(64) BrickCounters {
  RelaxedCounter count, total_ns, min_ns{std::numeric_limits<std::uint64_t>::max()}, max_ns,
      elements, bytes, flops, cycles;

  void record(std::uint64_t ns, std::uint64_t cyc, std::uint64_t e, std::uint64_t b,
              std::uint64_t f) noexcept {
    count.add(1);
    total_ns.add(ns);
    if (ns < min_ns.get()) min_ns.set(ns);
    if (ns > max_ns.get()) max_ns.set(ns);
    elements.add(e);
    bytes.add(b);
    flops.add(f);
    cycles.add(cyc);
  }
  BrickStats snapshot() const noexcept {
    BrickStats s;
    s.count = count.get();
    if (s.count == 0) return s;
    s.total_ns = total_ns.get();
    s.min_ns = min_ns.get();
    s.max_ns = max_ns.get();
    s.elements = elements.get();
    s.bytes = bytes.get();
    s.flops = flops.get();
    s.cycles = cycles.get();
    return s;
  }
};
static_assert(sizeof(BrickCounters) == 64);

}  // namespace detail
}  // namespace rh::bricks
