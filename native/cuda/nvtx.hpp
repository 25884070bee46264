#pragma once
// NVTX ranges in the "rh.cuda" domain, so Nsight Systems shows the update's phases next to the
// kernels and library calls. One RAII line per scope; compiled out without RH_CUDA_NVTX, and
// without an attached tool each range costs a branch.

#if RH_CUDA_NVTX
#include <nvtx3/nvtx3.hpp>

namespace rh::cuda {
struct nvtx_domain {
  static constexpr const char* name{"rh.cuda"};
};
}  // namespace rh::cuda

#define RH_NVTX_CONCAT_(a, b) a##b
#define RH_NVTX_CONCAT(a, b) RH_NVTX_CONCAT_(a, b)
#define RH_NVTX_RANGE(label) \
  ::nvtx3::scoped_range_in<::rh::cuda::nvtx_domain> RH_NVTX_CONCAT(rh_nvtx_range_, __LINE__){label}
#else
#define RH_NVTX_RANGE(label) static_cast<void>(0)
#endif
