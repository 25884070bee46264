// The extern "C" entry points of rh_cuda.h. Each body runs between RH_API_BEGIN and RH_API_END:
// any exception becomes a status code and the thread's last error message (rh/c_abi.hpp, with
// rh::cuda::classify), so none crosses the ABI (shared/conventions.md, after XGBoost's c_api).

#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "engine_internal.hpp"
#include "rh/c_abi.hpp"
#include "rh/error.hpp"
#include "rh_cuda.h"

namespace {

thread_local std::string last_error;

int status_of(const std::exception_ptr& failure) noexcept {
  return rh::c_abi::record(failure, rh::cuda::classify, last_error, RH_CUDA_ERROR_INTERNAL);
}

template <class T>
T& require(T* pointer, const char* name) {
  return *rh::c_abi::need(pointer, name);
}

rh::Config to_config(const rh_cuda_config& c) {
  if (c.reserved != 0) throw rh::InvalidArgument("the reserved field of rh_cuda_config must be 0");
  rh::Config config;
  config.fit_intercept = c.fit_intercept != 0;
  config.epsilon = c.epsilon;
  if (c.has_tau != 0) config.tau = c.tau;
  config.alpha = c.alpha;
  config.ridge = c.ridge;
  config.max_iter = c.max_iter;
  if (c.has_tol != 0) config.tol = c.tol;
  if (c.reserved2 != 0) {
    throw rh::InvalidArgument("the reserved2 field of rh_cuda_config must be 0");
  }
  if (c.has_lambda_scale != 0) config.lambda_scale = c.lambda_scale;
  switch (c.curvature) {
    case RH_CUDA_CURVATURE_INDICATOR:
      config.curvature = rh::Curvature::indicator;
      break;
    case RH_CUDA_CURVATURE_SMOOTHED:
      config.curvature = rh::Curvature::smoothed;
      break;
    default:
      throw rh::InvalidArgument("config.curvature must be RH_CUDA_CURVATURE_INDICATOR (0) or "
                                "RH_CUDA_CURVATURE_SMOOTHED (1), got " +
                                std::to_string(c.curvature));
  }
  config.bandwidth_scale = c.bandwidth_scale;
  config.inference_matrices = c.inference_matrices != 0;
  switch (c.factorization) {
    case RH_CUDA_FACTORIZATION_CHOLESKY:
      config.factorization = rh::Factorization::cholesky;
      break;
    case RH_CUDA_FACTORIZATION_QR:
      config.factorization = rh::Factorization::qr;
      break;
    default:
      throw rh::InvalidArgument("config.factorization must be RH_CUDA_FACTORIZATION_CHOLESKY (0) "
                                "or RH_CUDA_FACTORIZATION_QR (1), got " +
                                std::to_string(c.factorization));
  }
  if (c.has_half_life != 0) config.half_life = c.half_life;
  return config;
}

std::int32_t solver_code(rh::Solver solver) {
  switch (solver) {
    case rh::Solver::cholesky:
      return RH_CUDA_SOLVER_CHOLESKY;
    case rh::Solver::lu:
      return RH_CUDA_SOLVER_LU;
    case rh::Solver::svd:
      return RH_CUDA_SOLVER_SVD;
    case rh::Solver::lamm:
      return RH_CUDA_SOLVER_LAMM;
    case rh::Solver::qr:
      return RH_CUDA_SOLVER_QR;
    case rh::Solver::prox_newton:
      break;  // CPU-only: the CUDA engine never runs it
  }
  throw rh::Error("internal error: an unknown solver rung");
}

// A host array of exactly `rows` x `cols` of `dtype`, as rh_cuda_state_load/read need.
void check_host_array(const rh_cuda_array& array, const char* name, std::int32_t dtype,
                      std::int64_t rows, std::int64_t cols) {
  if (array.device_type != RH_CUDA_DEVICE_CPU) {
    throw rh::InvalidArgument(std::string(name) + " must be a host array");
  }
  if (array.dtype != dtype) {
    throw rh::InvalidArgument(std::string(name) + " has dtype " +
                              rh::cuda::dtype_name(array.dtype) + ", expected " +
                              rh::cuda::dtype_name(dtype));
  }
  if (array.rows != rows || array.cols != cols || (rows > 1 && array.row_stride != cols)) {
    throw rh::InvalidArgument(std::string(name) + " must be a contiguous " +
                              std::to_string(rows) + " x " + std::to_string(cols) + " array, got " +
                              std::to_string(array.rows) + " x " + std::to_string(array.cols) +
                              " with row stride " + std::to_string(array.row_stride));
  }
  if (array.data == nullptr) throw rh::InvalidArgument(std::string(name) + " has no data");
}

void load_state(rh_cuda_state_t state, const rh_cuda_state_info* info, const rh_cuda_array* coef,
                const rh_cuda_array* information, const rh_cuda_array* gram,
                const rh_cuda_array* score_gram, const rh_cuda_array* factor,
                const rh_cuda_array* vector) {
  rh::cuda::DeviceState& s = *require(state, "state").state;
  const rh_cuda_state_info& i = require(info, "info");
  if (i.dim < 1) throw rh::InvalidArgument("info.dim must be >= 1");
  check_host_array(require(coef, "coef"), "coef", i.dtype, i.dim, 1);
  check_host_array(require(information, "information"), "information", i.dtype, i.dim, i.dim);
  if (i.reserved2 != 0) {
    throw rh::InvalidArgument("the reserved2 field of rh_cuda_state_info must be 0");
  }
  rh::cuda::DeviceState::Arrays arrays{.coef = coef->data, .information = information->data};
  if (i.has_matrices != 0) {
    check_host_array(require(gram, "gram"), "gram", i.dtype, i.dim, i.dim);
    check_host_array(require(score_gram, "score_gram"), "score_gram", i.dtype, i.dim, i.dim);
    arrays.gram = gram->data;
    arrays.score_gram = score_gram->data;
  }
  if (i.has_factor != 0) {
    check_host_array(require(factor, "factor"), "factor", i.dtype, i.dim, i.dim);
    check_host_array(require(vector, "vector"), "vector", i.dtype, i.dim, 1);
    arrays.factor = factor->data;
    arrays.vector = vector->data;
  }
  s.load(i, arrays);
}

void read_state(rh_cuda_state_t state, rh_cuda_state_info* info, const rh_cuda_array* coef,
                const rh_cuda_array* information, const rh_cuda_array* gram,
                const rh_cuda_array* score_gram, const rh_cuda_array* factor,
                const rh_cuda_array* vector) {
  const rh::cuda::DeviceState& s = *require(state, "state").state;
  rh_cuda_state_info& i = require(info, "info");
  std::lock_guard lock(s.core().mutex());  // an update or load may be replacing the state
  const auto dim = static_cast<std::int64_t>(s.dim());
  check_host_array(require(coef, "coef"), "coef", s.dtype(), dim, 1);
  check_host_array(require(information, "information"), "information", s.dtype(), dim, dim);
  const auto optional = [&](const rh_cuda_array* array, const char* name, std::int64_t cols) {
    if (array == nullptr) return static_cast<void*>(nullptr);
    check_host_array(*array, name, s.dtype(), dim, cols);
    return array->data;
  };
  s.read(i, {.coef = coef->data,
             .information = information->data,
             .gram = optional(gram, "gram", dim),
             .score_gram = optional(score_gram, "score_gram", dim),
             .factor = optional(factor, "factor", dim),
             .vector = optional(vector, "vector", 1)});
}

}  // namespace

