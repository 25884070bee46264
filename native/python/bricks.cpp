// _rhuber_native_cpu.bricks: the brick profiler (native/bricks, docs/profiling.md) on the CPU
// engine's brick table.

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "rh/bricks/bricks.hpp"
#include "rh/engine_bricks.hpp"
#include "rh/error.hpp"

namespace rh::python {
namespace {

using namespace nb::literals;
namespace rb = rh::bricks;

std::shared_ptr<rb::Profiler> make_profiler(const std::string& sync_mode, std::size_t trace_capacity,
                                            bool track_page_faults, const std::string& clock) {
  rb::Options options;
  options.sync_mode = rb::sync_mode_from_string(sync_mode);
  options.trace_capacity = trace_capacity;
  options.track_page_faults = track_page_faults;
  std::unique_ptr<rb::ClockSource> source;
  if (clock == "steady") {
    source = std::make_unique<rb::SteadyClockSource>();
  } else if (clock != "cpu") {
    throw rh::InvalidArgument("clock must be 'cpu' or 'steady', got '" + clock + "'");
  }
  return std::make_shared<rb::Profiler>(rh::engine_brick_table(), options, std::move(source));
}

rb::BrickId brick_id(const rb::Profiler& p, const std::string& name) {
  const auto id = p.bricks().find(name);
  if (!id) throw rh::InvalidArgument("unknown brick '" + name + "'");
  return *id;
}

nb::dict node_dict(const rb::ExecutionGraph& g, rb::NodeId id) {
  const rb::Node& n = g.nodes().at(id);
  nb::dict out;
  out["id"] = id;
  out["kind"] = std::string(rb::to_string(n.kind));
  out["label"] = n.label;
  out["batch"] = n.batch == rb::kNoBatch ? -1 : static_cast<std::int64_t>(n.batch);
  out["iteration"] = n.iteration;
  out["thread"] = n.thread;
  out["start_ns"] = n.start_ns;
  out["duration_ns"] = n.duration_ns;
  out["elements"] = n.elements;
  out["bytes"] = n.bytes;
  out["flops"] = n.flops;
  return out;
}

nb::dict critical_path_dict(const rb::ExecutionGraph& g) {
  const rb::CriticalPath cp = rb::critical_path(g);
  nb::list path;
  for (const rb::NodeId id : cp.path) {
    nb::dict node = node_dict(g, id);
    node["slack_ns"] = cp.slack.at(id);
    path.append(node);
  }
  nb::dict out;
  out["path"] = path;
  out["length_ns"] = cp.length_ns;
  out["text"] = rb::format_critical_path(g, cp);
  return out;
}

nb::dict breakdown_dict(const rb::PerfBreakdown& b) {
  nb::list batches;
  for (const rb::BatchSample& s : b.batches) {
    nb::dict row;
    row["duration_ns"] = s.duration_ns;
    row["rows"] = s.rows;
    row["iterations"] = s.iterations;
    row["minor_faults"] = s.faults.minor;
    row["major_faults"] = s.faults.major;
    batches.append(row);
  }
  nb::dict out;
  out["setup_ns"] = b.setup_ns;
  out["batches"] = batches;
  out["steady_mean_ns"] = b.steady_mean_ns();
  out["steady_median_ns"] = b.steady_median_ns();
  out["steady_rows_per_s"] = b.steady_rows_per_s();
  out["iterations_per_batch"] = b.iterations_per_batch();
  out["text"] = rb::format_breakdown(b);
  return out;
}

}  // namespace

void bind_bricks(nb::module_& m) {
  nb::module_ b = m.def_submodule(
      "bricks", "The brick profiler (rh_bricks) with the engine's brick table; docs/profiling.md.");
  b.attr("BRICKS") = [] {
    nb::list names;
    const rb::BrickTable table = rh::engine_brick_table();  // a named table: .all() refers into it
    for (const auto& info : table.all()) {
      names.append(nb::make_tuple(info.name, std::string(rb::to_string(info.category))));
    }
    return names;
  }();

  nb::class_<rb::ExecutionGraph>(b, "Graph", "The execution graph of the traced events.")
      .def_prop_ro("size", &rb::ExecutionGraph::size)
      .def("to_dot", &rb::ExecutionGraph::to_dot, nb::call_guard<nb::gil_scoped_release>())
      .def("ascii", &rb::ExecutionGraph::to_ascii_tree, nb::call_guard<nb::gil_scoped_release>())
      .def("critical_path", &critical_path_dict,
           "The longest chain of top-level work: {'path': [node...], 'length_ns', 'text'}.")
      .def("nodes",
           [](const rb::ExecutionGraph& g) {
             nb::list out;
             for (rb::NodeId i = 0; i < g.size(); ++i) out.append(node_dict(g, i));
             return out;
           })
      .def("edges",
           [](const rb::ExecutionGraph& g) {
             nb::list out;
             for (const rb::Edge& e : g.edges()) {
               out.append(nb::make_tuple(e.src, e.dst, std::string(rb::to_string(e.kind))));
             }
             return out;
           })
      .def("rank_bricks", [](const rb::ExecutionGraph& g) {
        nb::list out;
        for (const rb::BrickRank& r : rb::rank_bricks(g)) {
          nb::dict row;
          row["brick"] = r.name;
          row["self_ns"] = r.self_ns;
          row["time_share"] = r.time_share;
          row["pagerank"] = r.pagerank;
          row["fan_in"] = r.fan_in;
          out.append(row);
        }
        return out;
      });

  nb::class_<rb::Profiler>(b, "Profiler",
                           "A brick profiler on the engine's brick table. Attach it to an Engine "
                           "with set_profiler; record() adds scopes timed elsewhere (Python).")
      .def(nb::new_(&make_profiler), "sync_mode"_a = "immediate",
           "trace_capacity"_a = std::size_t{1} << 16, "track_page_faults"_a = true,
           "clock"_a = "cpu",
           "sync_mode: immediate, per_batch, deferred or off; trace_capacity: events kept per "
           "thread (0: counters only); clock: 'cpu' (TSC) or 'steady' (steady_clock behind the "
           "asynchronous interface, to run the deferred path without a device).")
      .def_prop_ro("sync_mode",
                   [](const rb::Profiler& p) { return std::string(rb::to_string(p.sync_mode())); })
      .def("set_sync_mode",
           [](rb::Profiler& p, const std::string& mode) {
             p.set_sync_mode(rb::sync_mode_from_string(mode));
           })
      .def_prop_ro("clock", &rb::Profiler::clock_name)
      .def("brick_id", &brick_id, "name"_a)
      .def("begin_batch", &rb::Profiler::begin_batch, "rows"_a = 0)
      .def("set_iteration", &rb::Profiler::set_iteration, "index"_a)
      .def("end_batch", &rb::Profiler::end_batch)
      .def("now_ns", &rb::Profiler::now_ns)
      .def(
          "record",
          [](rb::Profiler& p, rb::BrickId brick, std::int64_t start_ns, std::int64_t duration_ns,
             std::uint64_t elements, std::uint64_t bytes, std::uint64_t flops, std::int64_t batch,
             std::int64_t iteration, std::uint8_t depth) {
            p.record_external({.brick = brick,
                               .start_steady_ns = start_ns,
                               .duration_ns = duration_ns,
                               .elements = elements,
                               .bytes = bytes,
                               .flops = flops,
                               .batch = batch < 0 ? rb::kNoBatch : static_cast<std::uint32_t>(batch),
                               .iteration = iteration,
                               .depth = depth});
          },
          "brick"_a, "start_ns"_a, "duration_ns"_a, "elements"_a = 0, "bytes"_a = 0, "flops"_a = 0,
          "batch"_a = -1, "iteration"_a = -1, "depth"_a = 0,
          "Count a scope timed by the caller: start_ns from time.perf_counter_ns() "
          "(CLOCK_MONOTONIC), on the calling thread.")
      .def("set_metadata", &rb::Profiler::set_metadata, "key"_a, "value"_a)
      .def("name_thread", &rb::Profiler::name_thread, "name"_a)
      .def("flush", &rb::Profiler::flush, nb::call_guard<nb::gil_scoped_release>())
      .def("reset", &rb::Profiler::reset, nb::call_guard<nb::gil_scoped_release>())
      .def("report_json", &rb::Profiler::to_json, nb::call_guard<nb::gil_scoped_release>(),
           "The versioned JSON report (native/bricks/schema/report.schema.json).")
      .def("chrome_trace", &rb::Profiler::to_chrome_trace,
           nb::call_guard<nb::gil_scoped_release>())
      .def(
          "table",
          [](rb::Profiler& p, const std::string& title) {
            return rb::format_table(p.report(), title);
          },
          "title"_a = "bricks", nb::call_guard<nb::gil_scoped_release>())
      .def("breakdown", [](const rb::Profiler& p) { return breakdown_dict(p.breakdown()); })
      .def("graph", &rb::Profiler::graph, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "roofline",
          [](rb::Profiler& p, double gb_per_s, double gflop_per_s) {
            nb::list out;
            for (const rb::RooflinePoint& r : rb::roofline(p.report(), {gb_per_s, gflop_per_s})) {
              nb::dict row;
              row["brick"] = r.name;
              row["intensity"] = r.intensity;
              row["achieved_gflop_per_s"] = r.achieved_gflop_per_s;
              row["achieved_gb_per_s"] = r.achieved_gb_per_s;
              row["attainable_gflop_per_s"] = r.attainable_gflop_per_s;
              row["distance"] = r.distance;
              row["bound"] = std::string(rb::to_string(r.bound));
              out.append(row);
            }
            return out;
          },
          "gb_per_s"_a, "gflop_per_s"_a);
}

}  // namespace rh::python
