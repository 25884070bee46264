// The linear-solver ladder on constructed matrices: each rung is taken exactly when the contract
// says so, the SVD rung returns the minimum-norm solution of the equilibrated system, and the
// diagonal equilibration (contract v2) makes badly scaled but well-conditioned systems solvable.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <rh/engine_profiling.hpp>
#include <rh/ladder.hpp>
#include <span>
#include <vector>

#include "batch_ops.hpp"
#include "blas.hpp"
#include "dense_solver.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

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
  void assign(std::span<const T> host, Vector& out) const { out.assign(host.begin(), host.end()); }
  void copy_to_host(const Vector& v, std::span<T> host) const {
    std::copy(v.begin(), v.end(), host.begin());
  }
  void hessian_diagonal(std::span<T> out) const {
    for (std::size_t i = 0; i < d; ++i) out[i] = H[i * d + i];
  }
  void equilibrate_hessian(std::span<const T> s) {
    for (std::size_t i = 0; i < d; ++i) {
      for (std::size_t j = 0; j < d; ++j) H[i * d + j] *= s[i] * s[j];
    }
  }
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
  std::size_t solve_min_norm(const Vector& b, double rcond, Vector& x) {
    return solver.min_norm(H.data(), b.data(), rcond, x.data());
  }

  std::vector<T> H;
  std::size_t d;
  rh::cpu::DenseSolver<T> solver;
};

static_assert(rh::LadderOps<MatrixLadder<double>>);
static_assert(rh::LadderOps<MatrixLadder<float>>);

// The engine's own ladder ops (rh::cpu::BatchOps) with H written straight into its workspace, as
// form_hessian would leave it. The batch, one row without an intercept, only fixes d.
template <class T>
struct EngineLadder {
  EngineLadder(const std::vector<T>& H, std::size_t d)
      : previous(rh::State<T>::empty(d)), row(d, T{1}), y(1, T{0}), w(1, T{1}), pool(1) {
    workspace.reserve(d, 1, rh::cpu::RowBlocks(1).count());
    ops.emplace(workspace, pool, previous.view(), rh::MatrixView<T>{row.data(), 1, d}, y, w,
                /*fit_intercept=*/false, rh::off_engine_profiler());
    workspace.hessian = H;
  }
  EngineLadder(const EngineLadder&) = delete;  // ops points into the members
  EngineLadder& operator=(const EngineLadder&) = delete;

  rh::State<T> previous;
  std::vector<T> row, y, w;
  rh::cpu::ThreadPool pool;
  rh::cpu::Workspace<T> workspace;
  std::optional<rh::cpu::BatchOps<T>> ops;
};

template <class T>
struct Solved {
  rh::LadderResult ladder;
  std::vector<T> x;
};

template <class O>
Solved<typename O::Scalar> solve_on(O& ops, std::vector<typename O::Scalar> b) {
  std::vector<typename O::Scalar> x(b.size());
  const rh::LadderResult ladder = rh::solve_ladder(ops, b, x);
  return {ladder, x};
}

template <class T>
Solved<T> solve(std::vector<T> H, std::vector<T> b) {
  MatrixLadder<T> ops(std::move(H), b.size());
  return solve_on(ops, std::move(b));
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

// Ĥ as the contract defines it, computed here independently of the ladder.
std::vector<double> equilibrated(const std::vector<double>& H, std::size_t d) {
  std::vector<double> s(d);
  for (std::size_t i = 0; i < d; ++i) {
    const double h = H[i * d + i];
    s[i] = std::isfinite(h) && h > 0.0 ? 1.0 / std::sqrt(h) : 1.0;
  }
  std::vector<double> out(d * d);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) out[i * d + j] = H[i * d + j] * (s[i] * s[j]);
  }
  return out;
}

double one_norm(const std::vector<double>& H, std::size_t d) {
  double norm = 0.0;
  for (std::size_t j = 0; j < d; ++j) {
    double column = 0.0;
    for (std::size_t i = 0; i < d; ++i) column += std::fabs(H[i * d + j]);
    norm = std::max(norm, column);
  }
  return norm;
}

// D A D with A the Kac-Murdock-Szegő matrix 0.5^|i-j| (cond(A) < 3) and D the column units of the
// contract's example: cond(D A D) ~ 1e18, far past the condition floor d * eps.
constexpr std::size_t scaled_dim = 6;
constexpr std::array<double, scaled_dim> units = {1e-3, 1, 1e2, 1e4, 1e6, 1e6};

std::vector<double> badly_scaled_spd() {
  std::vector<double> H(scaled_dim * scaled_dim);
  for (std::size_t i = 0; i < scaled_dim; ++i) {
    for (std::size_t j = 0; j < scaled_dim; ++j) {
      const double a = std::pow(0.5, std::fabs(static_cast<double>(i) - static_cast<double>(j)));
      H[i * scaled_dim + j] = a * (units[i] * units[j]);  // exactly symmetric
    }
  }
  return H;
}

