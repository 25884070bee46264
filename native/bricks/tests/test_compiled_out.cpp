// This file compiles the macros out, as a build with RH_BRICKS_ENABLED=OFF does.
#undef RH_BRICKS_ENABLED
#define RH_BRICKS_ENABLED 0

#include <gtest/gtest.h>

#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace rh::bricks {
namespace {

int evaluated = 0;
std::uint64_t count_me() {
  ++evaluated;
  return 1;
}

TEST(CompiledOut, MacrosVanishAndDoNotEvaluateTheirArguments) {
  Profiler p(testing::test_table());
  // Used only in the macros: must not trip -Wunused-variable in a -Werror build.
  const std::uint64_t only_for_profiling = 42;
  {
    RH_BRICK_SCOPE(p, testing::B::load, only_for_profiling, 0, 0);
    RH_BRICK_SCOPE(p, testing::B::gemm, count_me(), count_me(), count_me());
    RH_BRICK_TRANSFER(p, testing::B::copy, Direction::h2d, count_me());
    RH_BRICK_KERNEL(p, "k");
    RH_BRICK_SCOPE_NAMED(p, "named", Category::data, count_me(), 0, 0);
    RH_BRICK_PHASES(phases, p);
    RH_BRICK_NEXT_PHASE(phases, testing::B::scale, count_me(), only_for_profiling, 0);
    RH_BRICK_NEXT_PHASE(phases, testing::B::gemv, 0, 0, count_me());
    RH_BRICK_END_PHASES(phases);
  }
  EXPECT_EQ(evaluated, 0);
  EXPECT_EQ(p.stats(static_cast<BrickId>(testing::B::gemm)).count, 0u);
  EXPECT_EQ(p.stats(static_cast<BrickId>(testing::B::scale)).count, 0u);
  EXPECT_FALSE(p.bricks().find("named").has_value());
}

}  // namespace
}  // namespace rh::bricks
