// Chrome trace-event JSON (opens in Perfetto and chrome://tracing).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/event.hpp"

namespace rh::bricks {

// Complete ("X") events with microsecond timestamps written exactly from integer ns (three
// decimals, so a child never pokes out of its parent through rounding), plus "M" events naming the
// process and each thread. Events are written sorted by (thread, start, longest first).
std::string to_chrome_trace(const std::vector<Event>& events, const BrickTable& table,
                            const std::vector<std::pair<std::uint32_t, std::string>>& thread_names,
                            std::string_view process_name = "rhuber");

}  // namespace rh::bricks
