// The proximal Newton variant of the L1 solver: the same problem as LAMM, solved in fewer
// iterations; its solution meets the subgradient conditions and matches LAMM's.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <rh/cpu/engine.hpp>
#include <vector>

#include "l1_model.hpp"
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

// Columns like the Grunfeld data's (means 250-2,000, scales 200-1,500, correlated 0.8-0.9):
// coordinate descent on such a model stops a short way along, and proximal Newton took 500+
// full steps without converging; with the model solved exactly it converges in a few.
TEST(ProxNewton, ConvergesInFewIterationsOnCorrelatedUncentredColumns) {
  rh::cpu::Engine engine;
  auto config = penalized(rh::L1Solver::prox_newton);
  config.tol.reset();
  config.max_iter = 500;
  auto state = rh::State<double>::empty(4);
  for (std::uint64_t b = 0; b < 3; ++b) {
    auto batch = rh::test::contaminated_batch<double>(200 + b, 220, 3);
    for (std::size_t i = 0; i < batch.rows; ++i) {
      double* x = &batch.X[i * 3];
      const double z0 = x[0], z1 = x[1], z2 = x[2];
      x[0] = 1000.0 + 800.0 * z0;
      x[1] = 250.0 + 200.0 * (0.9 * z0 + 0.44 * z1);
      x[2] = 2000.0 + 1500.0 * (0.8 * z0 + 0.6 * z2);
      batch.y[i] += 0.05 * x[0] - 0.1 * x[1] + 0.02 * x[2];
    }
    auto [next, diag] = rh::test::update(engine, state, batch, config);
    EXPECT_TRUE(diag.converged) << "batch " << b;
    EXPECT_EQ(diag.solver, rh::Solver::prox_newton);
    EXPECT_LE(diag.n_iter, 40) << "batch " << b;
    const auto g = rh::test::smooth_gradient(state, batch, std::span<const double>(next.coef),
                                             diag.bandwidth, true);
    const double level = (state.effective_weight + 220.0) * config.alpha;
    rh::test::expect_subgradient_conditions(g, next.coef, level, 1e-6 * level);
    state = std::move(next);
  }
}

// The model m(s) = g's + s'Ms/2 + c (||(beta + s)_S||_1 - ||beta_S||_1) (intercept last, free).
struct L1Model {
  std::size_t dim;
  std::vector<double> M, g, beta;
  double c;

  // |g + M s| against c coordinate by coordinate: the model's optimality conditions.
  void expect_optimal(const std::vector<double>& s, double tolerance) const {
    for (std::size_t j = 0; j < dim; ++j) {
      double slope = g[j];
      for (std::size_t k = 0; k < dim; ++k) slope += M[j * dim + k] * s[k];
      const double value = beta[j] + s[j];
      if (j + 1 == dim) {
        EXPECT_NEAR(slope, 0.0, tolerance) << "the intercept";
      } else if (value != 0.0) {
        EXPECT_NEAR(slope + c * (value > 0 ? 1.0 : -1.0), 0.0, tolerance) << "coordinate " << j;
      } else {
        EXPECT_LE(std::fabs(slope), c + tolerance) << "coordinate " << j;
      }
    }
  }
};

// A random model on strongly correlated coordinates (M = A A^T + 0.01 I, A's rows sharing a
// common factor), g and beta at a scale where about half the coordinates end at zero.
L1Model correlated_model(std::uint64_t seed, std::size_t dim) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> A(dim * dim);
  std::vector<double> common(dim);
  for (auto& v : common) v = normal(rng);
  for (std::size_t i = 0; i < dim; ++i) {
    for (std::size_t k = 0; k < dim; ++k) A[i * dim + k] = 3.0 * common[k] + 0.3 * normal(rng);
  }
  L1Model model{dim, std::vector<double>(dim * dim), std::vector<double>(dim),
                std::vector<double>(dim), 1.0};
  for (std::size_t i = 0; i < dim; ++i) {
    for (std::size_t j = 0; j < dim; ++j) {
      double sum = i == j ? 0.01 : 0.0;
      for (std::size_t k = 0; k < dim; ++k) sum += A[i * dim + k] * A[j * dim + k];
      model.M[i * dim + j] = sum;
    }
    model.g[i] = 2.0 * normal(rng);
    model.beta[i] = i % 3 == 0 ? 0.0 : 0.5 * normal(rng);
  }
  return model;
}

