// One batch transition on the device, on the core's drivers (rh::renewable_update over
// DeviceOps), and host prediction.

#include <algorithm>
#include <string>

#include "batch.hpp"
#include "device_blas.hpp"
#include "engine_internal.hpp"
#include "kernels.hpp"
#include "nvtx.hpp"
#include "objective.hpp"
#include "profiling.hpp"
#include "rh/engine_profiling.hpp"
#include "rh/square_root.hpp"
#include "rh/update.hpp"
#include "rh/validation.hpp"

namespace rh::cuda {
namespace {

// Waits for the engine's stream however the update ends: the caller may free or reuse its
// arrays as soon as the ABI call returns, and on an error path work may still be queued.
class QuietSynchronize {
 public:
  explicit QuietSynchronize(cudaStream_t stream) : stream_(stream) {}
  ~QuietSynchronize() { cudaStreamSynchronize(stream_); }
  QuietSynchronize(const QuietSynchronize&) = delete;
  QuietSynchronize& operator=(const QuietSynchronize&) = delete;

 private:
  cudaStream_t stream_;
};

void check_state_dtype(const DeviceState& state, const rh_cuda_array& X) {
  if (X.dtype != state.dtype()) {
    throw InvalidArgument(std::string("X has dtype ") + dtype_name(X.dtype) +
                          ", but the state is " + dtype_name(state.dtype()) +
                          "; arrays are never converted here");
  }
}

template <std::floating_point T>
Diagnostics update_as(EngineCore& core, const DeviceState& previous, const rh_cuda_array& X,
                      const rh_cuda_array& y, const rh_cuda_array* sample_weight,
                      const Config& config, DeviceState& next, std::int64_t& iterations) {
  Workspace<T>& ws = core.workspace<T>();
  const State<T>& caller_state = previous.host<T>();
  const std::size_t d = caller_state.dim();
  const auto rows = static_cast<std::size_t>(X.rows);
  const auto features = static_cast<std::size_t>(X.cols);
  rh::bricks::Profiler& prof = core.profiler();
  DeviceBatch<T> batch;
  {
    // Buffers (sized once per shape), the batch's checks and its copy to the device (host
    // arrays), or its checks in place and the weights back (device arrays).
    const bool host = X.device_type != RH_CUDA_DEVICE_CUDA;
    RH_CUDA_BRICK(prof, stage, rows * features,
                  (host ? rows * (features + 2) : rows) * sizeof(T), 0);
    ws.reserve(d, features, rows, core.allocations(), core.cusolver(), core.cusolver_params());
    batch = prepare_batch(core, ws, caller_state.view(), X, y, sample_weight, config);
  }

  // Before its first batch a state is the empty state, whatever else it holds (as on the CPU).
  const bool first = caller_state.batch_count == 0;
  const State<T> empty = first ? State<T>::empty(d) : State<T>{};
  const StateView<T> stored = first ? empty.view() : caller_state.view();
  const T* information = previous.device_information<T>();
  if (first) {
    RH_CUDA_BRICK(prof, stage, d * d, d * d * sizeof(T), 0);
    RH_CUDA_CHECK(cudaMemsetAsync(ws.empty_information.data(), 0, d * d * sizeof(T),
                                  core.stream()));
    information = ws.empty_information.data();
  }
  // The history in the configured factorization (rh/square_root.hpp: a Cholesky state continued
  // in qr mode gets R~ = chol(J~), a qr state continued in Cholesky mode J~ = R~^T R~), then, with
  // half_life, discounted (rh/drift.hpp), both formed on the host as on the CPU; a J~ that differs
  // from the device's is uploaded into the scratch the first batch's zeros use.
  State<T> factorized_storage;
  const StateView<T> factorized = history_for_factorization(stored, config, factorized_storage);
  State<T> discounted_storage;
  const StateView<T> view =
      history_for_batch(factorized, config, batch.weight_sum, discounted_storage);
  if (view.information.data() != stored.information.data()) {
    RH_CUDA_BRICK(prof, stage, d * d, d * d * sizeof(T), 0);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.empty_information.data(), view.information.data(),
                                  d * d * sizeof(T), cudaMemcpyHostToDevice, core.stream()));
    information = ws.empty_information.data();
  }

  RH_NVTX_RANGE("rh.cuda.renewable_update");
  std::pair<State<T>, Diagnostics> result = [&] {
    DeviceOps<T> ops(core, ws, view, information, batch, config.fit_intercept);
    return renewable_update(ops, view, config);
  }();
  if (!result.first.information_factor.empty()) {
    // The qr mode's J~ is R~^T R~ of the new factor (formed on the host): the device's copy too.
    RH_CUDA_BRICK(prof, transfer, d * d, d * d * sizeof(T), 0);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.next_information.data(), result.first.information.data(),
                                  d * d * sizeof(T), cudaMemcpyHostToDevice, core.stream()));
    core.synchronize();
  }
  next.commit(std::move(result.first), ws.next_information);
  core.count_update();
  iterations = result.second.n_iter;
  return result.second;
}

