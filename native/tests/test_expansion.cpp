// Steps by expansion (cpu/expansion.cpp): a large batch's Newton steps (and a later batch's LAMM
// iterations) evaluated without a pass over X give the state and diagnostics of the same steps
// taken with their passes, to rounding; they are taken where the batch allows them, the same for
// every thread count, and not on small batches, under tracing or in the qr mode.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <rh/bricks/bricks.hpp>
#include <rh/engine_bricks.hpp>
#include <rh/update.hpp>

#include "batch_ops.hpp"
#include "problems.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

namespace {

template <class T>
struct Run {
  std::vector<rh::State<T>> states;
  std::vector<rh::Diagnostics> diagnostics;
  std::size_t expanded = 0;  // evaluations by expansion over the stream
  std::vector<std::size_t> expanded_by_batch;
};

struct Options {
  bool expansion = true;
  std::size_t threads = 2;
  bool tracing = false;
  double contamination = 0.1;
  bool weighted = false;  // sample weights 0, 0.5, 1, 1.5, 2 in turn, else 1
};

// Three batches of rows x features (a fresh stream, then two later batches) through
// renewable_update on BatchOps directly.
template <class T>
Run<T> stream(const rh::Config& config, std::size_t rows, std::size_t features,
              const Options& options = {}) {
  rh::cpu::ThreadPool pool(options.threads);
  rh::cpu::Workspace<T> workspace;
  Run<T> run;
  auto state = rh::State<T>::empty(features + (config.fit_intercept ? 1 : 0));
  for (std::uint64_t b = 0; b < 3; ++b) {
    auto batch = rh::test::contaminated_batch<T>(400 + b, rows, features, options.contamination);
    if (options.weighted) {
      for (std::size_t i = 0; i < rows; ++i) batch.w[i] = static_cast<T>(0.5 * double(i % 5));
    }
    const rh::cpu::RowBlocks blocks(rows);
    workspace.reserve(state.dim(), rows, blocks.count());
    const rh::StateView<T> previous = state.view();
    std::optional<rh::cpu::BatchOps<T>> ops;
    ops.emplace(workspace, pool, previous, batch.design(), batch.response(), batch.weights(),
                config.fit_intercept, rh::test::quiet_profiler(), /*scan_design=*/true);
    ops->set_expansion(options.expansion);
    ops->set_tracing(options.tracing);
    rh::TraceSink sink;
    auto [next, diag] = rh::renewable_update(*ops, previous, config,
                                             options.tracing ? &sink : nullptr);
    run.expanded += ops->expanded_evaluations();
    run.expanded_by_batch.push_back(ops->expanded_evaluations());
    run.states.push_back(next);
    run.diagnostics.push_back(diag);
    state = std::move(next);
  }
  return run;
}

double relative(double a, double b) { return std::fabs(a - b) / std::max(1.0, std::fabs(b)); }

template <class T>
void expect_close(const std::vector<T>& a, const std::vector<T>& b, double tolerance,
                  const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_LE(relative(static_cast<double>(a[k]), static_cast<double>(b[k])), tolerance)
        << what << "[" << k << "]: " << a[k] << " vs " << b[k];
  }
}

