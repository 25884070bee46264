// The proximal Newton variant of the L1 solver: the same problem as LAMM, solved in fewer
// iterations; its solution meets the subgradient conditions and matches LAMM's.

#include <gtest/gtest.h>

#include <cmath>
#include <rh/cpu/engine.hpp>

#include "problems.hpp"

namespace {

rh::Config penalized(rh::L1Solver solver) {
  rh::Config config;
  config.alpha = 0.05;
  config.tol = 1e-12;
  config.max_iter = 20000;
  config.l1_solver = solver;
  return config;
}

TEST(ProxNewton, MeetsTheSubgradientConditionsAndAgreesWithLamm) {
  rh::cpu::Engine engine;
  auto newton_state = rh::State<double>::empty(7);
  auto lamm_state = rh::State<double>::empty(7);
  for (std::uint64_t b = 0; b < 3; ++b) {
    const auto batch = rh::test::contaminated_batch<double>(90 + b, 500, 6);
    auto [newton_next, newton_diag] =
        engine.update(newton_state, batch.design(), batch.response(), batch.weights(),
                      penalized(rh::L1Solver::prox_newton));
    auto [lamm_next, lamm_diag] = engine.update(lamm_state, batch.design(), batch.response(),
                                                batch.weights(), penalized(rh::L1Solver::lamm));
    ASSERT_TRUE(newton_diag.converged);
    EXPECT_EQ(newton_diag.solver, rh::Solver::prox_newton);
    EXPECT_TRUE(std::isnan(newton_diag.rcond));  // its model is not solved by the ladder
    EXPECT_LT(newton_diag.n_iter, lamm_diag.n_iter);

    // 0 in grad f + c d||beta_S||_1 at the proximal Newton solution.
    const auto g = rh::test::smooth_gradient(newton_state, batch,
                                             std::span<const double>(newton_next.coef),
                                             newton_diag.bandwidth, true);
    const double level = (newton_state.effective_weight + 500.0) * 0.05;
    rh::test::expect_subgradient_conditions(g, newton_next.coef, level, 1e-6 * level);
    for (std::size_t j = 0; j < 7; ++j) {
      EXPECT_NEAR(newton_next.coef[j], lamm_next.coef[j], 1e-7 * std::max(1.0, std::fabs(lamm_next.coef[j])))
          << "coefficient " << j;
    }
    newton_state = std::move(newton_next);
    lamm_state = std::move(lamm_next);
  }
}

TEST(ProxNewton, FloatAndNoInterceptConverge) {
  rh::cpu::Engine engine;
  auto config = penalized(rh::L1Solver::prox_newton);
  config.tol.reset();
  config.fit_intercept = false;
  auto state = rh::State<float>::empty(6);
  for (std::uint64_t b = 0; b < 2; ++b) {
    const auto batch = rh::test::contaminated_batch<float>(120 + b, 400, 6);
    auto [next, diag] =
        engine.update(state, batch.design(), batch.response(), batch.weights(), config);
    EXPECT_TRUE(diag.converged);
    EXPECT_EQ(diag.solver, rh::Solver::prox_newton);
    state = std::move(next);
  }
}

// A column of zeros gives the first batch's Newton matrix no curvature along its coefficient:
// the model has no minimizer, so the solve continues with LAMM and reports it.
TEST(ProxNewton, ContinuesWithLammWhenTheModelHasNoCurvature) {
  rh::cpu::Engine engine;
  auto batch = rh::test::contaminated_batch<double>(7, 300, 3);
  for (std::size_t i = 0; i < batch.rows; ++i) batch.X[i * 3 + 1] = 0.0;
  auto [next, diag] = engine.update(rh::State<double>::empty(4), batch.design(), batch.response(),
                                    batch.weights(), penalized(rh::L1Solver::prox_newton));
  EXPECT_EQ(diag.solver, rh::Solver::lamm);
  EXPECT_TRUE(diag.converged);
  EXPECT_EQ(next.coef[1], 0.0);
}

}  // namespace
