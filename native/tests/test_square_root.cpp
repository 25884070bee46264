// factorization="qr" (shared/spec/method.md, contract v4, "Square-root information") on the CPU
// engine: NIST's Filip, the hardest design of NIST's linear least-squares set, to its certified
// digits at once and streamed; the Cholesky mode's answers on well-conditioned data; the
// rank-deficient case; the state carried between the modes and through a copy.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <memory>
#include <rh/bricks/bricks.hpp>
#include <rh/config.hpp>
#include <rh/cpu/engine.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/error.hpp>
#include <rh/square_root.hpp>
#include <rh/state.hpp>
#include <rh/trace.hpp>
#include <vector>

#include "nist_filip.hpp"
#include "problems.hpp"
#include "square_root_triangle.hpp"

namespace rh::test {
namespace {

constexpr std::size_t filip_degree = 10;

// Filip's rows [lo, hi) as a batch: columns x, x^2, ..., x^10 (the intercept is the engine's).
Batch<double> filip_rows(std::size_t lo, std::size_t hi) {
  Batch<double> batch{hi - lo, filip_degree, {}, {}, std::vector<double>(hi - lo, 1.0)};
  for (std::size_t i = lo; i < hi; ++i) {
    for (std::size_t j = 1; j <= filip_degree; ++j) {
      batch.X.push_back(std::pow(filip::x[i], static_cast<double>(j)));
    }
    batch.y.push_back(filip::y[i]);
  }
  return batch;
}

// NIST's score: the log relative error of the worst coefficient (coef holds b1 .. b10, then b0).
double filip_digits(const std::vector<double>& coef) {
  double worst = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k <= filip_degree; ++k) {
    const double estimate = k == 0 ? coef[filip_degree] : coef[k - 1];
    const double relative = std::abs(estimate - filip::certified[k]) / std::abs(filip::certified[k]);
    worst = std::min(worst, relative == 0.0 ? 16.0 : -std::log10(relative));
  }
  return worst;
}

// The least-squares limit: every residual inside tau.
Config least_squares(Factorization factorization) {
  Config config;
  config.tau = 1e6;
  config.factorization = factorization;
  return config;
}

// Filip streamed in batches of `rows` rows (the last one shorter).
std::pair<State<double>, Diagnostics> filip_stream(std::size_t rows, const Config& config) {
  cpu::Engine engine({.threads = 1});
  auto state = State<double>::empty(filip_degree + 1);
  Diagnostics diagnostics;
  for (std::size_t lo = 0; lo < filip::x.size(); lo += rows) {
    const auto batch = filip_rows(lo, std::min(filip::x.size(), lo + rows));
    std::tie(state, diagnostics) = update(engine, state, batch, config);
  }
  return {state, diagnostics};
}

// About seven certified digits. Which of them survive rounding moves with the row order, the
// batch size and the machine's BLAS kernels: over 12 row orders 6.9-8.4 at once and 6.5-8.5 in
// batches of 20 and 7 (AMD EPYC; the NumPy reference alike), and in the natural order 7.27 at
// once and 6.99 in batches of 7 there, 7.3 on an AVX-512 Xeon, 6.96 at once on an H200
// (docs/numerics.md). The Cholesky mode keeps none.
TEST(SquareRoot, FilipToAboutSevenCertifiedDigitsAtOnceAndStreamed) {
  for (const std::size_t rows : {82, 20, 7}) {
    const auto [state, diagnostics] = filip_stream(rows, least_squares(Factorization::qr));
    const double digits = filip_digits(state.coef);
    std::printf("Filip in batches of %zu rows: %.2f correct digits\n", rows, digits);
    EXPECT_GE(digits, rows == 82 ? 6.8 : 6.5) << "batches of " << rows << " rows";
    EXPECT_EQ(diagnostics.solver, Solver::qr) << rows;
    EXPECT_TRUE(diagnostics.converged) << rows;
    // The Cholesky mode's normal equations lose Filip's digits: the reason for the mode.
    const auto cholesky = filip_stream(rows, least_squares(Factorization::cholesky));
    EXPECT_GT(digits, filip_digits(cholesky.first.coef) + 3.0) << rows;
  }
}

TEST(SquareRoot, StateIsAnUpperTriangularFactorWithNonNegativeDiagonal) {
  const auto [state, diagnostics] = filip_stream(20, least_squares(Factorization::qr));
  const std::size_t d = state.dim();
  ASSERT_EQ(state.information_factor.size(), d * d);
  ASSERT_EQ(state.information_vector.size(), d);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < i; ++j) EXPECT_EQ(state.information_factor[i * d + j], 0.0);
    EXPECT_GE(state.information_factor[i * d + i], 0.0);
  }
  // information = R~^T R~, exactly symmetric.
  std::vector<double> gram(d * d);
  factor_gram(std::span<const double>(state.information_factor), d, std::span<double>(gram));
  EXPECT_EQ(state.information, gram);
}

