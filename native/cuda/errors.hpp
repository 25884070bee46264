#pragma once
// The CUDA engine's failures, on top of rh::Error (rh/error.hpp), and the checks that raise them.
// Every CUDA, cuBLAS and cuSOLVER status is checked where it is returned; the C ABI boundary
// (c_api.cu) turns the exception into a status code and a thread-local message. Nothing here
// aborts the process.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <string>

#include "rh/error.hpp"

namespace rh::cuda {

// The CUDA runtime or a CUDA library failed.
class CudaError : public Error {
 public:
  using Error::Error;
};

// No usable device: none present, no driver, or the ordinal does not exist.
class NoDeviceError : public Error {
 public:
  using Error::Error;
};

class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A request this ABI refuses by design (device-resident prediction).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_cuda(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call, const char* file,
                               int line);
[[noreturn]] void throw_cusolver(cusolverStatus_t status, const char* call, const char* file,
                                 int line);

}  // namespace rh::cuda

#define RH_CUDA_CHECK(call)                                                          \
  do {                                                                               \
    const cudaError_t rh_status_ = (call);                                           \
    if (rh_status_ != cudaSuccess) {                                                 \
      ::rh::cuda::throw_cuda(rh_status_, #call, __FILE__, __LINE__);                 \
    }                                                                                \
  } while (0)

#define RH_CUBLAS_CHECK(call)                                                        \
  do {                                                                               \
    const cublasStatus_t rh_status_ = (call);                                        \
    if (rh_status_ != CUBLAS_STATUS_SUCCESS) {                                       \
      ::rh::cuda::throw_cublas(rh_status_, #call, __FILE__, __LINE__);               \
    }                                                                                \
  } while (0)

#define RH_CUSOLVER_CHECK(call)                                                      \
  do {                                                                               \
    const cusolverStatus_t rh_status_ = (call);                                      \
    if (rh_status_ != CUSOLVER_STATUS_SUCCESS) {                                     \
      ::rh::cuda::throw_cusolver(rh_status_, #call, __FILE__, __LINE__);             \
    }                                                                                \
  } while (0)

// A kernel launch reports configuration errors at once; execution errors surface at the next
// synchronizing call, which is checked too.
#define RH_CUDA_CHECK_LAUNCH() RH_CUDA_CHECK(cudaGetLastError())
