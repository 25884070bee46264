#include "rh/bricks/roofline.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace rh::bricks {

std::string_view to_string(Bound b) noexcept {
  constexpr std::array<std::string_view, 3> names = {"memory", "compute", "none"};
  return names[static_cast<std::size_t>(b)];
}

std::vector<RooflinePoint> roofline(const Report& report, const MachinePeaks& peaks) {
  if (!(peaks.gb_per_s > 0.0) || !(peaks.gflop_per_s > 0.0)) {
    throw std::invalid_argument("machine peaks must be positive (got " +
                                std::to_string(peaks.gb_per_s) + " GB/s, " +
                                std::to_string(peaks.gflop_per_s) + " GFLOP/s)");
  }
  std::vector<RooflinePoint> out;
  for (const BrickReport& b : report.bricks) {
    const BrickStats& s = b.stats;
    if (s.count == 0 || s.total_ns == 0 || (s.flops == 0 && s.bytes == 0)) continue;
    RooflinePoint p;
    p.brick = b.info.id;
    p.name = b.info.name;
    const double ns = double(s.total_ns);
    // bytes/ns = GB/s and flops/ns = GFLOP/s.
    p.achieved_gb_per_s = double(s.bytes) / ns;
    p.achieved_gflop_per_s = double(s.flops) / ns;
    if (s.flops > 0 && s.bytes > 0) {
      p.intensity = double(s.flops) / double(s.bytes);
      const double memory_roof = p.intensity * peaks.gb_per_s;
      p.attainable_gflop_per_s = std::min(peaks.gflop_per_s, memory_roof);
      p.bound = memory_roof < peaks.gflop_per_s ? Bound::memory : Bound::compute;
      p.distance = p.achieved_gflop_per_s / p.attainable_gflop_per_s;
    } else if (s.flops > 0) {
      // No bytes counted: only the compute roof applies.
      p.attainable_gflop_per_s = peaks.gflop_per_s;
      p.bound = Bound::compute;
      p.distance = p.achieved_gflop_per_s / peaks.gflop_per_s;
    } else {
      p.bound = Bound::memory;
      p.distance = p.achieved_gb_per_s / peaks.gb_per_s;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace rh::bricks