// Well-conditioned, contaminated data in three batches: both modes solve the same problems,
// unpenalized and L1 (whose history does not pull at its solution in either mode).
TEST(SquareRoot, AgreesWithTheCholeskyModeOnWellConditionedData) {
  for (const double alpha : {0.0, 0.02}) {
    for (const bool fit_intercept : {true, false}) {
      cpu::Engine engine({.threads = 2});
      Config cholesky;
      cholesky.alpha = alpha;
      cholesky.fit_intercept = fit_intercept;
      Config qr = cholesky;
      qr.factorization = Factorization::qr;
      const std::size_t d = 6 + (fit_intercept ? 1 : 0);
      auto a = State<double>::empty(d);
      auto b = State<double>::empty(d);
      for (std::uint64_t seed : {11u, 12u, 13u}) {
        const auto batch = contaminated_batch<double>(seed, 400, 6);
        Diagnostics da, db;
        std::tie(a, da) = update(engine, a, batch, cholesky);
        std::tie(b, db) = update(engine, b, batch, qr);
        const auto close = [](double x, double y) {
          return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
        };
        for (std::size_t j = 0; j < d; ++j) {
          EXPECT_PRED2(close, b.coef[j], a.coef[j]) << seed << " alpha " << alpha << " intercept " << fit_intercept;
        }
        for (std::size_t k = 0; k < d * d; ++k) {
          EXPECT_PRED2(close, b.information[k], a.information[k]) << seed;
        }
        EXPECT_PRED2(close, db.objective, da.objective) << seed;
        EXPECT_PRED2(close, b.scale, a.scale) << seed;
        EXPECT_EQ(db.solver, alpha > 0.0 ? Solver::lamm : Solver::qr);
        if (alpha == 0.0 && seed > 11) {
          EXPECT_PRED2(close, db.drift_statistic, da.drift_statistic) << seed;
        }
      }
    }
  }
}

