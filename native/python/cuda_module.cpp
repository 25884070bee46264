// _rhuber_native_cuda: the CUDA engine for Python, on the C ABI of rh_cuda.h alone.
//
//   engine = Engine(device=0)                 # its own stream
//   state = engine.new_state("float64", d)    # resident on the device
//   diag = engine.update(state, state, X, y, w, config)
//   scalars = state.read(coef_out, information_out)
//
// Arrays arrive as descriptors (data address, rows, cols, row stride, dtype code, device type,
// device id, stream), built by rhuber.engines.cuda from NumPy arrays or claimed DLPack
// capsules, which that layer keeps alive (and releases) around the call; the codes they carry
// come from this module's CONSTANTS (rh_cuda.h's), never restated in Python. The config is read
// by the parser the CPU module uses (config.hpp). The GIL is released while the engine runs. A
// failed call raises the Python error its status maps to, with the engine's message.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "config.hpp"
#include "rh/error.hpp"
#include "rh_cuda.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

class StatusError : public std::exception {
 public:
  StatusError(int status, std::string message) : status_(status), message_(std::move(message)) {}
  int status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int status_;
  std::string message_;
};

// Read the thread's message before anything else can call into the library.
void check(int status) {
  if (status != RH_CUDA_OK) throw StatusError(status, rh_cuda_last_error());
}

// The Python exception of a status: the library's own types where it has them.
nb::object python_error(int status) {
  const auto builtin = [](PyObject* type) -> nb::object { return nb::borrow(type); };
  const auto library = [&](const char* name, PyObject* fallback) -> nb::object {
    try {
      return nb::module_::import_("rhuber.errors").attr(name);
    } catch (const nb::python_error&) {
      return builtin(fallback);
    }
  };
  switch (status) {
    case RH_CUDA_ERROR_INVALID_ARGUMENT:
    case RH_CUDA_ERROR_UNSUPPORTED:
      return builtin(PyExc_ValueError);
    case RH_CUDA_ERROR_NUMERICAL:
      return library("NumericalError", PyExc_ArithmeticError);
    case RH_CUDA_ERROR_NO_DEVICE:
      return library("EngineNotAvailableError", PyExc_ImportError);
    case RH_CUDA_ERROR_OUT_OF_MEMORY:
      return builtin(PyExc_MemoryError);
    default:
      return builtin(PyExc_RuntimeError);
  }
}

using Descriptor = std::tuple<std::uintptr_t, std::int64_t, std::int64_t, std::int64_t,
                              std::int32_t, std::int32_t, std::int32_t, std::uint64_t>;

rh_cuda_array to_array(const Descriptor& d) {
  return rh_cuda_array{.data = reinterpret_cast<void*>(std::get<0>(d)),
                       .rows = std::get<1>(d),
                       .cols = std::get<2>(d),
                       .row_stride = std::get<3>(d),
                       .dtype = std::get<4>(d),
                       .device_type = std::get<5>(d),
                       .device_id = std::get<6>(d),
                       .reserved = 0,
                       .stream = std::get<7>(d)};
}

// Host arrays the engine writes (State.read), and those it only reads (State.load): the latter
// are read-only (nb::ro), so the read-only arrays of the states CudaEngine returns are accepted.
using HostArray = nb::ndarray<nb::device::cpu, nb::c_contig>;
using HostInput = nb::ndarray<nb::ro, nb::device::cpu, nb::c_contig>;

template <class Array>
std::int32_t dtype_code(const Array& a) {
  if (a.dtype() == nb::dtype<float>()) return RH_CUDA_FLOAT32;
  if (a.dtype() == nb::dtype<double>()) return RH_CUDA_FLOAT64;
  throw StatusError(RH_CUDA_ERROR_INVALID_ARGUMENT, "state arrays must be float32 or float64");
}

