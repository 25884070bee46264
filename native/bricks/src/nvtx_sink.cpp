// NVTX ranges mirroring the profiler's scopes, so Nsight Systems shows the same bricks. Compiled
// only with RH_BRICKS_NVTX; without an attached tool every call returns at once.
#include <nvtx3/nvToolsExt.h>

#include "rh/bricks/profiler.hpp"

namespace rh::bricks::detail {

namespace {
nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("rh.bricks");
  return d;
}
}  // namespace

void nvtx_push(const char* name) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &a);
}

void nvtx_pop() noexcept { nvtxDomainRangePop(domain()); }

}  // namespace rh::bricks::detail