// A Huber stream with outliers: the Newton steps in Cholesky form find the pattern, one QR step
// finishes the main solve (the first batch's pilot solve stays in Cholesky form), and the
// information update reuses that step's factorization: no pass over the rows after the solve.
TEST(SquareRoot, ASolveFactorizesOnceAndTheUpdateReusesItsFactorization) {
  cpu::Engine engine({.threads = 2});
  rh::bricks::Options options;
  options.sync_mode = rh::bricks::SyncMode::immediate;
  options.trace_capacity = 1 << 16;
  auto profiler = std::make_shared<rh::bricks::Profiler>(engine_brick_table(), options);
  engine.set_profiler(profiler);
  Config qr;
  qr.factorization = Factorization::qr;
  auto state = State<double>::empty(9);
  for (std::uint64_t seed : {21u, 22u, 23u}) {
    const auto batch = contaminated_batch<double>(seed, 6000, 8);
    TraceSink trace;
    Diagnostics diagnostics;
    std::tie(state, diagnostics) = engine.update(state, batch.design(), batch.response(),
                                                 batch.weights(), qr, &trace);
    EXPECT_TRUE(diagnostics.converged) << seed;
    EXPECT_EQ(diagnostics.solver, Solver::qr) << seed;
    std::size_t qr_steps = 0;
    for (const IterationTrace& record : trace.records) {
      // A step that found the pattern is in Cholesky form; the repeat after a QR step is 0.
      if (record.solver == Solver::qr && record.step_norm > 0.0) {
        ++qr_steps;
        EXPECT_EQ(record.phase, SolvePhase::main) << seed;
      }
    }
    EXPECT_EQ(qr_steps, 1u) << seed;
    EXPECT_EQ(trace.records.front().solver, Solver::cholesky) << seed;
  }
  // The update's evaluation is each batch's last iteration: it forms no Gram and no QR.
  std::vector<std::uint32_t> last(3, 0);
  for (const rh::bricks::Event& e : profiler->events()) {
    if (e.batch < last.size()) last[e.batch] = std::max(last[e.batch], e.iteration);
  }
  for (const rh::bricks::Event& e : profiler->events()) {
    if (e.batch < last.size() && e.iteration == last[e.batch]) {
      EXPECT_NE(e.brick, static_cast<rh::bricks::BrickId>(EngineBrick::gram)) << e.batch;
    }
  }
}

// The row blocks are fixed by the row count and their triangles stacked in block order, so the
// qr mode's results are the same bits on every thread count.
TEST(SquareRoot, ResultsDoNotDependOnTheThreadCount) {
  Config qr;
  qr.factorization = Factorization::qr;
  std::vector<State<double>> finals;
  for (const std::size_t threads : {1u, 2u, 3u}) {
    cpu::Engine engine({.threads = threads});
    auto state = State<double>::empty(9);
    for (std::uint64_t seed : {31u, 32u}) {
      const auto batch = contaminated_batch<double>(seed, 20000, 8);  // blocks on the pool
      state = update(engine, state, batch, qr).first;
    }
    finals.push_back(state);
  }
  for (std::size_t k = 1; k < finals.size(); ++k) {
    EXPECT_EQ(finals[k].coef, finals[0].coef);
    EXPECT_EQ(finals[k].information_factor, finals[0].information_factor);
    EXPECT_EQ(finals[k].information_vector, finals[0].information_vector);
  }
}

TEST(SquareRoot, RankDeficientDesignTakesTheSvdRung) {
  auto batch = contaminated_batch<double>(21, 200, 3);
  for (std::size_t i = 0; i < batch.rows; ++i) batch.X[i * 3 + 2] = batch.X[i * 3 + 1];
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  Config cholesky;
  const auto [a, da] = update(engine, State<double>::empty(4), batch, cholesky);
  const auto [b, db] = update(engine, State<double>::empty(4), batch, qr);
  EXPECT_EQ(db.solver, Solver::svd);
  EXPECT_EQ(da.solver, Solver::svd);
  // The minimizer is not unique: the duplicated columns' sum and the fitted values are.
  EXPECT_NEAR(b.coef[1] + b.coef[2], a.coef[1] + a.coef[2], 1e-7);
  EXPECT_NEAR(b.coef[0], a.coef[0], 1e-7);
  EXPECT_NEAR(b.coef[3], a.coef[3], 1e-7);
  // And a second batch continues from the rank-deficient factor.
  const auto next = contaminated_batch<double>(22, 200, 3);
  auto dup = next;
  for (std::size_t i = 0; i < dup.rows; ++i) dup.X[i * 3 + 2] = dup.X[i * 3 + 1];
  const auto [a2, da2] = update(engine, a, dup, cholesky);
  const auto [b2, db2] = update(engine, b, dup, qr);
  EXPECT_EQ(db2.solver, Solver::svd);
  EXPECT_NEAR(b2.coef[1] + b2.coef[2], a2.coef[1] + a2.coef[2], 1e-7);
  EXPECT_NEAR(b2.coef[3], a2.coef[3], 1e-7);
}