// From any start (the zero step, or one with the wrong signs) the active-set solve ends at the
// model's minimizer: its optimality conditions hold to rounding.
TEST(L1Model, TheActiveSetSolveReachesTheMinimizerFromAnyStart) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const L1Model model = correlated_model(seed, 9);
    rh::cpu::L1ModelBuffers buffers;
    for (const double start : {0.0, 1.0}) {
      std::vector<double> s(model.dim);
      for (std::size_t j = 0; j < model.dim; ++j) s[j] = start * (j % 2 == 0 ? 1.0 : -2.0);
      ASSERT_TRUE(rh::cpu::polish_l1_model_step(model.M.data(), model.dim, model.dim - 1,
                                                model.g.data(), model.beta.data(), model.c,
                                                s.data(), buffers, 1e12))
          << "seed " << seed << ", start " << start;
      model.expect_optimal(s, 1e-8);
    }
  }
}

// From the zero step of a model whose minimizer has every coordinate active (a first batch's
// pilot can start so), the coordinates join at once: a handful of faces, not one per coordinate
// (the work allowed here is 8 factorizations of the whole block).
TEST(L1Model, ManyCoordinatesJoinAtOnce) {
  constexpr std::size_t dim = 61;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  L1Model model{dim, std::vector<double>(dim * dim), std::vector<double>(dim),
                std::vector<double>(dim, 0.0), 1.0};
  for (std::size_t i = 0; i < dim; ++i) {
    model.M[i * dim + i] = 2.0;
    for (std::size_t j = 0; j < i; ++j) {
      model.M[i * dim + j] = model.M[j * dim + i] = 0.01 * normal(rng);
    }
    model.g[i] = (i % 2 == 0 ? 40.0 : -40.0) + normal(rng);
  }
  std::vector<double> s(dim, 0.0);
  rh::cpu::L1ModelBuffers buffers;
  const double block = 61.0 * 61.0 * 61.0 / 3.0;
  ASSERT_TRUE(rh::cpu::polish_l1_model_step(model.M.data(), dim, dim - 1, model.g.data(),
                                            model.beta.data(), model.c, s.data(), buffers,
                                            8.0 * block));
  model.expect_optimal(s, 1e-8);
  for (std::size_t j = 0; j + 1 < dim; ++j) EXPECT_NE(s[j], 0.0) << "coordinate " << j;
}

// A model whose matrix is singular (a repeated coordinate) is left to coordinate descent: the
// step is returned as it came.
TEST(L1Model, ASingularModelLeavesTheStepAsItWas) {
  L1Model model = correlated_model(3, 4);
  for (std::size_t k = 0; k < 4; ++k) {  // row and column 1 copy row and column 0
    model.M[1 * 4 + k] = model.M[0 * 4 + k];
  }
  for (std::size_t k = 0; k < 4; ++k) model.M[k * 4 + 1] = model.M[k * 4 + 0];
  model.beta = {0.5, 0.5, 0.5, 0.0};
  std::vector<double> s = {0.1, -0.2, 0.3, 0.4};
  const std::vector<double> before = s;
  rh::cpu::L1ModelBuffers buffers;
  EXPECT_FALSE(rh::cpu::polish_l1_model_step(model.M.data(), 4, 3, model.g.data(),
                                             model.beta.data(), model.c, s.data(), buffers,
                                             1e12));
  EXPECT_EQ(s, before);
}

}  // namespace
