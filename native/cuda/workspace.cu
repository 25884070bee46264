// Device and pinned allocation (counted per engine), the workspaces, and the device state.

#include <algorithm>
#include <cstring>
#include <string>

#include "engine_internal.hpp"
#include "kernels.hpp"
#include "rh/error.hpp"
#include "workspace.hpp"

namespace rh::cuda {

void* allocate_device(std::size_t bytes, AllocationStats& stats) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, std::max<std::size_t>(bytes, 1));
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error so the engine stays usable
    throw OutOfMemoryError("CUDA out of memory allocating " + std::to_string(bytes) +
                           " bytes of device memory");
  }
  RH_CUDA_CHECK(status);
  ++stats.device_allocations;
  stats.device_bytes += static_cast<std::int64_t>(bytes);
  return pointer;
}

void free_device(void* pointer, std::size_t bytes, AllocationStats& stats) noexcept {
  cudaFree(pointer);  // a destructor cannot report; a failed free leaks, it does not crash
  stats.device_bytes -= static_cast<std::int64_t>(bytes);
}

void* allocate_pinned(std::size_t bytes, AllocationStats& stats) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMallocHost(&pointer, std::max<std::size_t>(bytes, 1));
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemoryError("out of pinned host memory allocating " + std::to_string(bytes) +
                           " bytes");
  }
  RH_CUDA_CHECK(status);
  ++stats.device_allocations;  // pinned memory is a driver allocation too: counted alike
  stats.pinned_bytes += static_cast<std::int64_t>(bytes);
  return pointer;
}

void free_pinned(void* pointer, std::size_t bytes, AllocationStats& stats) noexcept {
  cudaFreeHost(pointer);
  stats.pinned_bytes -= static_cast<std::int64_t>(bytes);
}

template <std::floating_point T>
void Workspace<T>::reserve(std::size_t d, std::size_t features, std::size_t rows,
                           AllocationStats& stats, cusolverDnHandle_t handle,
                           cusolverDnParams_t params) {
  if (d != dim) {
    dim = d;
    solver.svd_ready = false;  // its buffers are re-sized when the rung is next reached
  }
  rows_capacity = std::max(rows_capacity, rows);
  for (DeviceBuffer<T>* buffer : {&residual, &weighted_score, &weighted_curvature, &projection,
                                  &staged_y, &staged_w, &score_sq_weights}) {
    buffer->reserve(rows, stats);
  }
  scaled_rows.reserve(rows * d, stats);  // with the intercept's sqrt(w c) column
  staged_x.reserve(rows * features, stats);
  host_rows.reserve(rows, stats);
  host_weights.reserve(rows, stats);
  partials.reserve(4 * max_reduction_blocks, stats);

  for (DeviceBuffer<T>* buffer :
       {&previous_coef, &history_sign, &current, &delta, &information_delta, &score,
        &equilibration}) {
    buffer->reserve(d, stats);
  }
  for (DeviceBuffer<double>* buffer :
       {&delta64, &information_delta64, &trial64, &information_trial64}) {
    buffer->reserve(d, stats);
  }
  host_vector.reserve(d, stats);
  for (DeviceBuffer<T>* buffer : {&gram, &hessian, &empty_information, &next_information}) {
    buffer->reserve(d * d, stats);
  }
  inference_matrices.reserve(2 * d * d, stats);
  host_matrices.reserve(2 * d * d, stats);
  if constexpr (std::same_as<T, float>) information64.reserve(d * d, stats);
  scalars.reserve(1, stats);
  host_scalars.reserve(1, stats);
  vectors.reset(d);

  solver.factor.reserve(d * d, stats);
  solver.pivots.reserve(d, stats);
  solver.host_factor.reserve(d * d, stats);
  solver.condition_work.resize(4 * d);  // gecon needs 4d, pocon 3d
  solver.condition_iwork.resize(d);
  const auto n = static_cast<std::int64_t>(d);
  std::size_t potrf_device = 0, potrf_host = 0, getrf_device = 0, getrf_host = 0;
  RH_CUSOLVER_CHECK(cusolverDnXpotrf_bufferSize(handle, params, CUBLAS_FILL_MODE_LOWER, n,
                                                cuda_type<T>, solver.factor.data(), n,
                                                cuda_type<T>, &potrf_device, &potrf_host));
  RH_CUSOLVER_CHECK(cusolverDnXgetrf_bufferSize(handle, params, n, n, cuda_type<T>,
                                                solver.factor.data(), n, cuda_type<T>,
                                                &getrf_device, &getrf_host));
  solver.device_work.reserve(std::max(potrf_device, getrf_device), stats);
  solver.host_work.resize(std::max(potrf_host, getrf_host));
}