// A QR without column pivoting need not show a rank deficiency on R_H's diagonal: this
// triangle's diagonal is all ones, but -1000 above it gives cond(R) ~ 1e15 (d = 5). The rank test
// reads trcon's estimate too, as the reference does, and takes the minimum-norm step.
TEST(SquareRoot, NumericallySingularTriangleTakesTheSvdRungWhateverItsDiagonal) {
  constexpr std::size_t d = 5;
  constexpr std::size_t n = d + 2;  // [R_H | q | q_y], column-major
  const auto triangle = [&](double above) {
    std::vector<double> stacked(n * n, 0.0);
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i < j; ++i) stacked[j * n + i] = above;
      stacked[j * n + j] = 1.0;
      stacked[d * n + j] = 1.0;
    }
    return stacked;
  };
  std::vector<double> out(d);
  auto singular = triangle(-1000.0);
  const auto step = cpu::triangle_step<double>(singular.data(), n, d, std::vector<double>(d, 1.0),
                                               std::vector<double>(d, 0.0), 0.0, out.data());
  EXPECT_EQ(step.rung, Solver::svd);
  EXPECT_LT(step.rank, d);
  auto regular = triangle(0.5);
  const auto kept = cpu::triangle_step<double>(regular.data(), n, d, std::vector<double>(d, 1.0),
                                               std::vector<double>(d, 0.0), 0.0, out.data());
  EXPECT_EQ(kept.rung, Solver::qr);
  EXPECT_EQ(kept.rank, d);
  EXPECT_GT(kept.rcond, 1e-6);
}

TEST(SquareRoot, StateCopiedContinuesBitForBit) {
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  const auto first = contaminated_batch<double>(31, 300, 4);
  const auto second = contaminated_batch<double>(32, 300, 4);
  const auto [state, d1] = update(engine, State<double>::empty(5), first, qr);
  // As a checkpoint carries it: R~, z~ and the scalars; the information left out (derived).
  State<double> copy = state;
  copy.information.clear();
  const auto [a, da] = update(engine, state, second, qr);
  const auto [b, db] = update(engine, copy, second, qr);
  EXPECT_EQ(a.coef, b.coef);
  EXPECT_EQ(a.information_factor, b.information_factor);
  EXPECT_EQ(a.information_vector, b.information_vector);
  EXPECT_EQ(da.objective, db.objective);
}

TEST(SquareRoot, StatesContinueInTheOtherMode) {
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  const Config cholesky;
  const auto first = contaminated_batch<double>(41, 300, 4);
  const auto second = contaminated_batch<double>(42, 300, 4);
  const auto [c1, dc1] = update(engine, State<double>::empty(5), first, cholesky);
  const auto [q1, dq1] = update(engine, State<double>::empty(5), first, qr);
  // A Cholesky state in qr mode (R~ = chol(J~), z~ = R~ beta~) and a qr state in Cholesky mode
  // (J~ = R~^T R~) both give the second batch's estimate of either mode.
  const auto [cq, dcq] = update(engine, c1, second, qr);
  const auto [qc, dqc] = update(engine, q1, second, cholesky);
  const auto [cc, dcc] = update(engine, c1, second, cholesky);
  EXPECT_TRUE(qc.information_factor.empty());
  EXPECT_FALSE(cq.information_factor.empty());
  for (std::size_t j = 0; j < 5; ++j) {
    EXPECT_NEAR(cq.coef[j], cc.coef[j], 1e-9 * std::max(1.0, std::abs(cc.coef[j])));
    EXPECT_NEAR(qc.coef[j], cc.coef[j], 1e-9 * std::max(1.0, std::abs(cc.coef[j])));
  }
}