TEST(Ladder, SymmetricPositiveDefiniteTakesCholesky) {
  const std::vector<double> H = {4, 1, 0, 1, 3, 1, 0, 1, 2};
  const std::vector<double> b = {1, 2, 3};
  const auto [ladder, x] = solve(H, b);
  EXPECT_EQ(ladder.rung, rh::Solver::cholesky);
  EXPECT_EQ(ladder.rank, 3u);
  const auto Hx = multiply(H, x);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(Hx[i], b[i], 1e-12);
}

TEST(Ladder, SymmetricIndefiniteFallsToLu) {
  const std::vector<double> H = {1, 2, 2, -3};
  const std::vector<double> b = {1, -1};
  const auto [ladder, x] = solve(H, b);
  EXPECT_EQ(ladder.rung, rh::Solver::lu);
  const auto Hx = multiply(H, x);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_NEAR(Hx[i], b[i], 1e-12);
}

TEST(Ladder, AsymmetricSkipsCholesky) {
  // Positive definite in its symmetric part, but not symmetric: Cholesky would use one
  // triangle and silently solve another system.
  const std::vector<double> H = {3, 1, 1e-9, 2};
  const std::vector<double> b = {1, 1};
  const auto [ladder, x] = solve(H, b);
  EXPECT_EQ(ladder.rung, rh::Solver::lu);
  const auto Hx = multiply(H, x);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_NEAR(Hx[i], b[i], 1e-12);
}

TEST(Ladder, ExactlySingularTakesTheMinimumNormSvdSolution) {
  // H = v v^T with v = (1, 1): the consistent system H x = (2, 2) has solutions x1 + x2 = 2;
  // the minimum-norm one is (1, 1) (equal diagonal entries: equilibration changes nothing).
  const std::vector<double> H = {1, 1, 1, 1};
  const auto [ladder, x] = solve(H, std::vector<double>{2, 2});
  EXPECT_EQ(ladder.rung, rh::Solver::svd);
  EXPECT_EQ(ladder.rcond, 0.0);
  EXPECT_EQ(ladder.rank, 1u);
  EXPECT_NEAR(x[0], 1.0, 1e-12);
  EXPECT_NEAR(x[1], 1.0, 1e-12);
}

TEST(Ladder, NearlySingularBelowTheConditionFloorTakesSvd) {
  // Cholesky and LU both factor this matrix, but rcond ~ 1e-17 < d * eps.
  const std::vector<double> H = {1, 1, 1, 1 + 1e-16 * 4};
  const auto [ladder, x] = solve(H, std::vector<double>{1, 1});
  EXPECT_EQ(ladder.rung, rh::Solver::svd);
  EXPECT_TRUE(std::isfinite(x[0]) && std::isfinite(x[1]));
}

TEST(Ladder, Float32UsesItsOwnEpsilon) {
  const std::vector<float> spd = {2, 1, 1, 2};
  EXPECT_EQ(solve(spd, std::vector<float>{1, 1}).ladder.rung, rh::Solver::cholesky);
  const std::vector<float> singular = {1, 2, 2, 4};
  const auto [ladder, x] = solve(singular, std::vector<float>{1, 2});
  EXPECT_EQ(ladder.rung, rh::Solver::svd);
  EXPECT_EQ(ladder.rank, 1u);
  // The minimum-norm solution of the equilibrated system: s = (1, 1/2), Ĥ = [1 1; 1 1],
  // ŝ∘b = (1, 1), z = (1/2, 1/2), x = s∘z = (0.5, 0.25), on the solution line x1 + 2 x2 = 1
  // (the minimum of ||D x|| with D = diag(sqrt(H_ii)), not of ||x||).
  EXPECT_NEAR(x[0], 0.5f, 1e-5f);
  EXPECT_NEAR(x[1], 0.25f, 1e-5f);
}

TEST(Ladder, SvdWorkspaceFollowsADimensionChange) {
  rh::cpu::DenseSolver<double> solver;
  std::vector<double> x(3);
  solver.resize(2);
  const std::vector<double> small = {1, 1, 1, 1};
  EXPECT_EQ(solver.min_norm(small.data(), std::vector<double>{2, 2}.data(), 1e-12, x.data()), 1u);
  solver.resize(3);
  const std::vector<double> large = {1, 0, 0, 0, 0, 0, 0, 0, 2};
  EXPECT_EQ(solver.min_norm(large.data(), std::vector<double>{1, 5, 4}.data(), 1e-12, x.data()),
            2u);
  EXPECT_NEAR(x[0], 1.0, 1e-12);
  EXPECT_NEAR(x[1], 0.0, 1e-12);
  EXPECT_NEAR(x[2], 2.0, 1e-12);
}