template <class Array>
rh_cuda_array host_array(const Array& a) {
  const std::int64_t rows = a.ndim() >= 1 ? static_cast<std::int64_t>(a.shape(0)) : 1;
  const std::int64_t cols = a.ndim() == 2 ? static_cast<std::int64_t>(a.shape(1)) : 1;
  // rh_cuda_array serves inputs and outputs alike; rh_cuda_state_load only reads through it.
  return rh_cuda_array{.data = const_cast<void*>(static_cast<const void*>(a.data())),
                       .rows = rows,
                       .cols = cols,
                       .row_stride = cols,
                       .dtype = dtype_code(a),
                       .device_type = RH_CUDA_DEVICE_CPU,
                       .device_id = 0,
                       .reserved = 0,
                       .stream = RH_CUDA_STREAM_NONE};
}

std::int32_t dtype_from_name(const std::string& name) {
  if (name == "float32") return RH_CUDA_FLOAT32;
  if (name == "float64") return RH_CUDA_FLOAT64;
  throw StatusError(RH_CUDA_ERROR_INVALID_ARGUMENT,
                    "dtype must be 'float32' or 'float64', got '" + name + "'");
}

template <class Value>
Value item(const nb::dict& dict, const char* key) {
  if (!dict.contains(key)) {
    throw StatusError(RH_CUDA_ERROR_INVALID_ARGUMENT, std::string("missing key '") + key + "'");
  }
  return nb::cast<Value>(dict[key]);
}

const char* solver_name(std::int32_t solver) {
  switch (solver) {
    case RH_CUDA_SOLVER_CHOLESKY:
      return "cholesky";
    case RH_CUDA_SOLVER_LU:
      return "lu";
    case RH_CUDA_SOLVER_SVD:
      return "svd";
    default:
      return "lamm";
  }
}

// The C ABI's layout of a config. l1_solver is not part of it: the engine solves L1 batches with
// the contract's LAMM, and rhuber.engines.cuda refuses another solver before the call.
rh_cuda_config cuda_config(const rh::Config& config) {
  return rh_cuda_config{.fit_intercept = config.fit_intercept ? 1 : 0,
                        .has_tau = config.tau ? 1 : 0,
                        .has_tol = config.tol ? 1 : 0,
                        .reserved = 0,
                        .epsilon = config.epsilon,
                        .tau = config.tau.value_or(0.0),
                        .alpha = config.alpha,
                        .ridge = config.ridge,
                        .tol = config.tol.value_or(0.0),
                        .max_iter = config.max_iter,
                        .has_lambda_scale = config.lambda_scale ? 1 : 0,
                        .curvature = config.curvature == rh::Curvature::smoothed
                                         ? RH_CUDA_CURVATURE_SMOOTHED
                                         : RH_CUDA_CURVATURE_INDICATOR,
                        .inference_matrices = config.inference_matrices ? 1 : 0,
                        .reserved2 = 0,
                        .lambda_scale = config.lambda_scale.value_or(0.0),
                        .bandwidth_scale = config.bandwidth_scale,
                        .has_half_life = config.half_life ? 1 : 0,
                        .reserved3 = 0,
                        .half_life = config.half_life.value_or(0.0)};
}