#define RH_API_BEGIN try {
#define RH_API_END                        \
  }                                       \
  catch (...) {                           \
    return status_of(std::current_exception()); \
  }                                       \
  return RH_CUDA_OK;

extern "C" {

uint32_t rh_cuda_abi_version(void) { return RH_CUDA_ABI_VERSION; }

const char* rh_cuda_last_error(void) { return last_error.c_str(); }

const char* rh_cuda_status_name(int status) {
  switch (status) {
    case RH_CUDA_OK:
      return "ok";
    case RH_CUDA_ERROR_INVALID_ARGUMENT:
      return "invalid_argument";
    case RH_CUDA_ERROR_NUMERICAL:
      return "numerical";
    case RH_CUDA_ERROR_NO_DEVICE:
      return "no_device";
    case RH_CUDA_ERROR_OUT_OF_MEMORY:
      return "out_of_memory";
    case RH_CUDA_ERROR_UNSUPPORTED:
      return "unsupported";
    case RH_CUDA_ERROR_CUDA:
      return "cuda";
    case RH_CUDA_ERROR_INTERNAL:
      return "internal";
    default:
      return "unknown";
  }
}

int rh_cuda_device_count(int32_t* out) {
  RH_API_BEGIN
  int32_t& count = require(out, "out");
  int devices = 0;
  RH_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices == 0) throw rh::cuda::NoDeviceError("no CUDA device: cudaGetDeviceCount found 0");
  count = devices;
  RH_API_END
}

