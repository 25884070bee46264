#pragma once
// The engine behind rh_cuda_engine_t and the state behind rh_cuda_state_t.

#include <concepts>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "resources.hpp"
#include "rh/bricks/profiler.hpp"
#include "rh/config.hpp"
#include "rh/diagnostics.hpp"
#include "rh/state.hpp"
#include "rh_cuda.h"
#include "workspace.hpp"

namespace rh::cuda {

class CudaEventClock;

// The C ABI's element type codes, and the C++ types behind them.
template <std::floating_point T>
inline constexpr std::int32_t dtype_code = std::same_as<T, float> ? RH_CUDA_FLOAT32
                                                                  : RH_CUDA_FLOAT64;
template <std::floating_point T>
inline constexpr cudaDataType_t cuda_type = std::same_as<T, float> ? CUDA_R_32F : CUDA_R_64F;
const char* dtype_name(std::int32_t dtype);

// A stream named in the ABI's convention (RH_CUDA_STREAM_* or a cudaStream_t value).
cudaStream_t stream_from_code(std::uint64_t code);

struct EngineOptions {
  int device = 0;
  bool borrow_stream = false;
  cudaStream_t stream = nullptr;
};

// One device's resources: created once, shared by the engine handle and every state it made,
// so a state freed after its engine still releases its memory on the right device.
class EngineCore {
 public:
  explicit EngineCore(const EngineOptions& options);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  int device() const noexcept { return device_; }
  cudaStream_t stream() const noexcept { return stream_->get(); }
  cublasHandle_t cublas() const noexcept { return cublas_->get(); }
  cusolverDnHandle_t cusolver() const noexcept { return cusolver_->get(); }
  cusolverDnParams_t cusolver_params() const noexcept { return cusolver_->params(); }
  // Orders the engine's stream after the work already queued on `producer` (RH_CUDA_STREAM_*
  // values or a cudaStream_t).
  void wait_for(std::uint64_t producer);
  void synchronize() const { stream_->synchronize(); }

  AllocationStats& allocations() noexcept { return allocations_; }
  std::mutex& mutex() noexcept { return mutex_; }
  std::int64_t updates() const noexcept { return updates_; }
  void count_update() noexcept { ++updates_; }

  // Profiling (profiling.cu, docs/cuda.md): the profiler that the brick scopes write to, the
  // engine's own while profiling is on, else a process-wide one that is off (one branch per
  // scope). The callers below hold mutex().
  rh::bricks::Profiler& profiler() noexcept;
  // RH_CUDA_PROFILE_*: switching on from off starts a new profile on CUDA events of the engine's
  // stream; switching off keeps the last profile readable.
  void set_profiling(std::int32_t mode);
  // RH_CUDA_PROFILE_FORMAT_*: the report or the Chrome trace, as JSON.
  std::string profile_json(std::int32_t format);

  template <std::floating_point T>
  Workspace<T>& workspace() noexcept {
    if constexpr (std::same_as<T, float>) {
      return single_;
    } else {
      return double_;
    }
  }

 private:
  int device_;
  std::mutex mutex_;  // one update at a time: the workspaces are shared
  AllocationStats allocations_;  // declared before every buffer, destroyed after them
  std::int64_t updates_ = 0;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<CublasHandle> cublas_;
  std::unique_ptr<CusolverHandle> cusolver_;
  std::unique_ptr<Event> ordering_;
  std::unique_ptr<rh::bricks::Profiler> profiler_;  // its events live on stream_: freed first
  CudaEventClock* clock_ = nullptr;                   // profiler_'s clock, owned by it
  bool profiling_ = false;
  Workspace<float> single_;
  Workspace<double> double_;
};

// A renewable state of one dtype: the host copy the solver driver reads (coef and scalars are
// tiny; the information matrix is kept there too so that reading a state never touches the
// device), and the information matrix resident on the device, used by the next update without
// an upload.
class DeviceState {
 public:
  DeviceState(std::shared_ptr<EngineCore> core, std::int32_t dtype, std::int64_t dim);
  ~DeviceState();
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  EngineCore& core() const noexcept { return *core_; }
  std::int32_t dtype() const noexcept { return dtype_; }
  std::size_t dim() const noexcept;

  template <std::floating_point T>
  const State<T>& host() const {
    return std::get<State<T>>(host_);
  }
  template <std::floating_point T>
  const T* device_information() const noexcept {
    return information<T>().data();
  }

  // The host arrays of a state, in and out: G and K when the state keeps the inference matrices,
  // R~ and z~ when it holds square-root information (factorization="qr").
  struct Arrays {
    const void* coef = nullptr;
    const void* information = nullptr;
    const void* gram = nullptr;
    const void* score_gram = nullptr;
    const void* factor = nullptr;
    const void* vector = nullptr;
  };
  struct Outputs {
    void* coef = nullptr;
    void* information = nullptr;
    void* gram = nullptr;
    void* score_gram = nullptr;
    void* factor = nullptr;
    void* vector = nullptr;
  };

  // Host arrays in; uploads the information matrix. The inference matrices (read when
  // info.has_matrices) and R~, z~ (read when info.has_factor) stay in the host state, beside the
  // coefficients.
  void load(const rh_cuda_state_info& info, const Arrays& arrays);
  // The optional outputs are written when the state has them and they are not null.
  void read(rh_cuda_state_info& info, const Outputs& out) const;

  // Adopts an update's result: the new host state, and the device buffer that holds its
  // information matrix (swapped, not copied: the workspace gets this state's old buffer).
  template <std::floating_point T>
  void commit(State<T>&& next, DeviceBuffer<T>& information);

 private:
  std::shared_ptr<EngineCore> core_;  // first: the buffer below is freed on its device
  std::int32_t dtype_;
  template <std::floating_point T>
  DeviceBuffer<T>& information() noexcept {
    if constexpr (std::same_as<T, float>) {
      return information32_;
    } else {
      return information64_;
    }
  }
  template <std::floating_point T>
  const DeviceBuffer<T>& information() const noexcept {
    return const_cast<DeviceState*>(this)->information<T>();
  }
  template <std::floating_point T>
  void load_as(const rh_cuda_state_info& info, const Arrays& arrays);

  std::variant<State<float>, State<double>> host_;
  DeviceBuffer<float> information32_;   // the one of the state's dtype is used
  DeviceBuffer<double> information64_;
};

}  // namespace rh::cuda

// The handles of the C ABI, opaque to callers.
struct rh_cuda_engine_s {
  std::shared_ptr<rh::cuda::EngineCore> core;
};

struct rh_cuda_state_s {
  std::unique_ptr<rh::cuda::DeviceState> state;
};

namespace rh::cuda {

// The status code of an exception caught at the ABI boundary, and its message.
std::pair<int, std::string> classify(const std::exception_ptr& failure);

// pipeline.cu
Diagnostics update(EngineCore& core, const DeviceState& previous, const rh_cuda_array& X,
                   const rh_cuda_array& y, const rh_cuda_array* sample_weight,
                   const Config& config, DeviceState& next);
void predict(EngineCore& core, const DeviceState& state, const rh_cuda_array& X,
             const rh_cuda_array& out);

}  // namespace rh::cuda
