#include <numeric>

#include "json_writer.hpp"
#include "rh/bricks/report.hpp"

namespace rh::bricks {

std::uint64_t Report::total_ns() const noexcept {
  // Categories partition the bricks, so their sum is the sum over bricks.
  return std::accumulate(categories.begin(), categories.end(), std::uint64_t{0},
                         [](std::uint64_t acc, const CategoryReport& c) { return acc + c.stats.total_ns; });
}

namespace {

void write_stats(detail::JsonWriter& w, const BrickStats& s) {
  w.field("count", s.count)
      .field("total_ns", s.total_ns)
      .field("min_ns", s.min_ns)
      .field("max_ns", s.max_ns)
      .field("mean_ns", s.mean_ns())
      .field("elements", s.elements)
      .field("bytes", s.bytes)
      .field("flops", s.flops)
      .field("cycles", s.cycles);
}

}  // namespace

std::string to_json(const Report& r) {
  detail::JsonWriter w;
  w.begin_object();
  w.field("schema_version", r.schema_version);
  w.field("generator", "rh_bricks");

  const ReportMetadata& m = r.metadata;
  w.key("metadata").begin_object();
  w.field("clock", m.clock)
      .field("sync_mode", m.sync_mode)
      .field("cycles_available", m.cycles_available)
      .field("tsc_ghz", m.tsc_ghz)
      .field("threads", m.threads)
      .field("batches", m.batches)
      .field("events_recorded", m.events_recorded)
      .field("events_dropped", m.events_dropped)
      .field("forced_flushes", m.forced_flushes)
      .field("total_ns", r.total_ns());
  w.key("extra").begin_object();
  for (const auto& [k, v] : m.extra) w.field(k, v);
  w.end_object();
  w.end_object();

  w.key("bricks").begin_array();
  for (const BrickReport& b : r.bricks) {
    w.begin_object();
    w.field("id", static_cast<std::uint64_t>(b.info.id))
        .field("name", b.info.name)
        .field("category", to_string(b.info.category))
        .field("known", b.known);
    write_stats(w, b.stats);
    w.end_object();
  }
  w.end_array();

  w.key("categories").begin_array();
  for (const CategoryReport& c : r.categories) {
    w.begin_object();
    w.field("name", to_string(c.category));
    write_stats(w, c.stats);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace rh::bricks