template struct Workspace<float>;
template struct Workspace<double>;

template <std::floating_point T>
void SquareRootWorkspace<T>::reserve(std::size_t d, std::size_t features, std::size_t n,
                                     AllocationStats& stats, cusolverDnHandle_t handle,
                                     cusolverDnParams_t params) {
  const std::size_t columns = d + 2;
  const std::size_t m = n + d + 2;
  stacked.reserve(m * columns, stats);
  reflectors.reserve(columns, stats);
  linear_rows.reserve(n, stats);
  linear.reserve(std::max<std::size_t>(features, 1), stats);
  column_squares.reserve(d, stats);
  scales.reserve(d, stats);
  pattern.reserve(n, stats);
  step_pattern.reserve(n, stats);
  host_triangle.reserve(columns * columns, stats);
  host_rows.reserve(columns * columns, stats);
  host_linear.reserve(std::max<std::size_t>(features, 1), stats);
  host_squares.reserve(d, stats);
  host_history.reserve(d, stats);
  factor64.reserve(d * d, stats);
  for (DeviceBuffer<double>* buffer :
       {&history_offset64, &history_a64, &history_residual64, &step_u64}) {
    buffer->reserve(d, stats);
  }
  if (d == dim && n == rows) return;
  // geqrf's work for either column count (a Newton step's d + 2, the update's d + 1).
  std::size_t device_bytes = 0;
  std::size_t host_bytes = 0;
  for (const std::size_t k : {columns - 1, columns}) {
    std::size_t device = 0;
    std::size_t host = 0;
    RH_CUSOLVER_CHECK(cusolverDnXgeqrf_bufferSize(
        handle, params, static_cast<std::int64_t>(m), static_cast<std::int64_t>(k), cuda_type<T>,
        stacked.data(), static_cast<std::int64_t>(m), cuda_type<T>, reflectors.data(),
        cuda_type<T>, &device, &host));
    device_bytes = std::max(device_bytes, device);
    host_bytes = std::max(host_bytes, host);
  }
  device_work.reserve(device_bytes, stats);
  host_work.resize(host_bytes);
  dim = d;  // recorded once every buffer is sized
  rows = n;
}

template struct SquareRootWorkspace<float>;
template struct SquareRootWorkspace<double>;

// --- the device state --------------------------------------------------------------------------

const char* dtype_name(std::int32_t dtype) {
  switch (dtype) {
    case RH_CUDA_FLOAT32:
      return "float32";
    case RH_CUDA_FLOAT64:
      return "float64";
    default:
      return "an unsupported dtype";
  }
}

namespace {

std::int32_t checked_dtype(std::int32_t dtype) {
  if (dtype != RH_CUDA_FLOAT32 && dtype != RH_CUDA_FLOAT64) {
    throw InvalidArgument("dtype code " + std::to_string(dtype) +
                          " is not float32 (1) or float64 (2)");
  }
  return dtype;
}

std::size_t checked_dim(std::int64_t dim) {
  if (dim < 1) throw InvalidArgument("a state needs at least 1 coefficient, got " +
                                     std::to_string(dim));
  return static_cast<std::size_t>(dim);
}

}  // namespace

DeviceState::DeviceState(std::shared_ptr<EngineCore> core, std::int32_t dtype, std::int64_t dim)
    : core_(std::move(core)), dtype_(checked_dtype(dtype)) {
  const std::size_t d = checked_dim(dim);
  std::lock_guard lock(core_->mutex());
  DeviceGuard guard(core_->device());
  if (dtype_ == RH_CUDA_FLOAT32) {
    host_ = State<float>::empty(d);
    information32_.reserve(d * d, core_->allocations());
    RH_CUDA_CHECK(cudaMemsetAsync(information32_.data(), 0, d * d * sizeof(float),
                                  core_->stream()));
  } else {
    host_ = State<double>::empty(d);
    information64_.reserve(d * d, core_->allocations());
    RH_CUDA_CHECK(cudaMemsetAsync(information64_.data(), 0, d * d * sizeof(double),
                                  core_->stream()));
  }
  core_->synchronize();
}

DeviceState::~DeviceState() {
  // Free on the state's device, after the engine's queued work that may still read it.
  std::lock_guard lock(core_->mutex());
  try {
    DeviceGuard guard(core_->device());
    cudaStreamSynchronize(core_->stream());
    information32_ = {};
    information64_ = {};
  } catch (...) {  // a destructor reports nothing; the buffers then free on the current device
  }
}