// rh_cuda.h's codes by name, as the contract (native/contracts/rh_cuda_contract.json) lists them.
nb::dict abi_constants() {
  nb::dict out;
#define RH_CONSTANT(name) out[#name] = name
  RH_CONSTANT(RH_CUDA_ABI_VERSION_MAJOR);
  RH_CONSTANT(RH_CUDA_ABI_VERSION_MINOR);
  RH_CONSTANT(RH_CUDA_OK);
  RH_CONSTANT(RH_CUDA_ERROR_INVALID_ARGUMENT);
  RH_CONSTANT(RH_CUDA_ERROR_NUMERICAL);
  RH_CONSTANT(RH_CUDA_ERROR_NO_DEVICE);
  RH_CONSTANT(RH_CUDA_ERROR_OUT_OF_MEMORY);
  RH_CONSTANT(RH_CUDA_ERROR_UNSUPPORTED);
  RH_CONSTANT(RH_CUDA_ERROR_CUDA);
  RH_CONSTANT(RH_CUDA_ERROR_INTERNAL);
  RH_CONSTANT(RH_CUDA_FLOAT32);
  RH_CONSTANT(RH_CUDA_FLOAT64);
  RH_CONSTANT(RH_CUDA_DEVICE_CPU);
  RH_CONSTANT(RH_CUDA_DEVICE_CUDA);
  RH_CONSTANT(RH_CUDA_STREAM_NONE);
  RH_CONSTANT(RH_CUDA_STREAM_LEGACY);
  RH_CONSTANT(RH_CUDA_STREAM_PER_THREAD);
  RH_CONSTANT(RH_CUDA_SOLVER_CHOLESKY);
  RH_CONSTANT(RH_CUDA_SOLVER_LU);
  RH_CONSTANT(RH_CUDA_SOLVER_SVD);
  RH_CONSTANT(RH_CUDA_SOLVER_LAMM);
  RH_CONSTANT(RH_CUDA_PROFILE_OFF);
  RH_CONSTANT(RH_CUDA_PROFILE_PER_BATCH);
  RH_CONSTANT(RH_CUDA_PROFILE_DEFERRED);
  RH_CONSTANT(RH_CUDA_PROFILE_FORMAT_REPORT);
  RH_CONSTANT(RH_CUDA_PROFILE_FORMAT_TRACE);
  RH_CONSTANT(RH_CUDA_CURVATURE_INDICATOR);
  RH_CONSTANT(RH_CUDA_CURVATURE_SMOOTHED);
#undef RH_CONSTANT
  return out;
}

class State {
 public:
  explicit State(rh_cuda_state_t handle) : handle_(handle) {}
  ~State() { rh_cuda_state_free(handle_); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  rh_cuda_state_t get() const { return handle_; }

  // gram and score_gram: None when the state keeps no inference matrices.
  void load(const nb::dict& scalars, const HostInput& coef, const HostInput& information,
            const std::optional<HostInput>& gram, const std::optional<HostInput>& score_gram) {
    if (gram.has_value() != score_gram.has_value()) {
      throw StatusError(RH_CUDA_ERROR_INVALID_ARGUMENT,
                        "gram and score_gram come together: pass both or neither");
    }
    const rh_cuda_state_info info{
        .dtype = dtype_from_name(item<std::string>(scalars, "dtype")),
        .reserved = 0,
        .dim = static_cast<std::int64_t>(coef.ndim() == 1 ? coef.shape(0) : 0),
        .n_samples_seen = item<std::int64_t>(scalars, "n_samples_seen"),
        .effective_weight = item<double>(scalars, "effective_weight"),
        .batch_count = item<std::int64_t>(scalars, "batch_count"),
        .previous_lambda = item<double>(scalars, "previous_lambda"),
        .scale = item<double>(scalars, "scale"),
        .score_sq_sum = item<double>(scalars, "score_sq_sum"),
        .curvature_sum = item<double>(scalars, "curvature_sum"),
        .curvature_sq_sum = item<double>(scalars, "curvature_sq_sum"),
        .inference_weight = item<double>(scalars, "inference_weight"),
        .inference_batches = item<std::int64_t>(scalars, "inference_batches"),
        .has_matrices = gram ? 1 : 0,
        .reserved2 = 0};
    const rh_cuda_array c = host_array(coef);
    const rh_cuda_array j = host_array(information);
    const std::optional<rh_cuda_array> g =
        gram ? std::optional<rh_cuda_array>(host_array(*gram)) : std::nullopt;
    const std::optional<rh_cuda_array> k =
        score_gram ? std::optional<rh_cuda_array>(host_array(*score_gram)) : std::nullopt;
    nb::gil_scoped_release release;
    check(rh_cuda_state_load(handle_, &info, &c, &j, g ? &*g : nullptr, k ? &*k : nullptr));
  }

  // gram_out and score_gram_out are written when the state keeps the matrices (has_matrices).
  nb::dict read(const HostArray& coef_out, const HostArray& information_out,
                const HostArray& gram_out, const HostArray& score_gram_out) const {
    rh_cuda_state_info info{};
    const rh_cuda_array c = host_array(coef_out);
    const rh_cuda_array j = host_array(information_out);
    const rh_cuda_array g = host_array(gram_out);
    const rh_cuda_array k = host_array(score_gram_out);
    check(rh_cuda_state_read(handle_, &info, &c, &j, &g, &k));
    nb::dict out;
    out["n_samples_seen"] = info.n_samples_seen;
    out["effective_weight"] = info.effective_weight;
    out["batch_count"] = info.batch_count;
    out["previous_lambda"] = info.previous_lambda;
    out["scale"] = info.scale;
    out["score_sq_sum"] = info.score_sq_sum;
    out["curvature_sum"] = info.curvature_sum;
    out["curvature_sq_sum"] = info.curvature_sq_sum;
    out["inference_weight"] = info.inference_weight;
    out["inference_batches"] = info.inference_batches;
    out["has_matrices"] = info.has_matrices != 0;
    return out;
  }

 private:
  rh_cuda_state_t handle_;
};

class Engine {
 public:
  Engine(int device, std::uint64_t stream) {
    const rh_cuda_engine_options options{
        .device = device, .borrow_stream = stream != 0 ? 1 : 0, .stream = stream};
    check(rh_cuda_engine_create(&options, &handle_));
  }
  ~Engine() { rh_cuda_engine_free(handle_); }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::uint64_t stream() const {
    std::uint64_t value = 0;
    check(rh_cuda_engine_stream(handle_, &value));
    return value;
  }

