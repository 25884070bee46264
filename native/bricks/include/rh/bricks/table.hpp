// The "cbtop" panel: one row per called brick, busiest first.
#pragma once

#include <string>

#include "rh/bricks/report.hpp"

namespace rh::bricks {

// Columns: brick, category, calls, total, share, elements/s, GB/s, GFLOP/s; a header line with
// the clock and sync mode; a total line.
std::string format_table(const Report& report, std::string_view title = "bricks");

}  // namespace rh::bricks