std::size_t DeviceState::dim() const noexcept {
  return std::visit([](const auto& state) { return state.dim(); }, host_);
}

template <std::floating_point T>
void DeviceState::load_as(const rh_cuda_state_info& info, const Arrays& arrays) {
  const std::size_t d = checked_dim(info.dim);
  const auto values = [](const void* pointer, std::size_t count) {
    const auto* first = static_cast<const T*>(pointer);
    return std::vector<T>(first, first + count);
  };
  State<T> loaded;
  loaded.coef = values(arrays.coef, d);
  loaded.information = values(arrays.information, d * d);
  loaded.n_samples_seen = info.n_samples_seen;
  loaded.effective_weight = info.effective_weight;
  loaded.batch_count = info.batch_count;
  loaded.previous_lambda = info.previous_lambda;
  loaded.scale = info.scale;
  loaded.inference = {.score_sq_sum = info.score_sq_sum,
                      .curvature_sum = info.curvature_sum,
                      .curvature_sq_sum = info.curvature_sq_sum,
                      .inference_weight = info.inference_weight,
                      .inference_batches = info.inference_batches};
  if (info.has_matrices != 0) {
    loaded.gram = values(arrays.gram, d * d);
    loaded.score_gram = values(arrays.score_gram, d * d);
  }
  if (info.has_factor != 0) {
    loaded.information_factor = values(arrays.factor, d * d);
    loaded.information_vector = values(arrays.vector, d);
  }

  // Upload into a fresh buffer first, so a failure leaves this state as it was.
  DeviceBuffer<T> uploaded;
  uploaded.reserve(d * d, core_->allocations());
  RH_CUDA_CHECK(cudaMemcpyAsync(uploaded.data(), loaded.information.data(), d * d * sizeof(T),
                                cudaMemcpyHostToDevice, core_->stream()));
  core_->synchronize();
  information<T>().swap(uploaded);
  dtype_ = dtype_code<T>;
  host_ = std::move(loaded);
}

void DeviceState::load(const rh_cuda_state_info& info, const Arrays& arrays) {
  std::lock_guard lock(core_->mutex());
  DeviceGuard guard(core_->device());
  if (checked_dtype(info.dtype) == RH_CUDA_FLOAT32) {
    load_as<float>(info, arrays);
    information64_ = {};
  } else {
    load_as<double>(info, arrays);
    information32_ = {};
  }
}

void DeviceState::read(rh_cuda_state_info& info, const Outputs& out) const {
  std::visit(
      [&](const auto& state) {
        using Coef = std::decay_t<decltype(state.coef)>;
        using T = typename Coef::value_type;
        const auto write = [](void* target, const std::vector<T>& values) {
          if (target != nullptr && !values.empty()) {
            std::memcpy(target, values.data(), values.size() * sizeof(T));
          }
        };
        write(out.coef, state.coef);
        write(out.information, state.information);
        write(out.gram, state.gram);
        write(out.score_gram, state.score_gram);
        write(out.factor, state.information_factor);
        write(out.vector, state.information_vector);
        info = rh_cuda_state_info{.dtype = dtype_,
                                  .has_factor = state.information_factor.empty() ? 0 : 1,
                                  .dim = static_cast<std::int64_t>(state.dim()),
                                  .n_samples_seen = state.n_samples_seen,
                                  .effective_weight = state.effective_weight,
                                  .batch_count = state.batch_count,
                                  .previous_lambda = state.previous_lambda,
                                  .scale = state.scale,
                                  .score_sq_sum = state.inference.score_sq_sum,
                                  .curvature_sum = state.inference.curvature_sum,
                                  .curvature_sq_sum = state.inference.curvature_sq_sum,
                                  .inference_weight = state.inference.inference_weight,
                                  .inference_batches = state.inference.inference_batches,
                                  .has_matrices = state.gram.empty() ? 0 : 1,
                                  .reserved2 = 0};
      },
      host_);
}

template <std::floating_point T>
void DeviceState::commit(State<T>&& next, DeviceBuffer<T>& next_information) {
  information<T>().swap(next_information);
  if constexpr (std::same_as<T, float>) {
    information64_ = {};
  } else {
    information32_ = {};
  }
  dtype_ = dtype_code<T>;
  host_ = std::move(next);
}

template void DeviceState::commit<float>(State<float>&&, DeviceBuffer<float>&);
template void DeviceState::commit<double>(State<double>&&, DeviceBuffer<double>&);

}  // namespace rh::cuda
