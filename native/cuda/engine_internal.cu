// The engine's device resources, the error raising helpers, and the one place where a failure
// becomes a status code.

#include <new>
#include <string>

#include "engine_internal.hpp"

namespace rh::cuda {

// --- errors ------------------------------------------------------------------------------------

namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(" in ") + call + " (" + file + ":" + std::to_string(line) + ")";
}

}  // namespace

void throw_cuda(cudaError_t status, const char* call, const char* file, int line) {
  const std::string what = std::string(cudaGetErrorName(status)) + ": " +
                           cudaGetErrorString(status) + where(call, file, line);
  if (status == cudaErrorInsufficientDriver) {
    throw NoDeviceError("no CUDA device: no NVIDIA driver is loaded, or it is older than this "
                        "CUDA runtime (" + what + ")");
  }
  if (status == cudaErrorNoDevice || status == cudaErrorInvalidDevice) {
    throw NoDeviceError("no CUDA device (" + what + ")");
  }
  if (status == cudaErrorMemoryAllocation) throw OutOfMemoryError("CUDA out of memory: " + what);
  throw CudaError("CUDA error " + what);
}

void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  const std::string what = std::string(cublasGetStatusName(status)) + ": " +
                           cublasGetStatusString(status) + where(call, file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError("cuBLAS out of memory: " + what);
  throw CudaError("cuBLAS error " + what);
}

void throw_cusolver(cusolverStatus_t status, const char* call, const char* file, int line) {
  const std::string what =
      "cuSOLVER status " + std::to_string(static_cast<int>(status)) + where(call, file, line);
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) {
    throw OutOfMemoryError("cuSOLVER out of memory: " + what);
  }
  throw CudaError("cuSOLVER error: " + what);
}

std::pair<int, std::string> classify(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const InvalidArgument& e) {
    return {RH_CUDA_ERROR_INVALID_ARGUMENT, e.what()};
  } catch (const NumericalError& e) {
    return {RH_CUDA_ERROR_NUMERICAL, e.what()};
  } catch (const NoDeviceError& e) {
    return {RH_CUDA_ERROR_NO_DEVICE, e.what()};
  } catch (const OutOfMemoryError& e) {
    return {RH_CUDA_ERROR_OUT_OF_MEMORY, e.what()};
  } catch (const UnsupportedError& e) {
    return {RH_CUDA_ERROR_UNSUPPORTED, e.what()};
  } catch (const CudaError& e) {
    return {RH_CUDA_ERROR_CUDA, e.what()};
  } catch (const std::bad_alloc&) {
    return {RH_CUDA_ERROR_OUT_OF_MEMORY, "out of host memory"};
  } catch (const std::exception& e) {
    return {RH_CUDA_ERROR_INTERNAL, std::string("internal error: ") + e.what()};
  } catch (...) {
    return {RH_CUDA_ERROR_INTERNAL, "internal error: an unknown exception"};
  }
}

// --- resources ---------------------------------------------------------------------------------

DeviceGuard::DeviceGuard(int device) {
  RH_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    RH_CUDA_CHECK(cudaSetDevice(device));
    restore_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (restore_) cudaSetDevice(previous_);
}

Stream::Stream() : owned_(true) {
  RH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::Stream(cudaStream_t borrowed) : stream_(borrowed), owned_(false) {}

Stream::~Stream() {
  if (owned_) cudaStreamDestroy(stream_);
}

void Stream::synchronize() const { RH_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Event::Event(unsigned flags) { RH_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }

Event::~Event() { cudaEventDestroy(event_); }

CublasHandle::CublasHandle(cudaStream_t stream) {
  RH_CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    RH_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    RH_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
    // Strict precision (RFC "Precision modes"): no TF32, no reduced-precision reductions. The
    // read-back guards against a library default or environment override we did not expect.
    const auto strict = static_cast<cublasMath_t>(
        CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    RH_CUBLAS_CHECK(cublasSetMathMode(handle_, strict));
    cublasMath_t mode{};
    RH_CUBLAS_CHECK(cublasGetMathMode(handle_, &mode));
    if (mode != strict) throw CudaError("cuBLAS refused the strict math mode");
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

CublasHandle::~CublasHandle() { cublasDestroy(handle_); }

CusolverHandle::CusolverHandle(cudaStream_t stream) {
  RH_CUSOLVER_CHECK(cusolverDnCreate(&handle_));
  try {
    RH_CUSOLVER_CHECK(cusolverDnSetStream(handle_, stream));
    RH_CUSOLVER_CHECK(cusolverDnSetDeterministicMode(handle_, CUSOLVER_DETERMINISTIC_RESULTS));
    RH_CUSOLVER_CHECK(cusolverDnCreateParams(&params_));
  } catch (...) {
    cusolverDnDestroy(handle_);
    throw;
  }
}

CusolverHandle::~CusolverHandle() {
  cusolverDnDestroyParams(params_);
  cusolverDnDestroy(handle_);
}

// --- the engine --------------------------------------------------------------------------------

namespace {

int checked_device(int device) {
  int count = 0;
  RH_CUDA_CHECK(cudaGetDeviceCount(&count));  // no driver or no device: NoDeviceError
  if (count == 0) throw NoDeviceError("no CUDA device: cudaGetDeviceCount found 0 devices");
  if (device < 0 || device >= count) {
    throw NoDeviceError("no CUDA device " + std::to_string(device) + ": this machine has " +
                        std::to_string(count) + " (ordinals 0 to " + std::to_string(count - 1) +
                        ")");
  }
  return device;
}

}  // namespace

cudaStream_t stream_from_code(std::uint64_t code) {
  switch (code) {
    case RH_CUDA_STREAM_LEGACY:
      return cudaStreamLegacy;
    case RH_CUDA_STREAM_PER_THREAD:
      return cudaStreamPerThread;
    default:
      return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(code));
  }
}

EngineCore::EngineCore(const EngineOptions& options) : device_(checked_device(options.device)) {
  DeviceGuard guard(device_);
  stream_ = options.borrow_stream ? std::make_unique<Stream>(options.stream)
                                  : std::make_unique<Stream>();
  cublas_ = std::make_unique<CublasHandle>(stream_->get());
  cusolver_ = std::make_unique<CusolverHandle>(stream_->get());
  ordering_ = std::make_unique<Event>();
}

EngineCore::~EngineCore() {
  try {
    DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_->get());
    // Buffers and handles go while this device is current.
    single_ = {};
    double_ = {};
    profiler_.reset();
    ordering_.reset();
    cusolver_.reset();
    cublas_.reset();
    stream_.reset();
  } catch (...) {  // nothing to report from a destructor; members then release on their own
  }
}

void EngineCore::wait_for(std::uint64_t producer) {
  if (producer == RH_CUDA_STREAM_NONE) return;
  const cudaStream_t source = stream_from_code(producer);
  if (source == stream_->get()) return;
  RH_CUDA_CHECK(cudaEventRecord(ordering_->get(), source));
  RH_CUDA_CHECK(cudaStreamWaitEvent(stream_->get(), ordering_->get(), 0));
}

}  // namespace rh::cuda