// Contract v2's reason for equilibrating: columns in very different units. Unequilibrated, this
// well-conditioned system fails the condition floor on every factorization rung and would fall to
// the SVD rung (whose cut-off drops the 1e-3 direction); equilibrated, Cholesky solves it.
template <class O>
void expect_badly_scaled_system_solved_by_cholesky(O& ops, const std::vector<double>& H) {
  // x_i = c_i / D_i: every component matters, and each is checked relative to itself.
  const std::array<double, scaled_dim> c = {1, -2, 0.5, 3, -1, 2};
  std::vector<double> truth(scaled_dim);
  for (std::size_t i = 0; i < scaled_dim; ++i) truth[i] = c[i] / units[i];
  const auto [ladder, x] = solve_on(ops, multiply(H, truth));
  EXPECT_EQ(ladder.rung, rh::Solver::cholesky);
  EXPECT_GT(ladder.rcond, 0.1);  // Ĥ is A up to its unit diagonal: cond < 3
  EXPECT_EQ(ladder.rank, scaled_dim);
  for (std::size_t i = 0; i < scaled_dim; ++i) {
    EXPECT_NEAR(x[i], truth[i], 1e-10 * std::fabs(truth[i])) << "component " << i;
  }
}

TEST(Ladder, BadlyScaledSpdMatrixTakesCholeskyAfterEquilibration) {
  const std::vector<double> H = badly_scaled_spd();
  const double rcond_min = scaled_dim * std::numeric_limits<double>::epsilon();
  // Without equilibration: Cholesky and LU of H itself fall below the floor.
  rh::cpu::DenseSolver<double> raw;
  raw.resize(scaled_dim);
  std::vector<double> ignored(scaled_dim);
  const std::vector<double> ones(scaled_dim, 1.0);
  EXPECT_LT(raw.cholesky(H.data(), ones.data(), ignored.data()).rcond, rcond_min);
  EXPECT_LT(raw.lu(H.data(), ones.data(), ignored.data()).rcond, rcond_min);

  MatrixLadder<double> matrix(H, scaled_dim);
  expect_badly_scaled_system_solved_by_cholesky(matrix, H);
  EngineLadder<double> engine(H, scaled_dim);
  expect_badly_scaled_system_solved_by_cholesky(*engine.ops, H);
}

TEST(Equilibration, ScalesByTheDiagonalAndKeepsOneWhereItIsNotFinitePositive) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {4.0, 0.25, 0.0, -0.0, -1.0, nan, inf};
  rh::equilibration_scales(std::span<double>(values));
  EXPECT_EQ(values, (std::vector<double>{0.5, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0}));
  std::vector<float> single = {16.0f, 0.0f, -std::numeric_limits<float>::infinity()};
  rh::equilibration_scales(std::span<float>(single));
  EXPECT_EQ(single, (std::vector<float>{0.25f, 1.0f, 1.0f}));
}

// The engine's equilibrate_hessian forms s_i * s_j before multiplying, so an exactly symmetric H
// gives an exactly symmetric Ĥ: (H_ij * s_i) * s_j would not, and Cholesky would be skipped.
template <class T>
void expect_equilibrated_hessian_exactly_symmetric() {
  constexpr std::size_t d = 16;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(0.5, 1.0);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<T> H(d * d);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      const auto value = static_cast<T>(mantissa(rng) * std::pow(10.0, exponent(rng)));
      H[i * d + j] = value;
      H[j * d + i] = value;
    }
  }
  H[3 * d + 3] = T{0};  // a zero diagonal entry (a zero column): scale 1
  H[5 * d + 5] = T{-1};

  EngineLadder<T> engine(H, d);
  auto& ops = *engine.ops;
  std::vector<T> scales(d);
  ops.hessian_diagonal(std::span<T>(scales));
  for (std::size_t i = 0; i < d; ++i) EXPECT_EQ(scales[i], H[i * d + i]);
  rh::equilibration_scales(std::span<T>(scales));
  EXPECT_EQ(scales[3], T{1});
  EXPECT_EQ(scales[5], T{1});
  ops.equilibrate_hessian(std::span<const T>(scales));

  const std::vector<T>& scaled = engine.workspace.hessian;
  std::size_t naive_asymmetric = 0;
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      EXPECT_EQ(scaled[i * d + j], H[i * d + j] * (scales[i] * scales[j])) << i << ", " << j;
      EXPECT_EQ(scaled[i * d + j], scaled[j * d + i]) << i << ", " << j;
      const T left = H[i * d + j] * scales[i] * scales[j];
      const T right = H[j * d + i] * scales[j] * scales[i];
      naive_asymmetric += left != right;
    }
  }
  EXPECT_TRUE(ops.hessian_symmetric());
  // The matrix is one the other order of multiplication would make asymmetric.
  EXPECT_GT(naive_asymmetric, 0u);
}

