// _rhuber_native_cpu's Engine: the CPU engine for Python.
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

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "config.hpp"
#include "rh/bricks/bricks.hpp"
#include "rh/cpu/engine.hpp"
#include "rh/error.hpp"
#include "rh/trace.hpp"

namespace rh::python {
namespace {

using namespace nb::literals;

template <class T>
using Matrix = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <class T>
using Vector = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

constexpr const char* dtype_name(float) { return "float32"; }
constexpr const char* dtype_name(double) { return "float64"; }

// A state array without conversion: it must already have X's dtype and be C-contiguous.
template <class Array, class T>
Array state_array(const nb::dict& state, const char* key) {
  const nb::handle value = required(state, "state", key);
  try {
    return nb::cast<Array>(value, false);
  } catch (const nb::cast_error&) {
    fail("state['", key, "'] must be a C-contiguous ", dtype_name(T{}),
         " NumPy array (the dtype of X)");
  }
}

// An inference matrix of the state (gram, score_gram): absent or None when it keeps none, else
// a d x d array of X's dtype.
template <class T>
std::optional<Matrix<T>> state_matrix(const nb::dict& state, const char* key, std::size_t d) {
  if (!state.contains(key) || state[key].is_none()) return std::nullopt;
  auto matrix = state_array<Matrix<T>, T>(state, key);
  if (matrix.shape(0) != d || matrix.shape(1) != d) {
    fail("state['", key, "'] has shape (", matrix.shape(0), ", ", matrix.shape(1), "), expected (",
         d, ", ", d, ")");
  }
  return matrix;
}

// A scalar of the inference sums: 0 when the state has none (a format-2 state).
template <class Value>
Value inference_scalar(const nb::dict& state, const char* key) {
  return state.contains(key) ? scalar<Value>(state, "state", key) : Value{0};
}

template <class T>
std::span<const T> matrix_span(const std::optional<Matrix<T>>& matrix) {
  if (!matrix) return {};
  return {matrix->data(), matrix->shape(0) * matrix->shape(1)};
}

template <class T>
nb::object matrix_or_none(std::vector<T>&& values, std::size_t d) {
  if (values.empty()) return nb::none();
  return to_numpy(std::move(values), {d, d});
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
  out["score_sq_sum"] = state.inference.score_sq_sum;
  out["curvature_sum"] = state.inference.curvature_sum;
  out["curvature_sq_sum"] = state.inference.curvature_sq_sum;
  out["inference_weight"] = state.inference.inference_weight;
  out["inference_batches"] = state.inference.inference_batches;
  out["gram"] = matrix_or_none(std::move(state.gram), d);
  out["score_gram"] = matrix_or_none(std::move(state.score_gram), d);
  out["information_factor"] = matrix_or_none(std::move(state.information_factor), d);
  out["information_vector"] =
      state.information_vector.empty() ? nb::none() : to_numpy(std::move(state.information_vector), {d});
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
  out["drift_statistic"] = diagnostics.drift_statistic;
  out["drift_df"] = diagnostics.drift_df;
  out["drift_pvalue"] = diagnostics.drift_pvalue;
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
  const rh::Config parsed = config_from_dict(config);
  const auto coef = state_array<Vector<T>, T>(state, "coef");
  const auto information = state_array<Matrix<T>, T>(state, "information");
  const std::size_t d = coef.shape(0);
  if (information.shape(0) != d || information.shape(1) != d) {
    throw rh::InvalidArgument("state['information'] has shape (" +
                              std::to_string(information.shape(0)) + ", " +
                              std::to_string(information.shape(1)) + "), expected (" +
                              std::to_string(d) + ", " + std::to_string(d) + ")");
  }
  const auto gram = state_matrix<T>(state, "gram", d);
  const auto score_gram = state_matrix<T>(state, "score_gram", d);
  const auto factor = state_matrix<T>(state, "information_factor", d);
  std::optional<Vector<T>> vector;
  if (state.contains("information_vector") && !state["information_vector"].is_none()) {
    vector = state_array<Vector<T>, T>(state, "information_vector");
  }
  const rh::StateView<T> previous{
      .coef = {coef.data(), d},
      .information = {information.data(), d * d},
      .n_samples_seen = scalar<std::int64_t>(state, "state", "n_samples_seen"),
      .effective_weight = scalar<double>(state, "state", "effective_weight"),
      .batch_count = scalar<std::int64_t>(state, "state", "batch_count"),
      .previous_lambda = scalar<double>(state, "state", "previous_lambda"),
      .scale = scalar<double>(state, "state", "scale"),
      .inference = {.score_sq_sum = inference_scalar<double>(state, "score_sq_sum"),
                    .curvature_sum = inference_scalar<double>(state, "curvature_sum"),
                    .curvature_sq_sum = inference_scalar<double>(state, "curvature_sq_sum"),
                    .inference_weight = inference_scalar<double>(state, "inference_weight"),
                    .inference_batches =
                        inference_scalar<std::int64_t>(state, "inference_batches")},
      .gram = matrix_span(gram),
      .score_gram = matrix_span(score_gram),
      .information_factor = matrix_span(factor),
      .information_vector = vector ? std::span<const T>(vector->data(), vector->shape(0))
                                   : std::span<const T>()};

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

}  // namespace

void bind_engine(nb::module_& m) {
  // What of contracts v3 and v4 the engine implements (rhuber.core.types.CONTRACT_FEATURES).
  m.attr("CONTRACT_FEATURES") =
      nb::make_tuple("lambda_schedule", "smoothed_curvature", "inference_sums",
                     "inference_matrices", "forgetting", "drift_test", "qr");
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

  m.def("_data_pointer", &data_pointer<float>, "X"_a.noconvert());
  m.def("_data_pointer", &data_pointer<double>, "X"_a.noconvert(),
        "The address of X's data as C++ receives it (zero-copy checks).");
  m.def("blas_info", [] {
    nb::dict info;
    info["provider"] = rh::cpu::blas_provider();
    info["threads"] = rh::cpu::blas_threads();
    return info;
  });
}

}  // namespace rh::python
