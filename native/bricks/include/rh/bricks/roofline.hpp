// Roofline distance per brick (Williams, Waterman, Patterson 2009) against given machine peaks.
#pragma once

#include <string>
#include <vector>

#include "rh/bricks/event.hpp"
#include "rh/bricks/report.hpp"

namespace rh::bricks {

struct MachinePeaks {
  double gb_per_s = 0.0;     // peak memory bandwidth
  double gflop_per_s = 0.0;  // peak floating-point rate
};

enum class Bound : std::uint8_t { memory, compute, none };
std::string_view to_string(Bound b) noexcept;

struct RooflinePoint {
  BrickId brick = kNoBrick;
  std::string name;
  double intensity = 0.0;       // flops / bytes
  double achieved_gflop_per_s = 0.0;
  double achieved_gb_per_s = 0.0;
  double attainable_gflop_per_s = 0.0;  // min(peak flops, intensity * peak bandwidth)
  // achieved / attainable in [0, ~1]: flops against the roof when the brick counts flops, and
  // bandwidth against peak bandwidth when it only moves bytes.
  double distance = 0.0;
  Bound bound = Bound::none;
};

// Bricks with count > 0 and some flops or bytes; throws std::invalid_argument on non-positive peaks.
std::vector<RooflinePoint> roofline(const Report& report, const MachinePeaks& peaks);

}  // namespace rh::bricks
