// rh_cpu.h: the brick profiler (native/bricks, docs/profiling.md) on the engine's brick table.
// Structured exports (graph, breakdown, roofline) cross as JSON.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "capi.hpp"
#include "rh/engine_bricks.hpp"

namespace rh::capi {
namespace {

namespace rb = rh::bricks;
using nlohmann::json;

rb::Profiler& get(rh_cpu_profiler_t profiler) { return *need(profiler, "profiler")->profiler; }

json node_json(const rb::ExecutionGraph& g, rb::NodeId id) {
  const rb::Node& n = g.nodes().at(id);
  return {{"id", id},
          {"kind", std::string(rb::to_string(n.kind))},
          {"label", n.label},
          {"batch", n.batch == rb::kNoBatch ? -1 : static_cast<std::int64_t>(n.batch)},
          {"iteration", n.iteration},
          {"thread", n.thread},
          {"start_ns", n.start_ns},
          {"duration_ns", n.duration_ns},
          {"elements", n.elements},
          {"bytes", n.bytes},
          {"flops", n.flops}};
}

json graph_json(const rb::ExecutionGraph& g) {
  json nodes = json::array();
  for (rb::NodeId i = 0; i < g.size(); ++i) nodes.push_back(node_json(g, i));
  json edges = json::array();
  for (const rb::Edge& e : g.edges()) {
    edges.push_back({e.src, e.dst, std::string(rb::to_string(e.kind))});
  }
  const rb::CriticalPath cp = rb::critical_path(g);
  json path = json::array();
  for (const rb::NodeId id : cp.path) {
    json node = node_json(g, id);
    node["slack_ns"] = cp.slack.at(id);
    path.push_back(std::move(node));
  }
  json rank = json::array();
  for (const rb::BrickRank& r : rb::rank_bricks(g)) {
    rank.push_back({{"brick", r.name},
                    {"self_ns", r.self_ns},
                    {"time_share", r.time_share},
                    {"pagerank", r.pagerank},
                    {"fan_in", r.fan_in}});
  }
  return {{"size", g.size()},
          {"nodes", std::move(nodes)},
          {"edges", std::move(edges)},
          {"critical_path",
           {{"path", std::move(path)},
            {"length_ns", cp.length_ns},
            {"text", rb::format_critical_path(g, cp)}}},
          {"rank_bricks", std::move(rank)},
          {"dot", g.to_dot()},
          {"ascii", g.to_ascii_tree()}};
}

json breakdown_json(const rb::PerfBreakdown& b) {
  json batches = json::array();
  for (const rb::BatchSample& s : b.batches) {
    batches.push_back({{"duration_ns", s.duration_ns},
                       {"rows", s.rows},
                       {"iterations", s.iterations},
                       {"minor_faults", s.faults.minor},
                       {"major_faults", s.faults.major}});
  }
  return {{"setup_ns", b.setup_ns},
          {"batches", std::move(batches)},
          {"steady_mean_ns", b.steady_mean_ns()},
          {"steady_median_ns", b.steady_median_ns()},
          {"steady_rows_per_s", b.steady_rows_per_s()},
          {"iterations_per_batch", b.iterations_per_batch()},
          {"text", rb::format_breakdown(b)}};
}

json roofline_json(rb::Profiler& p, double gb_per_s, double gflop_per_s) {
  json out = json::array();
  for (const rb::RooflinePoint& r : rb::roofline(p.report(), {gb_per_s, gflop_per_s})) {
    out.push_back({{"brick", r.name},
                   {"intensity", r.intensity},
                   {"achieved_gflop_per_s", r.achieved_gflop_per_s},
                   {"achieved_gb_per_s", r.achieved_gb_per_s},
                   {"attainable_gflop_per_s", r.attainable_gflop_per_s},
                   {"distance", r.distance},
                   {"bound", std::string(rb::to_string(r.bound))}});
  }
  return out;
}

// JSON with NaN and infinities written as null, never as invalid JSON.
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace
}  // namespace rh::capi

extern "C" {

namespace rb = rh::bricks;
using rh::capi::get;
using rh::capi::guarded;
using rh::capi::need;

int rh_cpu_bricks_table_json(rh_cpu_string* out) {
  return guarded([&] {
    need(out, "out");
    nlohmann::json names = nlohmann::json::array();
    const rb::BrickTable table = rh::engine_brick_table();  // named: .all() refers into it
    for (const auto& info : table.all()) {
      names.push_back({info.name, std::string(rb::to_string(info.category))});
    }
    *out = rh::capi::new_string(names.dump());
  });
}

int rh_cpu_profiler_create(const char* sync_mode, uint64_t trace_capacity,
                           int32_t track_page_faults, const char* clock, rh_cpu_profiler_t* out) {
  return guarded([&] {
    need(out, "out");
    rb::Options options;
    options.sync_mode = rb::sync_mode_from_string(need(sync_mode, "sync_mode"));
    options.trace_capacity = trace_capacity;
    options.track_page_faults = track_page_faults != 0;
    const std::string clock_name = need(clock, "clock");
    std::unique_ptr<rb::ClockSource> source;
    if (clock_name == "steady") {
      source = std::make_unique<rb::SteadyClockSource>();
    } else if (clock_name != "cpu") {
      throw rh::InvalidArgument("clock must be 'cpu' or 'steady', got '" + clock_name + "'");
    }
    auto profiler = std::make_shared<rb::Profiler>(rh::engine_brick_table(), options,
                                                   std::move(source));
    *out = new rh_cpu_profiler_s{std::move(profiler)};
  });
}

int rh_cpu_profiler_free(rh_cpu_profiler_t profiler) {
  return guarded([&] { delete profiler; });
}

int rh_cpu_profiler_set_sync_mode(rh_cpu_profiler_t profiler, const char* mode) {
  return guarded([&] { get(profiler).set_sync_mode(rb::sync_mode_from_string(need(mode, "mode"))); });
}

int rh_cpu_profiler_sync_mode(rh_cpu_profiler_t profiler, const char** out) {
  return guarded([&] { *need(out, "out") = rb::to_string(get(profiler).sync_mode()).data(); });
}

int rh_cpu_profiler_clock(rh_cpu_profiler_t profiler, rh_cpu_string* out) {
  return guarded([&] {
    need(out, "out");
    *out = rh::capi::new_string(get(profiler).clock_name());
  });
}

int rh_cpu_profiler_brick_id(rh_cpu_profiler_t profiler, const char* name, int32_t* out) {
  return guarded([&] {
    const auto id = get(profiler).bricks().find(need(name, "name"));
    if (!id) throw rh::InvalidArgument(std::string("unknown brick '") + name + "'");
    *need(out, "out") = static_cast<int32_t>(*id);
  });
}

int rh_cpu_profiler_begin_batch(rh_cpu_profiler_t profiler, uint64_t rows) {
  return guarded([&] { get(profiler).begin_batch(rows); });
}

int rh_cpu_profiler_set_iteration(rh_cpu_profiler_t profiler, int64_t index) {
  return guarded([&] { get(profiler).set_iteration(index); });
}

int rh_cpu_profiler_end_batch(rh_cpu_profiler_t profiler) {
  return guarded([&] { get(profiler).end_batch(); });
}

int rh_cpu_profiler_now_ns(rh_cpu_profiler_t profiler, int64_t* out) {
  return guarded([&] { *need(out, "out") = get(profiler).now_ns(); });
}

int rh_cpu_profiler_record(rh_cpu_profiler_t profiler, int32_t brick, int64_t start_ns,
                           int64_t duration_ns, uint64_t elements, uint64_t bytes, uint64_t flops,
                           int64_t batch, int64_t iteration, int32_t depth) {
  return guarded([&] {
    get(profiler).record_external(
        {.brick = static_cast<rb::BrickId>(brick),
         .start_steady_ns = start_ns,
         .duration_ns = duration_ns,
         .elements = elements,
         .bytes = bytes,
         .flops = flops,
         .batch = batch < 0 ? rb::kNoBatch : static_cast<std::uint32_t>(batch),
         .iteration = iteration,
         .depth = static_cast<std::uint8_t>(depth)});
  });
}

int rh_cpu_profiler_set_metadata(rh_cpu_profiler_t profiler, const char* key, const char* value) {
  return guarded([&] { get(profiler).set_metadata(need(key, "key"), need(value, "value")); });
}

int rh_cpu_profiler_name_thread(rh_cpu_profiler_t profiler, const char* name) {
  return guarded([&] { get(profiler).name_thread(need(name, "name")); });
}

int rh_cpu_profiler_flush(rh_cpu_profiler_t profiler) {
  return guarded([&] { get(profiler).flush(); });
}

int rh_cpu_profiler_reset(rh_cpu_profiler_t profiler) {
  return guarded([&] { get(profiler).reset(); });
}

int rh_cpu_profiler_export(rh_cpu_profiler_t profiler, int32_t what, const char* text,
                           double gb_per_s, double gflop_per_s, rh_cpu_string* out) {
  return guarded([&] {
    rb::Profiler& p = get(profiler);
    need(out, "out");
    std::string result;
    switch (what) {
      case RH_CPU_EXPORT_REPORT:
        result = p.to_json();
        break;
      case RH_CPU_EXPORT_CHROME_TRACE:
        result = p.to_chrome_trace();
        break;
      case RH_CPU_EXPORT_TABLE:
        result = rb::format_table(p.report(), text ? text : "bricks");
        break;
      case RH_CPU_EXPORT_BREAKDOWN:
        result = rh::capi::dump(rh::capi::breakdown_json(p.breakdown()));
        break;
      case RH_CPU_EXPORT_ROOFLINE:
        result = rh::capi::dump(rh::capi::roofline_json(p, gb_per_s, gflop_per_s));
        break;
      case RH_CPU_EXPORT_GRAPH:
        result = rh::capi::dump(rh::capi::graph_json(p.graph()));
        break;
      default:
        rh::fail("what must be one of RH_CPU_EXPORT_*, got ", what);
    }
    *out = rh::capi::new_string(result);
  });
}

}  // extern "C"
