// One traced scope, and the static per-call-site metadata it points to.
#pragma once

#include <cstdint>
#include <limits>
#include <source_location>
#include <string_view>

#include "rh/bricks/brick_table.hpp"

namespace rh::bricks {

// What a scope measured: brick work, a device kernel launched inside a brick, or a data transfer.
enum class EventKind : std::uint8_t { brick, kernel, transfer };
enum class Direction : std::uint8_t { none, h2d, d2h, d2d };

std::string_view to_string(EventKind k) noexcept;
std::string_view to_string(Direction d) noexcept;

// Static, one per call site (the macros declare it `static constexpr`), so an event carries one
// pointer instead of copying file, function and label strings on the hot path.
struct CallSite {
  std::source_location location;
  const char* label;  // kernel name for kernel scopes; nullptr for brick scopes (the brick names it)
};

inline constexpr BrickId kNoBrick = std::numeric_limits<BrickId>::max();
inline constexpr std::uint32_t kNoBatch = std::numeric_limits<std::uint32_t>::max();

struct Event {
  std::int64_t start_ns;     // since the profiler's epoch
  std::int64_t duration_ns;
  std::uint64_t elements;
  std::uint64_t bytes;
  std::uint64_t flops;
  const CallSite* site;      // may be nullptr for scopes opened without a macro
  std::uint32_t batch;       // kNoBatch outside begin_batch()/end_batch()
  std::uint32_t iteration;
  std::uint32_t thread;      // the profiler's thread index, 0.. in order of first use
  BrickId brick;             // kNoBrick for kernel events
  std::uint8_t depth;        // open scopes of this profiler on this thread when it started
  EventKind kind;
  Direction direction;
};

}  // namespace rh::bricks
