#include "batch.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "rh/error.hpp"
#include "rh/validation.hpp"

namespace rh::cuda {
namespace {

std::string where(const rh_cuda_array& array) {
  if (array.device_type == RH_CUDA_DEVICE_CPU) return "the host";
  return "cuda:" + std::to_string(array.device_id);
}

constexpr unsigned long long none = std::numeric_limits<unsigned long long>::max();

// The state's own checks (rh::validate_update) without reading the batch: a one-row batch of
// zeros with unit weight passes every batch check, so only the parameters and the state against
// the feature count can fail. The batch itself was checked on the device just before, in the
// documented order.
template <class T>
void validate_state(const StateView<T>& state, std::size_t features, const Config& config) {
  const std::vector<T> zero_row(features, T{0});
  const T zero{0};
  const T one{1};
  validate_update(state, MatrixView<T>{zero_row.data(), 1, features},
                  std::span<const T>(&zero, 1), std::span<const T>(&one, 1), config);
}

template <class T>
double sequential_sum(std::span<const T> values) {
  double total = 0.0;
  for (const T v : values) total += static_cast<double>(v);
  return total;
}

// The device id of a descriptor is the caller's word; the pointer is asked: a host pointer read
// in place as device memory would be an illegal address, sticky for the whole context.
void check_device_pointer(const EngineCore& core, const rh_cuda_array& array, const char* name) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, array.data);
  if (status == cudaErrorInvalidValue) {
    cudaGetLastError();  // not a pointer the runtime knows: the caller's error, not sticky
    attributes.type = cudaMemoryTypeUnregistered;
  } else {
    RH_CUDA_CHECK(status);
  }
  const bool device_memory = attributes.type == cudaMemoryTypeDevice ||
                             attributes.type == cudaMemoryTypeManaged;
  if (!device_memory) {
    fail(name, " is described as CUDA memory on cuda:", array.device_id, ", but its address ",
         array.data, " is ",
         attributes.type == cudaMemoryTypeHost ? "pinned host memory" : "not CUDA memory",
         "; pass a device tensor, or a host array as a host array");
  }
  if (attributes.device != core.device()) {
    fail(name, " is described as on cuda:", array.device_id, ", but its memory is on cuda:",
         attributes.device, "; move it explicitly (tensors are never moved between devices)");
  }
}

}  // namespace

void check_descriptor(const EngineCore& core, const rh_cuda_array& array, const char* name,
                      std::int32_t dtype) {
  if (array.reserved != 0) fail(name, ": the reserved field of rh_cuda_array must be 0");
  if (array.dtype != dtype) {
    fail(name, " has dtype ", dtype_name(array.dtype), ", but the state is ", dtype_name(dtype),
         "; arrays are never converted here: convert host arrays before the call, and pass "
         "device tensors of the state's dtype");
  }
  if (array.rows < 0 || array.cols < 0) {
    fail(name, " has a negative shape (", array.rows, ", ", array.cols, ")");
  }
  if (array.row_stride != array.cols && array.rows > 1) {
    fail(name, " is not C-contiguous (row stride ", array.row_stride, " for ", array.cols,
         " columns); pass a contiguous array: inputs are never copied or reordered");
  }
  if (array.device_type == RH_CUDA_DEVICE_CUDA) {
    if (array.device_id != core.device()) {
      fail(name, " is on cuda:", array.device_id, ", but the engine runs on cuda:",
           core.device(), "; move it explicitly (tensors are never moved between devices)");
    }
  } else if (array.device_type != RH_CUDA_DEVICE_CPU) {
    fail(name, " is on an unsupported device type ", array.device_type,
         " (expected the host or a CUDA device)");
  }
  if (array.data == nullptr && array.rows > 0 && array.cols > 0) fail(name, " has no data");
  if (array.device_type == RH_CUDA_DEVICE_CUDA && array.data != nullptr) {
    check_device_pointer(core, array, name);
  }
}

