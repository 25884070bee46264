// Its own executable, built only with the NVTX sink: a static NVTX injection (the mechanism
// Nsight uses, linked in instead of loaded) records what the profiler's scopes emit.
#include <cstdint>

// Declared before the NVTX headers, which reference it once NVTX_STATIC_INJECTION_IMPL removes
// their weak null definition; the type is NvtxInitializeInjectionNvtxFunc_t spelled out.
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t));
#define NVTX_STATIC_INJECTION_IMPL
#include <nvtx3/nvToolsExt.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace {

std::vector<std::string> pushed;
int pops = 0;
std::string domain_name;
int domain_tag = 0;  // its address is the fake domain handle
nvtxDomainHandle_t fake_domain() { return reinterpret_cast<nvtxDomainHandle_t>(&domain_tag); }

nvtxDomainHandle_t NVTX_API create_domain(const char* name) {
  domain_name = name;
  return fake_domain();
}
int NVTX_API push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  EXPECT_EQ(domain, fake_domain());
  EXPECT_EQ(a->messageType, NVTX_MESSAGE_TYPE_ASCII);
  pushed.emplace_back(a->message.ascii);
  return 0;
}
int NVTX_API pop(nvtxDomainHandle_t domain) {
  EXPECT_EQ(domain, fake_domain());
  ++pops;
  return 0;
}

int NVTX_API initialize(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&create_domain);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}

}  // namespace

// Overrides the weak null definition that the library's NVTX sink carries: NVTX calls it on
// first use.
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = initialize;

namespace rh::bricks {
namespace {

using testing::B;

TEST(Nvtx, ScopesBecomeRangesInTheBricksDomain) {
  Options o;
  o.nvtx = true;
  o.trace_capacity = 8;
  Profiler p(testing::test_table(), o);
  {
    RH_BRICK_SCOPE(p, B::gemm, 1, 1, 1);
    RH_BRICK_KERNEL(p, "gemm_kernel");
  }
  { RH_BRICK_TRANSFER(p, B::copy, Direction::h2d, 8); }
  EXPECT_EQ(domain_name, "rh.bricks");
  EXPECT_EQ(pushed, (std::vector<std::string>{"gemm", "gemm_kernel", "copy"}));
  EXPECT_EQ(pops, 3);
}

TEST(Nvtx, OffUnlessAsked) {
  const std::size_t before = pushed.size();
  Profiler p(testing::test_table());
  { RH_BRICK_SCOPE(p, B::gemm, 1, 1, 1); }
  EXPECT_EQ(pushed.size(), before);
}

}  // namespace
}  // namespace rh::bricks