TEST(SquareRoot, NonPositiveDefiniteCholeskyStateIsRefusedInQrMode) {
  cpu::Engine engine({.threads = 1});
  const auto batch = contaminated_batch<double>(51, 100, 2);
  auto state = State<double>::empty(3);
  state.batch_count = 1;
  state.scale = 1.0;
  state.effective_weight = 10.0;
  state.information = {1, 0, 0, 0, 1, 0, 0, 0, -1};
  Config qr;
  qr.factorization = Factorization::qr;
  EXPECT_THROW(update(engine, state, batch, qr), InvalidArgument);
}

TEST(SquareRoot, MalformedFactorIsRefusedByName) {
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  const auto batch = contaminated_batch<double>(61, 100, 2);
  const auto [state, diagnostics] = update(engine, State<double>::empty(3), batch, qr);
  const auto refused = [&](State<double> bad, const std::string& what) {
    try {
      update(engine, bad, batch, qr);
      ADD_FAILURE() << "accepted a state with " << what;
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find(what), std::string::npos) << error.what();
    }
  };
  auto lower = state;
  lower.information_factor[3] = 0.5;  // (1, 0)
  refused(lower, "not upper triangular");
  auto negative = state;
  negative.information_factor[4] = -1.0;
  refused(negative, "negative diagonal");
  auto infinite = state;
  infinite.information_vector[1] = std::numeric_limits<double>::infinity();
  refused(infinite, "information_vector");
  auto short_vector = state;
  short_vector.information_vector.pop_back();
  refused(short_vector, "information_vector");
}

TEST(SquareRoot, FloatBatchesRunTheModeInFloat) {
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  const Config cholesky;
  const auto batch = contaminated_batch<float>(71, 500, 3);
  const auto [a, da] = update(engine, State<float>::empty(4), batch, cholesky);
  const auto [b, db] = update(engine, State<float>::empty(4), batch, qr);
  EXPECT_EQ(db.solver, Solver::qr);
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_NEAR(b.coef[j], a.coef[j], 2e-3 * std::max(1.0f, std::abs(a.coef[j])));
  }
}

TEST(SquareRoot, OverflowingRowsAreAnErrorAndTheStateIsUntouched) {
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  qr.tau = 1.0;
  auto batch = contaminated_batch<float>(91, 1000, 3);
  for (float& value : batch.X) value *= 2e37f;  // finite, but the columns' norms overflow float32
  const auto state = State<float>::empty(4);
  try {
    update(engine, state, batch, qr);
    ADD_FAILURE() << "an overflowing batch gave a state";
  } catch (const NumericalError& error) {
    EXPECT_NE(std::string(error.what()).find("square-root information are not finite in float32"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(state.batch_count, 0);
}

TEST(SquareRoot, ForgettingScalesTheFactorBySqrtGamma) {
  cpu::Engine engine({.threads = 1});
  Config qr;
  qr.factorization = Factorization::qr;
  qr.half_life = 500.0;
  Config cholesky = qr;
  cholesky.factorization = Factorization::cholesky;
  auto a = State<double>::empty(4);
  auto b = State<double>::empty(4);
  for (std::uint64_t seed : {81u, 82u, 83u}) {
    const auto batch = contaminated_batch<double>(seed, 250, 3);
    std::tie(a, std::ignore) = update(engine, a, batch, cholesky);
    std::tie(b, std::ignore) = update(engine, b, batch, qr);
  }
  EXPECT_NEAR(b.effective_weight, a.effective_weight, 1e-9 * a.effective_weight);
  for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(b.coef[j], a.coef[j], 1e-9);
  for (std::size_t k = 0; k < 16; ++k) {
    EXPECT_NEAR(b.information[k], a.information[k], 1e-9 * std::max(1.0, std::abs(a.information[k])));
  }
}

}  // namespace
}  // namespace rh::test
