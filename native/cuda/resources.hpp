#pragma once
// RAII owners of every CUDA resource the engine holds: device and pinned buffers (counted, so a
// test can see that warm batches allocate nothing), streams, events and library handles.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "errors.hpp"

namespace rh::cuda {

// Allocation counters of one engine.
struct AllocationStats {
  std::int64_t device_allocations = 0;
  std::int64_t device_bytes = 0;  // currently held
  std::int64_t pinned_bytes = 0;  // currently held
};

// Raw allocation with the engine's counters and error mapping (workspace.cu).
void* allocate_device(std::size_t bytes, AllocationStats& stats);
void free_device(void* pointer, std::size_t bytes, AllocationStats& stats) noexcept;
void* allocate_pinned(std::size_t bytes, AllocationStats& stats);
void free_pinned(void* pointer, std::size_t bytes, AllocationStats& stats) noexcept;

// A device array that only grows: reserve(n) reallocates only when n exceeds the capacity, so a
// stream of same-shaped batches reuses it. Contents are not preserved across a reallocation.
template <class T, bool Pinned = false>
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      swap(other);
    }
    return *this;
  }

  void reserve(std::size_t count, AllocationStats& stats) {
    if (count <= capacity_) return;
    release();
    const std::size_t bytes = count * sizeof(T);
    data_ = static_cast<T*>(Pinned ? allocate_pinned(bytes, stats)
                                   : allocate_device(bytes, stats));
    capacity_ = count;
    stats_ = &stats;
  }

  T* data() const noexcept { return data_; }
  std::size_t capacity() const noexcept { return capacity_; }

  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(capacity_, other.capacity_);
    std::swap(stats_, other.stats_);
  }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
    if constexpr (Pinned) {
      free_pinned(data_, capacity_ * sizeof(T), *stats_);
    } else {
      free_device(data_, capacity_ * sizeof(T), *stats_);
    }
    data_ = nullptr;
    capacity_ = 0;
  }

  T* data_ = nullptr;
  std::size_t capacity_ = 0;
  AllocationStats* stats_ = nullptr;
};

template <class T>
using DeviceBuffer = Buffer<T, false>;
template <class T>
using PinnedBuffer = Buffer<T, true>;

// Makes `device` current for a scope and restores the caller's device after it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

// The engine's stream: created (non-blocking, so the legacy default stream does not serialize
// it) or borrowed from the caller, who then keeps it alive for the engine's lifetime.
class Stream {
 public:
  Stream();                                  // creates one
  explicit Stream(cudaStream_t borrowed);    // borrows
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const noexcept { return stream_; }
  bool owned() const noexcept { return owned_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
  bool owned_ = false;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDisableTiming);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// cuBLAS bound to the stream, in strict precision: CUBLAS_DEFAULT_MATH without reduced-precision
// reductions, so no TF32 or half-precision tensor-core path is ever taken (RFC "Precision modes").
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const noexcept { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// cuSOLVER bound to the stream, with its 64-bit API parameters and deterministic results.
class CusolverHandle {
 public:
  explicit CusolverHandle(cudaStream_t stream);
  ~CusolverHandle();
  CusolverHandle(const CusolverHandle&) = delete;
  CusolverHandle& operator=(const CusolverHandle&) = delete;
  cusolverDnHandle_t get() const noexcept { return handle_; }
  cusolverDnParams_t params() const noexcept { return params_; }

 private:
  cusolverDnHandle_t handle_ = nullptr;
  cusolverDnParams_t params_ = nullptr;
};

}  // namespace rh::cuda
