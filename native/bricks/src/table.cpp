#include "rh/bricks/table.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace rh::bricks {

namespace {

std::string human_ns(double ns) {
  char buf[32];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0fns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.1fus", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.2fms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2fs", ns / 1e9);
  return buf;
}

std::string human_rate(double per_s) {
  char buf[32];
  if (per_s >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG/s", per_s / 1e9);
  else if (per_s >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM/s", per_s / 1e6);
  else if (per_s >= 1e3) std::snprintf(buf, sizeof buf, "%.2fK/s", per_s / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f/s", per_s);
  return buf;
}

}  // namespace

std::string format_table(const Report& report, std::string_view title) {
  std::vector<const BrickReport*> rows;
  for (const BrickReport& b : report.bricks) {
    if (b.stats.count > 0) rows.push_back(&b);
  }
  // Busiest first; id breaks ties so the table is the same every run.
  std::stable_sort(rows.begin(), rows.end(), [](const BrickReport* a, const BrickReport* b) {
    return a->stats.total_ns > b->stats.total_ns;
  });
  const double total = double(report.total_ns());
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%.*s  (clock %s, sync %s)\n", static_cast<int>(title.size()),
                title.data(), report.metadata.clock.c_str(), report.metadata.sync_mode.c_str());
  out += line;
  std::snprintf(line, sizeof line, "%-16s %-11s %9s %10s %7s %11s %9s %9s\n", "brick", "category",
                "calls", "total", "share", "elem/s", "GB/s", "GFLOP/s");
  out += line;
  out += std::string(88, '-') + "\n";
  for (const BrickReport* b : rows) {
    const BrickStats& s = b->stats;
    const double ns = double(s.total_ns);
    const double share = total > 0 ? 100.0 * ns / total : 0.0;
    const double per_s = ns > 0 ? 1e9 / ns : 0.0;
    std::snprintf(line, sizeof line, "%-16.16s %-11s %9llu %10s %6.1f%% %11s %9.2f %9.2f\n",
                  b->info.name.c_str(), std::string(to_string(b->info.category)).c_str(),
                  static_cast<unsigned long long>(s.count), human_ns(ns).c_str(), share,
                  human_rate(double(s.elements) * per_s).c_str(),
                  ns > 0 ? double(s.bytes) / ns : 0.0, ns > 0 ? double(s.flops) / ns : 0.0);
    out += line;
  }
  out += std::string(88, '-') + "\n";
  std::snprintf(line, sizeof line, "%-16s %-11s %9s %10s\n", "total", "", "",
                human_ns(total).c_str());
  out += line;
  return out;
}

}  // namespace rh::bricks
