// _rhuber_native_cpu: the CPU engine for Python.
//
//   eng = Engine(threads=0, gram="incremental", chunk_bytes=0)
//   state_out, diag = eng.update(state, X, y, w, config)
//
// Arrays arrive as C-contiguous float32/float64 NumPy arrays and are read in place (.noconvert():
// the binding never copies or converts; the Python layer makes the one explicit copy). The GIL is
// released while the engine runs.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rh/bricks/bricks.hpp"
#include "fault_injection.hpp"  // native/cpu: the engine's test hooks
#include "rh/cpu/engine.hpp"
#include "rh/engine_bricks.hpp"
#include "rh/error.hpp"
#include "rh/trace.hpp"
#include "rh/tuner/model.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

template <class T>
using Matrix = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <class T>
using Vector = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

constexpr const char* dtype_name(float) { return "float32"; }
constexpr const char* dtype_name(double) { return "float64"; }

nb::handle required(const nb::dict& dict, const char* dict_name, const char* key) {
  if (!dict.contains(key)) {
    throw rh::InvalidArgument(std::string(dict_name) + " is missing the key '" + key + "'");
  }
  return dict[key];
}

template <class Value>
Value scalar(const nb::dict& dict, const char* dict_name, const char* key) {
  const nb::handle value = required(dict, dict_name, key);
  try {
    return nb::cast<Value>(value);
  } catch (const nb::cast_error&) {
    throw rh::InvalidArgument(std::string(dict_name) + "['" + key + "'] has the wrong type");
  }
}

template <class Value>
std::optional<Value> optional_scalar(const nb::dict& dict, const char* dict_name, const char* key) {
  const nb::handle value = required(dict, dict_name, key);
  if (value.is_none()) return std::nullopt;
  return scalar<Value>(dict, dict_name, key);
}

// A state array without conversion: it must already have X's dtype and be C-contiguous.
template <class Array, class T>
Array state_array(const nb::dict& state, const char* key) {
  const nb::handle value = required(state, "state", key);
  try {
    return nb::cast<Array>(value, false);
  } catch (const nb::cast_error&) {
    throw rh::InvalidArgument(std::string("state['") + key + "'] must be a C-contiguous " +
                              dtype_name(T{}) + " NumPy array (the dtype of X)");
  }
}

rh::L1Solver read_l1_solver(const nb::dict& config) {
  if (!config.contains("l1_solver")) return rh::L1Solver::lamm;
  const std::string name = nb::cast<std::string>(config["l1_solver"]);
  if (name == "lamm") return rh::L1Solver::lamm;
  if (name == "prox_newton") return rh::L1Solver::prox_newton;
  throw rh::InvalidArgument("config['l1_solver'] must be 'lamm' or 'prox_newton', got '" + name +
                            "'");
}

rh::Config read_config(const nb::dict& config) {
  rh::Config c;
  c.fit_intercept = scalar<bool>(config, "config", "fit_intercept");
  c.epsilon = scalar<double>(config, "config", "epsilon");
  c.tau = optional_scalar<double>(config, "config", "tau");
  c.alpha = scalar<double>(config, "config", "alpha");
  c.ridge = scalar<double>(config, "config", "ridge");
  c.max_iter = scalar<std::int64_t>(config, "config", "max_iter");
  c.tol = optional_scalar<double>(config, "config", "tol");
  c.l1_solver = read_l1_solver(config);
  return c;
}