template <std::floating_point T>
void predict_as(EngineCore& core, const DeviceState& state, const rh_cuda_array& X,
                const rh_cuda_array& out) {
  const State<T>& host = state.host<T>();
  const std::size_t d = host.dim();
  const auto n = static_cast<std::size_t>(X.rows);
  const auto p = static_cast<std::size_t>(X.cols);
  if (d != p && d != p + 1) {
    throw InvalidArgument("X has " + std::to_string(p) + " features, but the state has " +
                          std::to_string(d) + " coefficients (expected " + std::to_string(p) +
                          " without an intercept or " + std::to_string(p + 1) + " with one)");
  }
  if (static_cast<std::size_t>(out.rows) != n || out.cols != 1) {
    throw InvalidArgument("out must be a vector of " + std::to_string(n) + " entries");
  }
  if (n == 0) return;
  rh::bricks::Profiler& prof = core.profiler();
  Workspace<T>& ws = core.workspace<T>();
  const cudaStream_t stream = core.stream();
  {
    RH_CUDA_BRICK(prof, stage, n * p + d, (n * p + d) * sizeof(T), 0);
    ws.reserve(d, p, n, core.allocations(), core.cusolver(), core.cusolver_params());
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.staged_x.data(), X.data, n * p * sizeof(T),
                                  cudaMemcpyHostToDevice, stream));
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.current.data(), host.coef.data(), d * sizeof(T),
                                  cudaMemcpyHostToDevice, stream));
  }
  {
    RH_CUDA_BRICK(prof, predict, n * p, (n * p + n + d) * sizeof(T), 2 * n * p);
    if (p == 0) {
      // An intercept-only state: X β is 0. GEMV would refuse lda = 0, and with m = 0 it returns
      // without writing y.
      kernels::fill(stream, n, T{0}, ws.projection.data());
    } else {
      const auto rows = static_cast<std::int64_t>(n);
      const auto cols = static_cast<std::int64_t>(p);
      blas::gemv(core.cublas(), CUBLAS_OP_T, cols, rows, T{1}, ws.staged_x.data(), cols,
                 ws.current.data(), 1, T{0}, ws.projection.data(), 1);
    }
    if (d == p + 1) kernels::add_scalar(stream, n, ws.current.data() + p, ws.projection.data());
  }
  RH_CUDA_BRICK(prof, transfer, n, n * sizeof(T), 0);
  RH_CUDA_CHECK(cudaMemcpyAsync(out.data, ws.projection.data(), n * sizeof(T),
                                cudaMemcpyDeviceToHost, stream));
  core.synchronize();
}

}  // namespace

Diagnostics update(EngineCore& core, const DeviceState& previous, const rh_cuda_array& X,
                   const rh_cuda_array& y, const rh_cuda_array* sample_weight,
                   const Config& config, DeviceState& next) {
  if (&previous.core() != &core || &next.core() != &core) {
    throw InvalidArgument("the states were created by another engine; states are bound to the "
                          "engine (and device) that created them");
  }
  std::lock_guard lock(core.mutex());
  DeviceGuard guard(core.device());
  QuietSynchronize settle(core.stream());
  RH_NVTX_RANGE("rh.cuda.update");
  rh::bricks::Profiler& prof = core.profiler();
  EngineBatchScope batch(prof, X.rows > 0 ? static_cast<std::size_t>(X.rows) : 0);
  {
    // The parameters, then the descriptors of X, y and w (docs/numerics.md, "Validation
    // order"); the values are checked while they are staged.
    RH_CUDA_BRICK(prof, validate, 3, 3 * sizeof(rh_cuda_array), 0);
    validate_config(config);
    check_state_dtype(previous, X);
    check_descriptor(core, X, "X", previous.dtype());
    check_descriptor(core, y, "y", previous.dtype());
    if (sample_weight != nullptr) {
      check_descriptor(core, *sample_weight, "sample_weight", previous.dtype());
    }
  }
  std::int64_t iterations = 0;
  Diagnostics result =
      previous.dtype() == RH_CUDA_FLOAT32
          ? update_as<float>(core, previous, X, y, sample_weight, config, next, iterations)
          : update_as<double>(core, previous, X, y, sample_weight, config, next, iterations);
  batch.set_iterations(iterations);
  return result;
}

void predict(EngineCore& core, const DeviceState& state, const rh_cuda_array& X,
             const rh_cuda_array& out) {
  if (X.device_type == RH_CUDA_DEVICE_CUDA || out.device_type == RH_CUDA_DEVICE_CUDA) {
    throw UnsupportedError(
        "device-resident prediction is not supported: predict takes host arrays (the result "
        "would otherwise be copied to the host implicitly)");
  }
  std::lock_guard lock(core.mutex());
  DeviceGuard guard(core.device());
  QuietSynchronize settle(core.stream());
  {
    RH_CUDA_BRICK(core.profiler(), validate, 2, 2 * sizeof(rh_cuda_array), 0);
    check_state_dtype(state, X);
    check_descriptor(core, X, "X", state.dtype());
    check_descriptor(core, out, "out", state.dtype());
  }
  if (state.dtype() == RH_CUDA_FLOAT32) {
    predict_as<float>(core, state, X, out);
  } else {
    predict_as<double>(core, state, X, out);
  }
}

}  // namespace rh::cuda