// The stream with and without steps by expansion: every state and diagnostic to `tolerance`
// (relative, as the contract's cross-engine check), the counters exactly.
template <class T>
void expect_expansion_matches_passes(const rh::Config& config, std::size_t rows,
                                     std::size_t features, double tolerance,
                                     bool weighted = false) {
  const auto expanded = stream<T>(config, rows, features, {.weighted = weighted});
  const auto passes = stream<T>(config, rows, features, {.expansion = false, .weighted = weighted});
  EXPECT_GT(expanded.expanded, 0U) << "no step was evaluated by expansion";
  EXPECT_EQ(passes.expanded, 0U);
  for (std::size_t b = 0; b < expanded.states.size(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    const auto& e = expanded.states[b];
    const auto& p = passes.states[b];
    expect_close(e.coef, p.coef, tolerance, "coef");
    expect_close(e.information, p.information, tolerance, "information");
    EXPECT_LE(relative(e.scale, p.scale), tolerance);
    EXPECT_LE(relative(e.inference.score_sq_sum, p.inference.score_sq_sum), tolerance);
    EXPECT_LE(relative(e.inference.curvature_sum, p.inference.curvature_sum), tolerance);
    EXPECT_LE(relative(e.inference.curvature_sq_sum, p.inference.curvature_sq_sum), tolerance);
    EXPECT_EQ(e.inference.inference_weight, p.inference.inference_weight);
    const auto& de = expanded.diagnostics[b];
    const auto& dp = passes.diagnostics[b];
    EXPECT_LE(relative(de.objective, dp.objective), tolerance);
    EXPECT_EQ(de.n_iter, dp.n_iter);
    EXPECT_EQ(de.converged, dp.converged);
  }
}

// The blocks are the same for every thread count, and so are the near rows and the results:
// 1, 2 and 3 threads give the same coefficients, information and objective, bit for bit.
void expect_the_same_bits_for_every_thread_count(const rh::Config& config) {
  const auto one = stream<double>(config, 20000, 12, {.threads = 1});
  EXPECT_GT(one.expanded, 0U);
  for (const std::size_t threads : {2U, 3U}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const auto other = stream<double>(config, 20000, 12, {.threads = threads});
    for (std::size_t b = 0; b < one.states.size(); ++b) {
      EXPECT_EQ(one.states[b].coef, other.states[b].coef);
      EXPECT_EQ(one.states[b].information, other.states[b].information);
      EXPECT_EQ(one.diagnostics[b].objective, other.diagnostics[b].objective);
    }
  }
}

// 20,000 x 12: 260,000 entries, above BatchOps::min_expansion_entries.
TEST(Expansion, MatchesTheStepsWithTheirPassesInFloat64) {
  expect_expansion_matches_passes<double>(rh::Config{}, 20000, 12, 1e-12);
}

TEST(Expansion, MatchesTheStepsWithTheirPassesInFloat32) {
  expect_expansion_matches_passes<float>(rh::Config{}, 20000, 12, 2e-5);
}

TEST(Expansion, MatchesWithSampleWeightsAndWithoutIntercept) {
  expect_expansion_matches_passes<double>(rh::Config{}, 20000, 12, 1e-12, /*weighted=*/true);
  rh::Config config;
  config.fit_intercept = false;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-12);
}

// A ridge; the smoothed curvature and inference matrices, whose information pass reads every
// residual (the expanded final point forms them with a pass: products, where the passes' steps
// subtracted projections, so the band's curvatures round apart and the information agrees to
// rounding of its sums, not of each row).
TEST(Expansion, MatchesUnderARidge) {
  rh::Config config;
  config.ridge = 0.5;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-12);
}

TEST(Expansion, MatchesUnderTheSmoothedCurvature) {
  rh::Config config;
  config.curvature = rh::Curvature::smoothed;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-10);
}

TEST(Expansion, MatchesWithInferenceMatrices) {
  rh::Config config;
  config.inference_matrices = true;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-12);
}

// LAMM (alpha > 0) on a later batch starts at the previous coefficients: where its first step
// reaches few rows, its first point's Gram is formed and its later iterations are expanded about
// it. A solve that starts far away (the first batch's, from zero) takes its passes until its
// steps have shrunk, then anchors where they are and expands the rest
// (rh::detail::AnchorSchedule).
rh::Config lamm_config(double alpha) {
  rh::Config config;
  config.alpha = alpha;
  return config;
}

TEST(Expansion, LammLaterBatchesMatchTheirPassesInFloat64) {
  expect_expansion_matches_passes<double>(lamm_config(0.01), 20000, 12, 1e-12);
  expect_expansion_matches_passes<double>(lamm_config(0.5), 20000, 12, 1e-12, /*weighted=*/true);
}

// In float32 a solve anchored mid-way brings its anchor's Gram to the final point by the rows
// whose curvature changed, which rounds apart from a fresh Gram of that point by a few 1e-5 of
// an entry that cancels (still 1e-8 of the diagonal): 2e-4, ten times inside the contract's
// float32 tolerance (2e-3).
TEST(Expansion, LammLaterBatchesMatchTheirPassesInFloat32) {
  expect_expansion_matches_passes<float>(lamm_config(0.01), 20000, 12, 2e-4);
}

TEST(Expansion, LammFirstBatchExpandsOnceItsStepsShrink) {
  for (const double alpha : {0.01, 0.5}) {
    SCOPED_TRACE("alpha " + std::to_string(alpha));
    const auto run = stream<double>(lamm_config(alpha), 20000, 12);
    EXPECT_GT(run.expanded_by_batch.front(), 0U) << "the first batch took every pass";
  }
  // With tau fixed there is no pilot: the one solve from zero is the one anchored mid-way.
  auto config = lamm_config(0.01);
  config.tau = 1.345;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-12);
  EXPECT_GT(stream<double>(config, 20000, 12).expanded_by_batch.front(), 0U);
}