// A new NumPy array that owns the vector's buffer.
template <class T>
nb::object to_numpy(std::vector<T>&& values, std::initializer_list<std::size_t> shape) {
  auto owner = std::make_unique<std::vector<T>>(std::move(values));
  T* data = owner->data();
  nb::capsule capsule(owner.get(),
                      [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  owner.release();  // the capsule owns it now
  return nb::cast(nb::ndarray<nb::numpy, T>(data, shape, capsule));
}

template <class T>
nb::dict state_dict(rh::State<T>&& state) {
  const std::size_t d = state.dim();
  nb::dict out;
  out["coef"] = to_numpy(std::move(state.coef), {d});
  out["information"] = to_numpy(std::move(state.information), {d, d});
  out["n_samples_seen"] = state.n_samples_seen;
  out["effective_weight"] = state.effective_weight;
  out["batch_count"] = state.batch_count;
  out["previous_lambda"] = state.previous_lambda;
  out["scale"] = state.scale;
  return out;
}

nb::dict diagnostics_dict(const rh::Diagnostics& diagnostics) {
  nb::dict out;
  out["converged"] = diagnostics.converged;
  out["n_iter"] = diagnostics.n_iter;
  out["objective"] = diagnostics.objective;
  out["lambda"] = diagnostics.lambda;
  out["bandwidth"] = diagnostics.bandwidth;
  out["solver"] = std::string(rh::to_string(diagnostics.solver));
  out["line_search_halvings"] = diagnostics.line_search_halvings;
  out["rcond"] = diagnostics.rcond;  // a float; NaN for a penalized batch (no Newton system)
  return out;
}

// A tensor's statistics (rh::TensorStats) as rhuber.tracing reads them; None for a
// tensor that was not formed (count 0).
nb::object tensor_stats_dict(const rh::TensorStats& stats) {
  if (stats.count == 0) return nb::none();
  const bool any = stats.finite() > 0;
  const double missing = std::numeric_limits<double>::quiet_NaN();
  nb::dict out;
  out["count"] = stats.count;
  out["min"] = any ? stats.min : missing;
  out["max"] = any ? stats.max : missing;
  out["mean"] = any ? stats.mean : missing;
  out["std"] = stats.std_dev();
  out["nan"] = stats.nan;
  out["inf"] = stats.inf;
  out["l2"] = stats.l2();
  return out;
}

nb::dict iteration_dict(const rh::IterationTrace& record) {
  nb::dict out;
  out["phase"] = record.phase == rh::SolvePhase::pilot ? "pilot" : "main";
  out["iteration"] = record.iteration;
  out["solver"] = std::string(rh::to_string(record.solver));
  out["rcond"] = record.rcond;
  out["objective"] = record.objective;
  out["coef_norm"] = record.coef_norm;
  out["step_norm"] = record.step_norm;
  out["step_scale"] = record.step_scale;
  out["halvings"] = record.halvings;
  out["search_exhausted"] = record.search_exhausted;
  out["rows"] = record.rows;
  out["quadratic_rows"] = record.quadratic_rows;
  out["residual"] = tensor_stats_dict(record.residual);
  out["score"] = tensor_stats_dict(record.score);
  out["hessian_diagonal"] = tensor_stats_dict(record.hessian_diagonal);
  return out;
}

// trace: None, or a list the batch's iteration records are appended to (as dicts), also when the
// update fails: a failing batch is the one worth reading.
template <class T>
nb::tuple update(rh::cpu::Engine& engine, const nb::dict& state, Matrix<T> X, Vector<T> y,
                 Vector<T> w, const nb::dict& config, const nb::object& trace) {
  nb::list records;
  if (!trace.is_none()) records = nb::cast<nb::list>(trace);
  const rh::Config parsed = read_config(config);
  const auto coef = state_array<Vector<T>, T>(state, "coef");
  const auto information = state_array<Matrix<T>, T>(state, "information");
  const std::size_t d = coef.shape(0);
  if (information.shape(0) != d || information.shape(1) != d) {
    throw rh::InvalidArgument("state['information'] has shape (" +
                              std::to_string(information.shape(0)) + ", " +
                              std::to_string(information.shape(1)) + "), expected (" +
                              std::to_string(d) + ", " + std::to_string(d) + ")");
  }
  const rh::StateView<T> previous{
      .coef = {coef.data(), d},
      .information = {information.data(), d * d},
      .n_samples_seen = scalar<std::int64_t>(state, "state", "n_samples_seen"),
      .effective_weight = scalar<double>(state, "state", "effective_weight"),
      .batch_count = scalar<std::int64_t>(state, "state", "batch_count"),
      .previous_lambda = scalar<double>(state, "state", "previous_lambda"),
      .scale = scalar<double>(state, "state", "scale")};

  std::pair<rh::State<T>, rh::Diagnostics> result;
  rh::TraceSink sink;
  const auto publish = [&] {
    for (const auto& record : sink.records) records.append(iteration_dict(record));
  };
  try {
    nb::gil_scoped_release release;
    result = engine.update(previous, rh::MatrixView<T>{X.data(), X.shape(0), X.shape(1)},
                           std::span<const T>(y.data(), y.shape(0)),
                           std::span<const T>(w.data(), w.shape(0)), parsed,
                           trace.is_none() ? nullptr : &sink);
  } catch (...) {
    publish();
    throw;
  }
  publish();
  return nb::make_tuple(state_dict(std::move(result.first)), diagnostics_dict(result.second));
}

template <class T>
std::uintptr_t data_pointer(Matrix<T> X) {
  return reinterpret_cast<std::uintptr_t>(X.data());
}

// --- the profiler (docs/profiling.md) ---------------------------------------------------------

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

// The tuner's models (native/tuner, docs/tuner.md "C++ inference").
nb::object tuner_predict(const rh::tuner::Model& model,
                         nb::ndarray<const double, nb::c_contig, nb::device::cpu> x) {
  const std::size_t d = model.n_features();
  const std::size_t k = model.n_outputs();
  if (x.ndim() != 1 && x.ndim() != 2) {
    throw rh::InvalidArgument("x must be 1-D (one row) or 2-D (rows), not " +
                              std::to_string(x.ndim()) + "-D");
  }
  const std::size_t rows = x.ndim() == 1 ? 1 : x.shape(0);
  const std::size_t cols = x.ndim() == 1 ? x.shape(0) : x.shape(1);
  if (cols != d) {
    throw rh::InvalidArgument("x has " + std::to_string(cols) + " features, the model " +
                              std::to_string(d));
  }
  std::vector<double> out(rows * k);
  {
    nb::gil_scoped_release release;
    for (std::size_t r = 0; r < rows; ++r) {
      model.predict(std::span<const double>(x.data() + r * d, d),
                    std::span<double>(out.data() + r * k, k));
    }
  }
  if (x.ndim() == 1) return to_numpy(std::move(out), {k});
  return to_numpy(std::move(out), {rows, k});
}

void bind_tuner(nb::module_& m) {
  namespace rt = rh::tuner;
  nb::module_ t = m.def_submodule(
      "tuner", "Inference for the tuner's models, read from safetensors files (docs/tuner.md).");
  nb::exception<rt::ModelFormatError>(t, "ModelFormatError", PyExc_ValueError);
  nb::class_<rt::Model>(t, "Model",
                        "A tuner model (gbt_regressor, forest_classifier or logistic) loaded "
                        "and validated from a safetensors file.")
      .def_static(
          "load", [](const std::string& path) { return rt::Model::load(path); }, "path"_a,
          nb::call_guard<nb::gil_scoped_release>(),
          "Read and validate a model file; ModelFormatError (a ValueError) when it is corrupt.")
      .def_static(
          "from_bytes",
          [](const nb::bytes& data) {
            return rt::Model::from_bytes(std::span<const std::byte>(
                static_cast<const std::byte*>(data.data()), data.size()));
          },
          "data"_a)
      .def("predict", &tuner_predict, "x"_a,
           "x: one row (1-D) or rows (2-D) of float64 features -> an array of n_outputs per "
           "row: the regressor's prediction, or the classifiers' class probabilities.")
      .def_prop_ro("kind",
                   [](const rt::Model& model) { return std::string(rt::to_string(model.kind())); })
      .def_prop_ro("n_features", &rt::Model::n_features)
      .def_prop_ro("n_outputs", &rt::Model::n_outputs)
      .def_prop_ro("n_trees", &rt::Model::n_trees)
      .def_prop_ro("feature_names",
                   [](const rt::Model& model) {
                     nb::list names;
                     for (const std::string& name : model.feature_names()) names.append(name);
                     return names;
                   })
      .def_prop_ro("classes",
                   [](const rt::Model& model) -> nb::object {
                     const auto it = model.metadata().find("classes");
                     if (it == model.metadata().end()) return nb::list();
                     return nb::module_::import_("json").attr("loads")(it->second);
                   },
                   "The metadata's 'classes' list, decoded from its JSON.")
      .def_prop_ro("metadata", [](const rt::Model& model) {
        nb::dict meta;
        for (const auto& [key, value] : model.metadata()) meta[key.c_str()] = value;
        return meta;
      });
}

// Test hooks (native/cpu/fault_injection.hpp, tests/test_reliability_faults.py); disarmed unless
// called.
void bind_fault_injection(nb::module_& m) {
  namespace fault = rh::cpu::fault;
  m.def("_fail_allocations", &fault::fail_allocations, "after"_a, "count"_a = 1,
        "Test hook: the next `after` workspace allocations pass, then `count` raise MemoryError.");
  m.def(
      "_fail_rung",
      [](const std::string& rung, std::int64_t count) {
        if (rung == "cholesky") return fault::fail_rung(rh::Solver::cholesky, count);
        if (rung == "lu") return fault::fail_rung(rh::Solver::lu, count);
        if (rung == "svd") return fault::fail_rung(rh::Solver::svd, count);
        throw rh::InvalidArgument("rung must be 'cholesky', 'lu' or 'svd', got '" + rung + "'");
      },
      "rung"_a, "count"_a = 1, "Test hook: the next `count` attempts of a ladder rung fail.");
  m.def("_clear_faults", &fault::clear,
        "Disarm the test hooks; returns how many injected faults were still pending.");
}

}  // namespace

NB_MODULE(_rhuber_native_cpu, m) {
  m.doc() = "The renewable Huber CPU engine (C++, OpenBLAS/LAPACK).";
  m.attr("__version__") = RH_VERSION;

  // Translators run newest first: the two typed errors below, then any other rh::Error.
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const rh::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  // Subclasses of the built-in errors the reference engine raises, so callers may catch either.
  nb::exception<rh::InvalidArgument>(m, "InvalidArgument", PyExc_ValueError);
  nb::exception<rh::NumericalError>(m, "NumericalError", PyExc_RuntimeError);

  nb::class_<rh::cpu::Engine>(m, "Engine",
                              "One CPU engine: a thread pool and workspaces reused across "
                              "batches. Updates on one engine run one at a time.")
      .def(
          "__init__",
          [](rh::cpu::Engine* self, std::size_t threads, const std::string& gram,
             std::size_t chunk_bytes) {
            new (self) rh::cpu::Engine(
                rh::cpu::EngineOptions{.threads = threads,
                                       .gram = rh::cpu::gram_strategy_from_string(gram),
                                       .chunk_bytes = chunk_bytes});
          },
          "threads"_a = 0, "gram"_a = "incremental", "chunk_bytes"_a = 0,
          "threads: worker threads including the caller's; 0 = core count. gram: how the Newton "
          "matrix's Gram is formed, 'incremental' (rank-k corrections over curvature flips) or "
          "'full' (afresh whenever the curvature set changes). chunk_bytes: bytes of X per row "
          "chunk of a fused pass; 0 = 256 KiB. They change cost and rounding, never the "
          "contract.")
      .def_prop_ro("threads", &rh::cpu::Engine::threads)
      .def_prop_ro("gram",
                   [](const rh::cpu::Engine& e) {
                     return std::string(rh::cpu::to_string(e.gram_strategy()));
                   })
      .def_prop_ro("chunk_bytes", &rh::cpu::Engine::chunk_bytes, "Resolved: never 0.")
      .def("set_profiler", &rh::cpu::Engine::set_profiler, "profiler"_a.none(),
           "Time every later update's bricks on profiler (None: stop).")
      .def_prop_ro("profiler", &rh::cpu::Engine::profiler)
      .def("update", &update<float>, "state"_a, "X"_a.noconvert(), "y"_a.noconvert(),
           "w"_a.noconvert(), "config"_a, "trace"_a = nb::none())
      .def("update", &update<double>, "state"_a, "X"_a.noconvert(), "y"_a.noconvert(),
           "w"_a.noconvert(), "config"_a, "trace"_a = nb::none(),
           "Advance the stream by one batch: (state_out, diagnostics). The input state is "
           "never modified. trace: None, or a list that receives one dict per solver "
           "iteration (docs/tracing.md), also when the update raises.");

  bind_bricks(m);
  bind_tuner(m);

  m.def("_data_pointer", &data_pointer<float>, "X"_a.noconvert());
  m.def("_data_pointer", &data_pointer<double>, "X"_a.noconvert(),
        "The address of X's data as C++ receives it (zero-copy checks).");
  m.def("blas_info", [] {
    nb::dict info;
    info["provider"] = rh::cpu::blas_provider();
    info["threads"] = rh::cpu::blas_threads();
    return info;
  });
  bind_fault_injection(m);
}