int rh_cuda_engine_create(const rh_cuda_engine_options* options, rh_cuda_engine_t* out) {
  RH_API_BEGIN
  const rh_cuda_engine_options& o = require(options, "options");
  rh_cuda_engine_t& handle = require(out, "out");
  const rh::cuda::EngineOptions engine_options{
      .device = o.device,
      .borrow_stream = o.borrow_stream != 0,
      .stream = o.borrow_stream != 0 ? rh::cuda::stream_from_code(o.stream) : nullptr};
  auto engine = std::make_unique<rh_cuda_engine_s>();
  engine->core = std::make_shared<rh::cuda::EngineCore>(engine_options);
  handle = engine.release();
  RH_API_END
}

int rh_cuda_engine_free(rh_cuda_engine_t engine) {
  RH_API_BEGIN
  delete engine;  // NOLINT: the handle was made by release() in rh_cuda_engine_create
  RH_API_END
}

int rh_cuda_engine_stream(rh_cuda_engine_t engine, uint64_t* out) {
  RH_API_BEGIN
  const rh_cuda_engine_s& e = require(engine, "engine");
  // A borrowed stream 0 is the legacy default stream; DLPack forbids 0 for CUDA and names that
  // stream 1 (RH_CUDA_STREAM_LEGACY), which is what __dlpack__ is given.
  const cudaStream_t stream = e.core->stream();
  require(out, "out") = stream == nullptr ? RH_CUDA_STREAM_LEGACY
                                          : reinterpret_cast<std::uintptr_t>(stream);
  RH_API_END
}

int rh_cuda_engine_stats_get(rh_cuda_engine_t engine, rh_cuda_engine_stats* out) {
  RH_API_BEGIN
  rh_cuda_engine_s& e = require(engine, "engine");
  std::lock_guard lock(e.core->mutex());
  const rh::cuda::AllocationStats& a = e.core->allocations();
  require(out, "out") = rh_cuda_engine_stats{.updates = e.core->updates(),
                                             .device_allocations = a.device_allocations,
                                             .device_bytes = a.device_bytes,
                                             .pinned_bytes = a.pinned_bytes};
  RH_API_END
}

int rh_cuda_engine_set_profiling(rh_cuda_engine_t engine, int32_t mode) {
  RH_API_BEGIN
  rh_cuda_engine_s& e = require(engine, "engine");
  std::lock_guard lock(e.core->mutex());
  e.core->set_profiling(mode);
  RH_API_END
}

int rh_cuda_engine_profile_json(rh_cuda_engine_t engine, int32_t format, char* buffer,
                                uint64_t capacity, uint64_t* needed) {
  RH_API_BEGIN
  rh_cuda_engine_s& e = require(engine, "engine");
  uint64_t& size = require(needed, "needed");
  if (buffer == nullptr && capacity != 0) {
    throw rh::InvalidArgument("buffer must not be NULL when capacity is not 0");
  }
  std::string json;
  {
    std::lock_guard lock(e.core->mutex());
    json = e.core->profile_json(format);
  }
  size = static_cast<uint64_t>(json.size()) + 1;
  if (capacity == 0) return RH_CUDA_OK;  // a size query
  if (capacity < size) {
    throw rh::InvalidArgument("the buffer holds " + std::to_string(capacity) +
                              " bytes, but the profile needs " + std::to_string(size) +
                              " (NUL included); *needed has the size");
  }
  std::memcpy(buffer, json.c_str(), json.size() + 1);
  RH_API_END
}

