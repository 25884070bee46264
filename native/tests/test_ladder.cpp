// The linear-solver ladder on constructed matrices: each rung is taken exactly when the contract
// says so, and the SVD rung returns the minimum-norm solution.

#include <gtest/gtest.h>

#include <cmath>
#include <rh/ladder.hpp>
#include <vector>

#include "dense_solver.hpp"

namespace {

// LadderOps over a fixed matrix, backed by the CPU engine's dense solver.
template <class T>
struct MatrixLadder {
  using Scalar = T;
  using Vector = std::vector<T>;

  explicit MatrixLadder(std::vector<T> matrix, std::size_t dim) : H(std::move(matrix)), d(dim) {
    solver.resize(d);
  }

  std::size_t dim() const { return d; }
  bool hessian_symmetric() const {
    for (std::size_t i = 0; i < d; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (H[i * d + j] != H[j * d + i]) return false;
      }
    }
    return true;
  }
  rh::SolveAttempt solve_cholesky(const Vector& b, Vector& x) {
    return solver.cholesky(H.data(), b.data(), x.data());
  }
  rh::SolveAttempt solve_lu(const Vector& b, Vector& x) {
    return solver.lu(H.data(), b.data(), x.data());
  }
  void solve_min_norm(const Vector& b, double rcond, Vector& x) {
    solver.min_norm(H.data(), b.data(), rcond, x.data());
  }

  std::vector<T> H;
  std::size_t d;
  rh::cpu::DenseSolver<T> solver;
};

template <class T>
std::pair<rh::Solver, std::vector<T>> solve(std::vector<T> H, std::vector<T> b) {
  MatrixLadder<T> ops(std::move(H), b.size());
  std::vector<T> x(b.size());
  const rh::Solver rung = rh::solve_ladder(ops, b, x);
  return {rung, x};
}

template <class T>
std::vector<T> multiply(const std::vector<T>& H, const std::vector<T>& x) {
  const std::size_t d = x.size();
  std::vector<T> out(d, T{0});
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) out[i] += H[i * d + j] * x[j];
  }
  return out;
}

TEST(Ladder, SymmetricPositiveDefiniteTakesCholesky) {
  const std::vector<double> H = {4, 1, 0, 1, 3, 1, 0, 1, 2};
  const std::vector<double> b = {1, 2, 3};
  const auto [rung, x] = solve(H, b);
  EXPECT_EQ(rung, rh::Solver::cholesky);
  const auto Hx = multiply(H, x);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(Hx[i], b[i], 1e-12);
}

TEST(Ladder, SymmetricIndefiniteFallsToLu) {
  const std::vector<double> H = {1, 2, 2, -3};
  const std::vector<double> b = {1, -1};
  const auto [rung, x] = solve(H, b);
  EXPECT_EQ(rung, rh::Solver::lu);
  const auto Hx = multiply(H, x);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_NEAR(Hx[i], b[i], 1e-12);
}

TEST(Ladder, AsymmetricSkipsCholesky) {
  // Positive definite in its symmetric part, but not symmetric: Cholesky would use one
  // triangle and silently solve another system.
  const std::vector<double> H = {3, 1, 1e-9, 2};
  const std::vector<double> b = {1, 1};
  const auto [rung, x] = solve(H, b);
  EXPECT_EQ(rung, rh::Solver::lu);
  const auto Hx = multiply(H, x);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_NEAR(Hx[i], b[i], 1e-12);
}

TEST(Ladder, ExactlySingularTakesTheMinimumNormSvdSolution) {
  // H = v v^T with v = (1, 1): the consistent system H x = (2, 2) has solutions x1 + x2 = 2;
  // the minimum-norm one is (1, 1).
  const std::vector<double> H = {1, 1, 1, 1};
  const auto [rung, x] = solve(H, std::vector<double>{2, 2});
  EXPECT_EQ(rung, rh::Solver::svd);
  EXPECT_NEAR(x[0], 1.0, 1e-12);
  EXPECT_NEAR(x[1], 1.0, 1e-12);
}

TEST(Ladder, NearlySingularBelowTheConditionFloorTakesSvd) {
  // Cholesky and LU both factor this matrix, but rcond ~ 1e-17 < d * eps.
  const std::vector<double> H = {1, 1, 1, 1 + 1e-16 * 4};
  const auto [rung, x] = solve(H, std::vector<double>{1, 1});
  EXPECT_EQ(rung, rh::Solver::svd);
  EXPECT_TRUE(std::isfinite(x[0]) && std::isfinite(x[1]));
}

TEST(Ladder, Float32UsesItsOwnEpsilon) {
  const std::vector<float> spd = {2, 1, 1, 2};
  EXPECT_EQ(solve(spd, std::vector<float>{1, 1}).first, rh::Solver::cholesky);
  const std::vector<float> singular = {1, 2, 2, 4};
  const auto [rung, x] = solve(singular, std::vector<float>{1, 2});
  EXPECT_EQ(rung, rh::Solver::svd);
  // Minimum norm: x parallel to (1, 2) with x1 + 2 x2 = 1 -> (0.2, 0.4).
  EXPECT_NEAR(x[0], 0.2f, 1e-5f);
  EXPECT_NEAR(x[1], 0.4f, 1e-5f);
}

TEST(Ladder, SvdWorkspaceFollowsADimensionChange) {
  rh::cpu::DenseSolver<double> solver;
  std::vector<double> x(3);
  solver.resize(2);
  const std::vector<double> small = {1, 1, 1, 1};
  solver.min_norm(small.data(), std::vector<double>{2, 2}.data(), 1e-12, x.data());
  solver.resize(3);
  const std::vector<double> large = {1, 0, 0, 0, 0, 0, 0, 0, 2};
  solver.min_norm(large.data(), std::vector<double>{1, 5, 4}.data(), 1e-12, x.data());
  EXPECT_NEAR(x[0], 1.0, 1e-12);
  EXPECT_NEAR(x[1], 0.0, 1e-12);
  EXPECT_NEAR(x[2], 2.0, 1e-12);
}

}  // namespace
