// L1-penalized batches: the LAMM solution meets the subgradient optimality conditions.

#include <gtest/gtest.h>

#include <cmath>
#include <rh/cpu/engine.hpp>

#include "problems.hpp"

namespace {

TEST(Lamm, TwoBatchesMeetTheSubgradientConditions) {
  rh::cpu::Engine engine;
  rh::Config config;
  config.alpha = 0.05;
  config.tol = 1e-12;
  config.max_iter = 20000;
  auto state = rh::State<double>::empty(7);
  for (std::uint64_t b = 0; b < 2; ++b) {
    const auto batch = rh::test::contaminated_batch<double>(40 + b, 400, 6);
    auto [next, diag] =
        engine.update(state, batch.design(), batch.response(), batch.weights(), config);
    EXPECT_TRUE(diag.converged);
    EXPECT_EQ(diag.solver, rh::Solver::lamm);
    EXPECT_TRUE(std::isnan(diag.rcond));  // no Newton system was solved
    EXPECT_EQ(diag.lambda, 0.05);
    const auto g = rh::test::smooth_gradient(state, batch, std::span<const double>(next.coef),
                                             diag.bandwidth, true);
    const double level = (state.effective_weight + 400.0) * config.alpha;
    rh::test::expect_subgradient_conditions(g, next.coef, level, 1e-6 * level);
    EXPECT_EQ(next.previous_lambda, 0.05);
    state = std::move(next);
  }
  // Columns 0 and 3 carry no signal: the penalty zeroes at least one of them.
  EXPECT_TRUE(state.coef[0] == 0.0 || state.coef[3] == 0.0);
}

}  // namespace
