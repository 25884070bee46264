// The merged view of a profiler at one moment, and its versioned JSON form
// (schema: native/bricks/schema/report.schema.json).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/stats.hpp"

namespace rh::bricks {

// Bumped whenever a field changes meaning or disappears; adding a field does not bump it.
inline constexpr int kReportSchemaVersion = 1;

struct BrickReport {
  BrickInfo info;
  bool known = true;  // from the table given at construction, not interned by name
  BrickStats stats;
};

struct CategoryReport {
  Category category;
  BrickStats stats;  // sum over the category's bricks; min/max over them
};

struct ReportMetadata {
  std::string clock;       // "tsc", "steady_clock", or the ClockSource's name
  std::string sync_mode;
  bool cycles_available = false;
  double tsc_ghz = 0.0;    // 0 without a TSC
  std::uint64_t threads = 0;
  std::uint64_t batches = 0;
  std::uint64_t events_recorded = 0;
  std::uint64_t events_dropped = 0;  // overwritten in the bounded per-thread rings
  std::uint64_t forced_flushes = 0;  // pending buffers that filled before a flush
  std::map<std::string, std::string> extra;  // caller's key/values (engine, shape, git revision)
};

struct Report {
  int schema_version = kReportSchemaVersion;
  ReportMetadata metadata;
  std::vector<BrickReport> bricks;  // in id order, including bricks never called
  std::array<CategoryReport, kCategoryCount> categories{};
  std::uint64_t total_ns() const noexcept;
};

std::string to_json(const Report& r);

}  // namespace rh::bricks