TEST(Equilibration, EngineHessianStaysExactlySymmetric) {
  expect_equilibrated_hessian_exactly_symmetric<double>();
  expect_equilibrated_hessian_exactly_symmetric<float>();
}

TEST(Ladder, RcondIsLapacksEstimateForTheEquilibratedMatrix) {
  // Cholesky: pocon of the Cholesky factor of Ĥ, with Ĥ's 1-norm.
  const std::vector<double> H = badly_scaled_spd();
  const std::vector<double> scaled = equilibrated(H, scaled_dim);
  const auto n = static_cast<rh::cpu::blas::lapack_index>(scaled_dim);
  std::vector<double> factor = scaled;  // symmetric: row- and column-major agree
  ASSERT_EQ(rh::cpu::blas::potrf(n, factor.data()), 0);
  std::vector<double> work(4 * scaled_dim);
  std::vector<rh::cpu::blas::lapack_index> iwork(scaled_dim);
  double expected = 0.0;
  ASSERT_EQ(rh::cpu::blas::pocon(n, factor.data(), one_norm(scaled, scaled_dim), &expected,
                                 work.data(), iwork.data()),
            0);
  const auto cholesky = solve(H, std::vector<double>(scaled_dim, 1.0)).ladder;
  EXPECT_EQ(cholesky.rung, rh::Solver::cholesky);
  EXPECT_DOUBLE_EQ(cholesky.rcond, expected);

  // LU: gecon of Ĥ's LU factors. H_11 < 0 keeps scale 1 there: Ĥ = [1 1; 1 -9].
  const std::vector<double> indefinite = {4, 2, 2, -9};
  const std::vector<double> scaled_indefinite = equilibrated(indefinite, 2);
  EXPECT_EQ(scaled_indefinite, (std::vector<double>{1, 1, 1, -9}));
  std::vector<double> lu = scaled_indefinite;  // symmetric: no transpose needed
  std::vector<rh::cpu::blas::lapack_index> pivots(2);
  ASSERT_EQ(rh::cpu::blas::getrf(2, lu.data(), pivots.data()), 0);
  ASSERT_EQ(rh::cpu::blas::gecon(2, lu.data(), one_norm(scaled_indefinite, 2), &expected,
                                 work.data(), iwork.data()),
            0);
  const auto [ladder, x] = solve(indefinite, std::vector<double>{1, 2});
  EXPECT_EQ(ladder.rung, rh::Solver::lu);
  EXPECT_DOUBLE_EQ(ladder.rcond, expected);
  const auto Hx = multiply(indefinite, x);
  EXPECT_NEAR(Hx[0], 1.0, 1e-12);
  EXPECT_NEAR(Hx[1], 2.0, 1e-12);
}

TEST(Ladder, DuplicatedColumnTakesSvdWithRcondZeroAndReducedRank) {
  // H = X^T X of a design whose third column repeats its second, in very different units from
  // the first: exactly singular after equilibration too.
  constexpr std::size_t rows = 20;
  constexpr std::size_t d = 4;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  std::vector<double> X(rows * d);
  for (std::size_t i = 0; i < rows; ++i) {
    X[i * d + 0] = 1e4 * normal(rng);
    X[i * d + 1] = normal(rng);
    X[i * d + 2] = X[i * d + 1];
    X[i * d + 3] = 1e-2 * normal(rng);
  }
  // One product per entry, taken for (j, k) and mirrored: exactly symmetric, and columns 1 and
  // 2 give identical rows and columns of H.
  std::vector<double> H(d * d, 0.0);
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k <= j; ++k) {
      double sum = 0.0;
      for (std::size_t i = 0; i < rows; ++i) sum += X[i * d + j] * X[i * d + k];
      H[j * d + k] = sum;
      H[k * d + j] = sum;
    }
  }
  // A consistent right-hand side: H times (1, 1, 1, 1).
  const std::vector<double> b = multiply(H, std::vector<double>(d, 1.0));
  MatrixLadder<double> matrix(H, d);
  EngineLadder<double> engine(H, d);
  for (const auto& [ladder, x] : {solve_on(matrix, b), solve_on(*engine.ops, b)}) {
    EXPECT_EQ(ladder.rung, rh::Solver::svd);
    EXPECT_EQ(ladder.rcond, 0.0);
    EXPECT_EQ(ladder.rank, d - 1);
    // The duplicated pair shares its weight evenly, the others are recovered.
    EXPECT_NEAR(x[0], 1.0, 1e-9);
    EXPECT_NEAR(x[1], 1.0, 1e-9);
    EXPECT_NEAR(x[2], 1.0, 1e-9);
    EXPECT_NEAR(x[3], 1.0, 1e-9);
  }
}

}  // namespace
