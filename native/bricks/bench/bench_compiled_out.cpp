// The same scope with the macros compiled out, as a build with RH_BRICKS_ENABLED=OFF has it.
#undef RH_BRICKS_ENABLED
#define RH_BRICKS_ENABLED 0

#include <benchmark/benchmark.h>

#include "rh/bricks/scope.hpp"

namespace rh::bricks {
namespace {

void BM_Scope_CompiledOut(benchmark::State& state) {
  Profiler p(BrickTable({{0, "gemm", Category::blas3}}, 16));
  for (auto _ : state) {
    RH_BRICK_SCOPE(p, 0, 64, 512, 1024);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Scope_CompiledOut);

}  // namespace
}  // namespace rh::bricks