  nb::dict stats() const {
    rh_cuda_engine_stats s{};
    check(rh_cuda_engine_stats_get(handle_, &s));
    nb::dict out;
    out["updates"] = s.updates;
    out["device_allocations"] = s.device_allocations;
    out["device_bytes"] = s.device_bytes;
    out["pinned_bytes"] = s.pinned_bytes;
    return out;
  }

  void set_profiling(std::int32_t mode) {
    nb::gil_scoped_release release;
    check(rh_cuda_engine_set_profiling(handle_, mode));
  }

  // The profile as JSON text: the size first, then the text (reading it may synchronize). An
  // update on another thread may grow it in between: then ask again with the new size.
  std::string profile_json(std::int32_t format) const {
    nb::gil_scoped_release release;
    std::uint64_t needed = 0;
    check(rh_cuda_engine_profile_json(handle_, format, nullptr, 0, &needed));
    for (;;) {
      std::string text(needed, '\0');
      const std::uint64_t capacity = needed;
      const int status = rh_cuda_engine_profile_json(handle_, format, text.data(), capacity,
                                                     &needed);
      if (status == RH_CUDA_OK) {
        text.resize(needed - 1);  // the NUL
        return text;
      }
      if (needed <= capacity) check(status);
    }
  }

  State* new_state(const std::string& dtype, std::int64_t dim) {
    rh_cuda_state_t handle = nullptr;
    check(rh_cuda_state_create(handle_, dtype_from_name(dtype), dim, &handle));
    return new State(handle);  // owned by Python (rv_policy::take_ownership)
  }

  nb::dict update(const State& previous, State& next, const Descriptor& X, const Descriptor& y,
                  const std::optional<Descriptor>& w, const nb::dict& config) {
    const rh_cuda_config c = cuda_config(rh::python::config_from_dict(config));
    const rh_cuda_array x = to_array(X);
    const rh_cuda_array yy = to_array(y);
    const std::optional<rh_cuda_array> weights =
        w ? std::optional<rh_cuda_array>(to_array(*w)) : std::nullopt;
    rh_cuda_diagnostics d{};
    {
      nb::gil_scoped_release release;
      check(rh_cuda_update(handle_, previous.get(), &x, &yy, weights ? &*weights : nullptr, &c,
                           next.get(), &d));
    }
    nb::dict out;
    out["converged"] = d.converged != 0;
    out["n_iter"] = d.n_iter;
    out["objective"] = d.objective;
    out["lambda"] = d.lambda;
    out["bandwidth"] = d.bandwidth;
    out["solver"] = solver_name(d.solver);
    out["line_search_halvings"] = d.line_search_halvings;
    out["rcond"] = d.rcond;  // NaN for a penalized batch: Diagnostics.from_dict makes it None
    out["drift_statistic"] = d.drift_statistic;
    out["drift_df"] = d.drift_df;
    out["drift_pvalue"] = d.drift_pvalue;
    return out;
  }