int rh_cuda_state_create(rh_cuda_engine_t engine, int32_t dtype, int64_t dim,
                         rh_cuda_state_t* out) {
  RH_API_BEGIN
  const rh_cuda_engine_s& e = require(engine, "engine");
  rh_cuda_state_t& handle = require(out, "out");
  auto state = std::make_unique<rh_cuda_state_s>();
  state->state = std::make_unique<rh::cuda::DeviceState>(e.core, dtype, dim);
  handle = state.release();
  RH_API_END
}

int rh_cuda_state_free(rh_cuda_state_t state) {
  RH_API_BEGIN
  delete state;  // NOLINT: made by release() in rh_cuda_state_create
  RH_API_END
}

int rh_cuda_state_load(rh_cuda_state_t state, const rh_cuda_state_info* info,
                       const rh_cuda_array* coef, const rh_cuda_array* information,
                       const rh_cuda_array* gram, const rh_cuda_array* score_gram) {
  RH_API_BEGIN
  if (require(info, "info").has_factor != 0) {
    throw rh::InvalidArgument("info.has_factor is set: a state with square-root information "
                              "(R~, z~) loads through rh_cuda_state_load_factor");
  }
  load_state(state, info, coef, information, gram, score_gram, nullptr, nullptr);
  RH_API_END
}

int rh_cuda_state_load_factor(rh_cuda_state_t state, const rh_cuda_state_info* info,
                              const rh_cuda_array* coef, const rh_cuda_array* information,
                              const rh_cuda_array* gram, const rh_cuda_array* score_gram,
                              const rh_cuda_array* factor, const rh_cuda_array* vector) {
  RH_API_BEGIN
  load_state(state, info, coef, information, gram, score_gram, factor, vector);
  RH_API_END
}

int rh_cuda_state_read(rh_cuda_state_t state, rh_cuda_state_info* info,
                       const rh_cuda_array* coef, const rh_cuda_array* information,
                       const rh_cuda_array* gram, const rh_cuda_array* score_gram) {
  RH_API_BEGIN
  read_state(state, info, coef, information, gram, score_gram, nullptr, nullptr);
  RH_API_END
}

int rh_cuda_state_read_factor(rh_cuda_state_t state, rh_cuda_state_info* info,
                              const rh_cuda_array* coef, const rh_cuda_array* information,
                              const rh_cuda_array* gram, const rh_cuda_array* score_gram,
                              const rh_cuda_array* factor, const rh_cuda_array* vector) {
  RH_API_BEGIN
  read_state(state, info, coef, information, gram, score_gram, factor, vector);
  RH_API_END
}

int rh_cuda_update(rh_cuda_engine_t engine, rh_cuda_state_t previous, const rh_cuda_array* X,
                   const rh_cuda_array* y, const rh_cuda_array* sample_weight,
                   const rh_cuda_config* config, rh_cuda_state_t next,
                   rh_cuda_diagnostics* diagnostics) {
  RH_API_BEGIN
  rh_cuda_engine_s& e = require(engine, "engine");
  const rh::cuda::DeviceState& from = *require(previous, "previous").state;
  rh::cuda::DeviceState& to = *require(next, "next").state;
  rh_cuda_diagnostics& out = require(diagnostics, "diagnostics");
  const rh::Diagnostics d =
      rh::cuda::update(*e.core, from, require(X, "X"), require(y, "y"), sample_weight,
                       to_config(require(config, "config")), to);
  out = rh_cuda_diagnostics{.converged = d.converged ? 1 : 0,
                            .solver = solver_code(d.solver),
                            .n_iter = d.n_iter,
                            .objective = d.objective,
                            .lambda = d.lambda,
                            .bandwidth = d.bandwidth,
                            .line_search_halvings = d.line_search_halvings,
                            .rcond = d.rcond,
                            .drift_statistic = d.drift_statistic,
                            .drift_df = d.drift_df,
                            .drift_pvalue = d.drift_pvalue,
                            .stationarity_step = d.stationarity_step};
  RH_API_END
}

int rh_cuda_predict(rh_cuda_engine_t engine, rh_cuda_state_t state, const rh_cuda_array* X,
                    const rh_cuda_array* out) {
  RH_API_BEGIN
  rh_cuda_engine_s& e = require(engine, "engine");
  rh::cuda::predict(*e.core, *require(state, "state").state, require(X, "X"), require(out, "out"));
  RH_API_END
}

}  // extern "C"