// Under the MAD scale the first batch's main solve follows its pilot at another bandwidth, the
// pilot's anchored Gram still kept: LAMM anchors again once its steps shrink (the kept Gram
// brought to the point, or a new one) and expands the rest, as the passes would have gone.
struct TwoSolves {
  std::vector<double> pilot, main;
  std::size_t pilot_expanded = 0, main_expanded = 0;
};

TwoSolves pilot_then_main(bool expansion) {
  rh::cpu::ThreadPool pool(2);
  rh::cpu::Workspace<double> workspace;
  const std::size_t rows = 20000, features = 12;
  const auto batch = rh::test::contaminated_batch<double>(400, rows, features, 0.1);
  workspace.reserve(features + 1, rows, rh::cpu::RowBlocks(rows).count());
  const auto empty = rh::State<double>::empty(features + 1);
  rh::cpu::BatchOps<double> ops(workspace, pool, empty.view(), batch.design(), batch.response(),
                                batch.weights(), /*fit_intercept=*/true,
                                rh::test::quiet_profiler(), /*scan_design=*/true);
  ops.set_expansion(expansion);
  const rh::Config config = lamm_config(0.01);
  TwoSolves out;
  std::vector<double> beta(features + 1, 0.0);
  rh::lamm_solve(ops, beta, 1.0, 0.01, double(rows), config, 1e-10);
  out.pilot = beta;
  out.pilot_expanded = ops.expanded_evaluations();
  rh::lamm_solve(ops, beta, 2.0, 0.01, double(rows), config, 1e-10);
  out.main = beta;
  out.main_expanded = ops.expanded_evaluations() - out.pilot_expanded;
  return out;
}

TEST(Expansion, LammAnchorsAgainAfterASolveAtAnotherBandwidth) {
  const TwoSolves expanded = pilot_then_main(true);
  const TwoSolves passes = pilot_then_main(false);
  EXPECT_GT(expanded.pilot_expanded, 0U);
  EXPECT_GT(expanded.main_expanded, 0U) << "the second solve took every pass";
  EXPECT_EQ(passes.pilot_expanded + passes.main_expanded, 0U);
  // Solved to tol 1e-10 (tighter than the engine's default), the regrouped sums' rounding moves
  // the end points by up to ~1e-11 relative: 1e-10, four orders inside the contract's 1e-7.
  expect_close(expanded.pilot, passes.pilot, 1e-10, "pilot");
  expect_close(expanded.main, passes.main, 1e-10, "main");
}

TEST(Expansion, LammUnderTheSmoothedCurvatureAndWithInferenceMatrices) {
  auto config = lamm_config(0.01);
  config.curvature = rh::Curvature::smoothed;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-10);
  config = lamm_config(0.01);
  config.inference_matrices = true;
  expect_expansion_matches_passes<double>(config, 20000, 12, 1e-12);
}

TEST(Expansion, LammEveryThreadCountGivesTheSameBits) {
  expect_the_same_bits_for_every_thread_count(lamm_config(0.01));
}

// Heavily contaminated batches put many rows near the bandwidth: steps whose near rows are too
// many take their passes, and the results still agree.
TEST(Expansion, ManyRowsNearTheBandwidthFallBackToPasses) {
  const rh::Config config;
  const auto expanded = stream<double>(config, 20000, 12, {.contamination = 0.45});
  const auto passes = stream<double>(config, 20000, 12, {.expansion = false, .contamination = 0.45});
  for (std::size_t b = 0; b < expanded.states.size(); ++b) {
    expect_close(expanded.states[b].coef, passes.states[b].coef, 1e-12, "coef");
  }
}

TEST(Expansion, EveryThreadCountGivesTheSameBits) {
  expect_the_same_bits_for_every_thread_count(rh::Config{});
}

// Small batches (the golden corpus' shapes, where the reference's NumPy shares the engine's
// bits) and traced solves (whose records read every row's residual) take their passes.
TEST(Expansion, NotOnSmallBatchesNorUnderTracing) {
  EXPECT_EQ(stream<double>(rh::Config{}, 5000, 12).expanded, 0U);
  EXPECT_EQ(stream<double>(rh::Config{}, 20000, 12, {.tracing = true}).expanded, 0U);
}

}  // namespace
