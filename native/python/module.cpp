// _renewable_huber_native_cpu: the CPU engine for Python.
//
//   eng = Engine(threads=0)
//   state_out, diag = eng.update(state, X, y, w, config)
//
// Arrays arrive as C-contiguous float32/float64 NumPy arrays and are read in place (.noconvert():
// the binding never copies or converts; the Python layer makes the one explicit copy). The GIL is
// released while the engine runs.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rh/cpu/engine.hpp"
#include "rh/error.hpp"

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

rh::Config read_config(const nb::dict& config) {
  rh::Config c;
  c.fit_intercept = scalar<bool>(config, "config", "fit_intercept");
  c.epsilon = scalar<double>(config, "config", "epsilon");
  c.tau = optional_scalar<double>(config, "config", "tau");
  c.alpha = scalar<double>(config, "config", "alpha");
  c.ridge = scalar<double>(config, "config", "ridge");
  c.max_iter = scalar<std::int64_t>(config, "config", "max_iter");
  c.tol = optional_scalar<double>(config, "config", "tol");
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
  return out;
}

template <class T>
nb::tuple update(rh::cpu::Engine& engine, const nb::dict& state, Matrix<T> X, Vector<T> y,
                 Vector<T> w, const nb::dict& config) {
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
  {
    nb::gil_scoped_release release;
    result = engine.update(previous, rh::MatrixView<T>{X.data(), X.shape(0), X.shape(1)},
                           std::span<const T>(y.data(), y.shape(0)),
                           std::span<const T>(w.data(), w.shape(0)), parsed);
  }
  return nb::make_tuple(state_dict(std::move(result.first)), diagnostics_dict(result.second));
}

template <class T>
std::uintptr_t data_pointer(Matrix<T> X) {
  return reinterpret_cast<std::uintptr_t>(X.data());
}

}  // namespace

NB_MODULE(_renewable_huber_native_cpu, m) {
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
          [](rh::cpu::Engine* self, std::size_t threads) {
            new (self) rh::cpu::Engine(rh::cpu::EngineOptions{.threads = threads});
          },
          "threads"_a = 0, "threads: worker threads including the caller's; 0 = core count.")
      .def_prop_ro("threads", &rh::cpu::Engine::threads)
      .def("update", &update<float>, "state"_a, "X"_a.noconvert(), "y"_a.noconvert(),
           "w"_a.noconvert(), "config"_a)
      .def("update", &update<double>, "state"_a, "X"_a.noconvert(), "y"_a.noconvert(),
           "w"_a.noconvert(), "config"_a,
           "Advance the stream by one batch: (state_out, diagnostics). The input state is "
           "never modified.");

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