  void predict(const State& state, const Descriptor& X, const Descriptor& out) {
    const rh_cuda_array x = to_array(X);
    const rh_cuda_array o = to_array(out);
    nb::gil_scoped_release release;
    check(rh_cuda_predict(handle_, state.get(), &x, &o));
  }

 private:
  rh_cuda_engine_t handle_ = nullptr;
};

}  // namespace

NB_MODULE(_rhuber_native_cuda, m) {
  m.doc() = "The CUDA engine of rhuber (backend=\"cuda\"), over the rh_cuda C ABI.";
  m.attr("__version__") = RH_VERSION;
  m.attr("ABI_VERSION") = RH_CUDA_ABI_VERSION;
  m.attr("CONSTANTS") = abi_constants();
  // What of contracts v3 and v4 the engine implements (rhuber.core.types.CONTRACT_FEATURES).
  m.attr("CONTRACT_FEATURES") =
      nb::make_tuple("lambda_schedule", "smoothed_curvature", "inference_sums",
                     "inference_matrices", "forgetting", "drift_test");

  nb::register_exception_translator([](const std::exception_ptr& failure, void*) {
    try {
      std::rethrow_exception(failure);
    } catch (const StatusError& e) {
      const nb::object type = python_error(e.status());
      PyErr_SetString(type.ptr(), e.what());
    } catch (const rh::InvalidArgument& e) {  // the config parser's (config.hpp)
      const nb::object type = python_error(RH_CUDA_ERROR_INVALID_ARGUMENT);
      PyErr_SetString(type.ptr(), e.what());
    }
  });

  m.def("abi_version", &rh_cuda_abi_version, "The ABI version of the loaded librh_cuda.");
  m.def(
      "device_count",
      [] {
        std::int32_t count = 0;
        check(rh_cuda_device_count(&count));
        return count;
      },
      "CUDA devices visible to the engine; EngineNotAvailableError when there are none.");

  nb::class_<State>(m, "State", "A renewable state resident on the engine's device.")
      .def("load", &State::load, "scalars"_a, "coef"_a, "information"_a, "gram"_a.none(),
           "score_gram"_a.none(),
           "Replace the state with host arrays and scalars (uploads the information matrix); "
           "gram and score_gram None when the state keeps no inference matrices.")
      .def("read", &State::read, "coef_out"_a, "information_out"_a, "gram_out"_a,
           "score_gram_out"_a,
           "Write coef, information and (when the state keeps them) the inference matrices "
           "into host arrays; return the scalars, has_matrices among them.");

  nb::class_<Engine>(m, "Engine", "One CUDA engine bound to one device.")
      .def(nb::init<int, std::uint64_t>(), "device"_a = 0, "stream"_a = 0,
           "stream: 0 for the engine's own stream, else a cudaStream_t value to borrow.")
      .def_prop_ro("stream", &Engine::stream)
      .def("stats", &Engine::stats)
      .def("set_profiling", &Engine::set_profiling, "mode"_a,
           "RH_CUDA_PROFILE_*: 0 off, 1 per_batch, 2 deferred (CUDA events on the stream).")
      .def("profile_json", &Engine::profile_json, "format"_a = RH_CUDA_PROFILE_FORMAT_REPORT,
           "The engine's profile as JSON: 0 the bricks report, 1 the Chrome trace.")
      .def("new_state", &Engine::new_state, "dtype"_a, "dim"_a, nb::rv_policy::take_ownership)
      .def("update", &Engine::update, "previous"_a, "next"_a, "X"_a, "y"_a, "sample_weight"_a,
           "config"_a)
      .def("predict", &Engine::predict, "state"_a, "X"_a, "out"_a);
}