template <std::floating_point T>
DeviceBatch<T> prepare_batch(EngineCore& core, Workspace<T>& ws, const StateView<T>& state,
                             const rh_cuda_array& X, const rh_cuda_array& y,
                             const rh_cuda_array* sample_weight, const Config& config) {
  const cudaStream_t stream = core.stream();
  const auto n = static_cast<std::size_t>(X.rows);
  const auto p = static_cast<std::size_t>(X.cols);
  const bool on_device = X.device_type == RH_CUDA_DEVICE_CUDA;
  for (const rh_cuda_array* other : {&y, sample_weight}) {
    if (other != nullptr && other->device_type != X.device_type) {
      fail("X is on ", where(X), " but ", other == &y ? "y" : "sample_weight", " is on ",
           where(*other), "; pass X, y and sample_weight on the same device");
    }
  }
  if (y.cols != 1) fail("y must be a vector (n, 1), got (", y.rows, ", ", y.cols, ")");
  if (sample_weight != nullptr && sample_weight->cols != 1) {
    fail("sample_weight must be a vector (n, 1), got (", sample_weight->rows, ", ",
         sample_weight->cols, ")");
  }

  DeviceBatch<T> batch;
  batch.rows = n;
  batch.features = p;
  T* host_weights = ws.host_weights.data();
  if (sample_weight == nullptr) {
    std::fill_n(host_weights, n, T{1});
    kernels::fill(stream, n, T{1}, ws.staged_w.data());
    batch.w = ws.staged_w.data();
  }

  if (!on_device) {
    // Host arrays: the CPU engine's validation, word for word, then one copy each.
    const auto* x_host = static_cast<const T*>(X.data);
    const auto* y_host = static_cast<const T*>(y.data);
    const T* w_host = sample_weight != nullptr ? static_cast<const T*>(sample_weight->data)
                                               : host_weights;
    const std::size_t w_rows =
        sample_weight != nullptr ? static_cast<std::size_t>(sample_weight->rows) : n;
    validate_update(state, MatrixView<T>{x_host, n, p},
                    std::span<const T>(y_host, static_cast<std::size_t>(y.rows)),
                    std::span<const T>(w_host, w_rows), config);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.staged_x.data(), x_host, n * p * sizeof(T),
                                  cudaMemcpyHostToDevice, stream));
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.staged_y.data(), y_host, n * sizeof(T),
                                  cudaMemcpyHostToDevice, stream));
    if (sample_weight != nullptr) {
      RH_CUDA_CHECK(cudaMemcpyAsync(ws.staged_w.data(), w_host, n * sizeof(T),
                                    cudaMemcpyHostToDevice, stream));
      batch.w = ws.staged_w.data();
    }
    batch.X = ws.staged_x.data();
    batch.y = ws.staged_y.data();
    batch.host_weights = std::span<const T>(w_host, n);
    batch.weight_sum = sequential_sum(batch.host_weights);
    return batch;
  }

  // Device arrays: read in place, after the producer's queued work. Every check runs on the
  // device at once; the first failure is then reported in the documented order (the
  // parameters were checked first, before the descriptors: update() in pipeline.cu).
  if (n == 0) fail("X has 0 rows; a batch needs at least 1 sample");
  if (p == 0) fail("X has 0 features; at least 1 is required");
  const auto y_rows = static_cast<std::size_t>(y.rows);
  const std::size_t w_rows =
      sample_weight != nullptr ? static_cast<std::size_t>(sample_weight->rows) : n;
  core.wait_for(X.stream);
  core.wait_for(y.stream);
  batch.X = static_cast<const T*>(X.data);
  batch.y = static_cast<const T*>(y.data);
  DeviceScalars* scalars = ws.scalars.data();
  RH_CUDA_CHECK(cudaMemsetAsync(scalars->first_invalid, 0xFF, sizeof(scalars->first_invalid),
                                stream));
  kernels::check_values(stream, n * p, batch.X, false, &scalars->first_invalid[x_values]);
  kernels::check_values(stream, y_rows, batch.y, false, &scalars->first_invalid[y_values]);
  if (sample_weight != nullptr && w_rows == n) {
    core.wait_for(sample_weight->stream);
    batch.w = static_cast<const T*>(sample_weight->data);
    kernels::check_values(stream, n, batch.w, false, &scalars->first_invalid[weight_values]);
    kernels::check_values(stream, n, batch.w, true, &scalars->first_invalid[weight_signs]);
    // The drivers' weighted medians run on the host: the weights come back once per batch.
    RH_CUDA_CHECK(cudaMemcpyAsync(host_weights, batch.w, n * sizeof(T), cudaMemcpyDeviceToHost,
                                  stream));
  }
  RH_CUDA_CHECK(cudaMemcpyAsync(ws.host_scalars.data(), scalars, sizeof(DeviceScalars),
                                cudaMemcpyDeviceToHost, stream));
  core.synchronize();
  const unsigned long long* first = ws.host_scalars.data()->first_invalid;
  if (first[x_values] != none) {
    fail("X contains a non-finite value at row ", first[x_values] / p, ", column ",
         first[x_values] % p);
  }
  if (y_rows != n) fail("y has ", y_rows, " entries, but X has ", n, " rows");
  if (first[y_values] != none) fail("y contains a non-finite value at index ", first[y_values]);
  if (w_rows != n) fail("sample_weight has ", w_rows, " entries, but X has ", n, " rows");
  if (first[weight_values] != none) {
    fail("sample_weight contains a non-finite value at index ", first[weight_values]);
  }
  if (first[weight_signs] != none) {
    fail("sample_weight must be >= 0, but entry ", first[weight_signs], " is ",
         host_weights[first[weight_signs]]);
  }
  batch.host_weights = std::span<const T>(host_weights, n);
  batch.weight_sum = sequential_sum(batch.host_weights);
  if (!(batch.weight_sum > 0.0)) {
    fail("sample_weight sums to 0; at least one weight must be positive");
  }
  validate_state(state, p, config);
  return batch;
}

template DeviceBatch<float> prepare_batch<float>(EngineCore&, Workspace<float>&,
                                                 const StateView<float>&, const rh_cuda_array&,
                                                 const rh_cuda_array&, const rh_cuda_array*,
                                                 const Config&);
template DeviceBatch<double> prepare_batch<double>(EngineCore&, Workspace<double>&,
                                                   const StateView<double>&,
                                                   const rh_cuda_array&, const rh_cuda_array&,
                                                   const rh_cuda_array*, const Config&);

}  // namespace rh::cuda
