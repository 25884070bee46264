// Contract v3 in the one driver (rh/update.hpp) on the CPU engine: the lambda schedule, the
// smoothed curvature of the information update, and the inference sums and matrices, each
// checked against a naive float64 evaluation written from method.md, independently of the engine.

#include <gtest/gtest.h>

#include <cmath>
#include <rh/cpu/engine.hpp>
#include <rh/error.hpp>
#include <span>
#include <vector>

#include "problems.hpp"

namespace {

using rh::test::Batch;
using rh::test::contaminated_batch;
using rh::test::update;

double q_of(std::size_t features) {
  return std::log(static_cast<double>(std::max<std::size_t>(features, 2)));
}

// A batch's contribution at coefficients beta, in float64 from the batch's values: the sums and
// the three Grams J_b (curvature c), G_b (w) and K_b (w psi^2). bandwidth > 0: c_h, else the
// indicator.
struct Naive {
  rh::InferenceSums sums;
  std::vector<double> information, gram, score_gram;
};

template <class T>
Naive naive(const Batch<T>& batch, std::span<const T> beta, double tau, double bandwidth) {
  const std::size_t p = batch.features;
  const std::size_t d = beta.size();
  const bool intercept = d == p + 1;
  Naive out;
  out.information.assign(d * d, 0.0);
  out.gram.assign(d * d, 0.0);
  out.score_gram.assign(d * d, 0.0);
  std::vector<double> row(d);
  for (std::size_t i = 0; i < batch.rows; ++i) {
    double fitted = intercept ? static_cast<double>(beta[p]) : 0.0;
    for (std::size_t j = 0; j < p; ++j) {
      row[j] = static_cast<double>(batch.X[i * p + j]);
      fitted += row[j] * static_cast<double>(beta[j]);
    }
    if (intercept) row[p] = 1.0;
    const double r = static_cast<double>(batch.y[i]) - fitted;
    const double w = static_cast<double>(batch.w[i]);
    const double psi = std::clamp(r, -tau, tau);
    const double c = bandwidth > 0.0
                         ? std::clamp(0.5 + (tau - std::fabs(r)) / (2.0 * bandwidth), 0.0, 1.0)
                         : (std::fabs(r) <= tau ? 1.0 : 0.0);
    out.sums.score_sq_sum += w * psi * psi;
    out.sums.curvature_sum += w * c;
    out.sums.curvature_sq_sum += w * c * c;
    out.sums.inference_weight += w;
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t k = 0; k < d; ++k) {
        const double x = row[j] * row[k];
        out.information[j * d + k] += w * c * x;
        out.gram[j * d + k] += w * x;
        out.score_gram[j * d + k] += w * psi * psi * x;
      }
    }
  }
  out.sums.inference_batches = 1;
  return out;
}

template <class A, class B>
void expect_close(const A& got, const B& want, double rtol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1.0;
  for (const auto v : want) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(got[i]), static_cast<double>(want[i]), rtol * scale)
        << what << " entry " << i;
  }
}

void expect_sums_close(const rh::InferenceSums& got, const rh::InferenceSums& want, double rtol) {
  EXPECT_NEAR(got.score_sq_sum, want.score_sq_sum, rtol * want.score_sq_sum);
  EXPECT_NEAR(got.curvature_sum, want.curvature_sum, rtol * want.curvature_sum);
  EXPECT_NEAR(got.curvature_sq_sum, want.curvature_sq_sum, rtol * want.curvature_sq_sum);
  EXPECT_NEAR(got.inference_weight, want.inference_weight, rtol * want.inference_weight);
  EXPECT_EQ(got.inference_batches, want.inference_batches);
}

Batch<double> weighted_batch(std::uint64_t seed, std::size_t rows, std::size_t features) {
  auto batch = contaminated_batch<double>(seed, rows, features);
  for (std::size_t i = 0; i < rows; ++i) batch.w[i] = static_cast<double>(i % 4) * 0.5;
  return batch;
}

TEST(ContractV3, InferenceSumsAndMatricesMatchANaiveEvaluationAtTheFinalCoefficients) {
  // Large enough for several row blocks and chunks: the information pass runs in parallel.
  const auto batch = weighted_batch(3, 20000, 6);
  rh::cpu::Engine engine;
  rh::Config config;
  config.inference_matrices = true;
  const auto [state, diag] = update(engine, rh::State<double>::empty(7), batch, config);
  const Naive want = naive(batch, std::span<const double>(state.coef), diag.bandwidth, 0.0);
  expect_sums_close(state.inference, want.sums, 1e-11);
  expect_close(state.information, want.information, 1e-11, "information");
  expect_close(state.gram, want.gram, 1e-11, "gram");
  expect_close(state.score_gram, want.score_gram, 1e-11, "score_gram");
}

TEST(ContractV3, SumsAndMatricesAccumulateOverBatches) {
  const auto first = weighted_batch(5, 3000, 4);
  const auto second = weighted_batch(6, 2000, 4);
  rh::cpu::Engine engine;
  rh::Config config;
  config.inference_matrices = true;
  const auto [one, diag_one] = update(engine, rh::State<double>::empty(5), first, config);
  const auto [two, diag_two] = update(engine, one, second, config);
  const Naive a = naive(first, std::span<const double>(one.coef), diag_one.bandwidth, 0.0);
  const Naive b = naive(second, std::span<const double>(two.coef), diag_two.bandwidth, 0.0);
  rh::InferenceSums want = a.sums;
  want.score_sq_sum += b.sums.score_sq_sum;
  want.curvature_sum += b.sums.curvature_sum;
  want.curvature_sq_sum += b.sums.curvature_sq_sum;
  want.inference_weight += b.sums.inference_weight;
  want.inference_batches = 2;
  expect_sums_close(two.inference, want, 1e-11);
  std::vector<double> gram(a.gram.size());
  for (std::size_t k = 0; k < gram.size(); ++k) gram[k] = a.gram[k] + b.gram[k];
  expect_close(two.gram, gram, 1e-11, "gram");
}

TEST(ContractV3, MatricesAreKeptOnlyWhileEveryCoveredBatchAskedForThem) {
  const auto first = weighted_batch(7, 800, 3);
  const auto second = weighted_batch(8, 800, 3);
  rh::cpu::Engine engine;
  rh::Config with;
  with.inference_matrices = true;
  const rh::Config without;
  // Asked for, then not: dropped.
  const auto kept = update(engine, rh::State<double>::empty(4), first, with).first;
  ASSERT_EQ(kept.gram.size(), 16u);
  EXPECT_TRUE(update(engine, kept, second, without).first.gram.empty());
  // Not asked for on the first batch: the sums cover a batch without them, so none later.
  const auto plain = update(engine, rh::State<double>::empty(4), first, without).first;
  EXPECT_TRUE(plain.gram.empty() && plain.score_gram.empty());
  EXPECT_EQ(plain.inference.inference_batches, 1);
  EXPECT_TRUE(update(engine, plain, second, with).first.gram.empty());
  // A state whose sums cover no batch (a format-2 checkpoint): the matrices start at zero.
  rh::State<double> loaded = plain;
  loaded.inference = {};
  const auto [resumed, diag] = update(engine, loaded, second, with);
  EXPECT_EQ(resumed.inference.inference_batches, 1);
  const Naive want = naive(second, std::span<const double>(resumed.coef), diag.bandwidth, 0.0);
  expect_close(resumed.gram, want.gram, 1e-12, "gram");
  expect_sums_close(resumed.inference, want.sums, 1e-12);
}

TEST(ContractV3, AWeightTwoRowGivesTheSumsOfADuplicatedRow) {
  const auto base = contaminated_batch<double>(9, 150, 3);
  auto [weighted, duplicated] = rh::test::weighted_twice_and_duplicated(base, 10);
  rh::cpu::Engine engine;
  rh::Config config;
  config.inference_matrices = true;
  config.curvature = rh::Curvature::smoothed;
  const auto a = update(engine, rh::State<double>::empty(4), weighted, config).first;
  const auto b = update(engine, rh::State<double>::empty(4), duplicated, config).first;
  expect_sums_close(a.inference, b.inference, 1e-9);
  expect_close(a.gram, b.gram, 1e-9, "gram");
  expect_close(a.score_gram, b.score_gram, 1e-9, "score_gram");
  expect_close(a.information, b.information, 1e-9, "information");
}

TEST(ContractV3, SmoothedCurvatureUsesTheScheduledBandwidthInTheInformationOnly) {
  const auto batch = weighted_batch(11, 5000, 5);
  rh::cpu::Engine engine;
  rh::Config indicator;
  rh::Config smoothed;
  smoothed.curvature = rh::Curvature::smoothed;
  smoothed.bandwidth_scale = 40.0;  // h well inside tau: the ramps hold rows
  const auto [plain, plain_diag] = update(engine, rh::State<double>::empty(6), batch, indicator);
  const auto [state, diag] = update(engine, rh::State<double>::empty(6), batch, smoothed);
  // The path is the indicator's: the same coefficients, scale and objective.
  EXPECT_EQ(state.coef, plain.coef);
  EXPECT_EQ(state.scale, plain.scale);
  EXPECT_EQ(diag.objective, plain_diag.objective);
  // h_b = min(bandwidth_scale * scale / (sqrt(N_b) q), tau_b), reported as the bandwidth.
  const double tau = plain_diag.bandwidth;
  const double h =
      std::min(40.0 * state.scale / (std::sqrt(state.effective_weight) * q_of(5)), tau);
  EXPECT_DOUBLE_EQ(diag.bandwidth, h);
  ASSERT_LT(h, tau);
  const Naive want = naive(batch, std::span<const double>(state.coef), tau, h);
  expect_close(state.information, want.information, 1e-11, "information");
  expect_sums_close(state.inference, want.sums, 1e-11);
  EXPECT_LT(state.inference.curvature_sq_sum, state.inference.curvature_sum);  // c in (0, 1)
}

TEST(ContractV3, SmoothedBandwidthIsInAbsoluteUnitsWithAFixedTau) {
  const auto batch = contaminated_batch<double>(12, 600, 2);
  rh::cpu::Engine engine;
  rh::Config config;
  config.tau = 2.0;
  config.curvature = rh::Curvature::smoothed;
  const auto [state, diag] = update(engine, rh::State<double>::empty(3), batch, config);
  EXPECT_DOUBLE_EQ(diag.bandwidth, std::min(1.0 / (std::sqrt(600.0) * q_of(2)), 2.0));
}

TEST(ContractV3, LambdaScheduleSetsTheBatchLambdaFromTauAndTheEffectiveWeight) {
  const auto first = contaminated_batch<double>(13, 1500, 6);
  const auto second = contaminated_batch<double>(14, 1000, 6);
  rh::cpu::Engine engine;
  rh::Config config;
  config.lambda_scale = 0.5;
  const auto [one, diag_one] = update(engine, rh::State<double>::empty(7), first, config);
  const auto [two, diag_two] = update(engine, one, second, config);
  for (const auto& [state, diag] : {std::pair{one, diag_one}, std::pair{two, diag_two}}) {
    const double want = 0.5 * diag.bandwidth * std::sqrt(q_of(6) / state.effective_weight);
    EXPECT_DOUBLE_EQ(diag.lambda, want);
    EXPECT_EQ(state.previous_lambda, diag.lambda);
    EXPECT_EQ(diag.solver, rh::Solver::lamm);
  }
  // lambda_scale = 0 schedules lambda_b = 0: an unpenalized, Newton-solved batch.
  config.lambda_scale = 0.0;
  const auto [zero, diag_zero] = update(engine, rh::State<double>::empty(7), first, config);
  EXPECT_EQ(diag_zero.lambda, 0.0);
  EXPECT_NE(diag_zero.solver, rh::Solver::lamm);
  const auto [plain, diag_plain] = update(engine, rh::State<double>::empty(7), first, {});
  EXPECT_EQ(zero.coef, plain.coef);
}

TEST(ContractV3, ScheduleParametersAreValidated) {
  const auto batch = contaminated_batch<double>(15, 50, 2);
  rh::cpu::Engine engine;
  rh::Config both;
  both.alpha = 0.1;
  both.lambda_scale = 1.0;
  EXPECT_THROW(update(engine, rh::State<double>::empty(3), batch, both), rh::InvalidArgument);
  rh::Config negative;
  negative.lambda_scale = -1.0;
  EXPECT_THROW(update(engine, rh::State<double>::empty(3), batch, negative), rh::InvalidArgument);
  rh::Config bandwidth;
  bandwidth.bandwidth_scale = 0.0;
  EXPECT_THROW(update(engine, rh::State<double>::empty(3), batch, bandwidth),
               rh::InvalidArgument);
}

TEST(ContractV3, TheInformationPassIsTheSameBitsOnAnyThreadCount) {
  const auto batch = weighted_batch(16, 40000, 8);
  rh::Config config;
  config.inference_matrices = true;
  config.curvature = rh::Curvature::smoothed;
  rh::cpu::Engine one(rh::cpu::EngineOptions{.threads = 1});
  rh::cpu::Engine four(rh::cpu::EngineOptions{.threads = 4});
  const auto a = update(one, rh::State<double>::empty(9), batch, config).first;
  const auto b = update(four, rh::State<double>::empty(9), batch, config).first;
  EXPECT_EQ(a.information, b.information);
  EXPECT_EQ(a.gram, b.gram);
  EXPECT_EQ(a.score_gram, b.score_gram);
  EXPECT_EQ(a.inference.score_sq_sum, b.inference.score_sq_sum);
  EXPECT_EQ(a.inference.curvature_sum, b.inference.curvature_sum);
}

TEST(ContractV3, Float32SumsAgreeWithFloat64) {
  const auto batch64 = weighted_batch(17, 4000, 4);
  Batch<float> batch32{batch64.rows, batch64.features, {}, {}, {}};
  batch32.X.assign(batch64.X.begin(), batch64.X.end());
  batch32.y.assign(batch64.y.begin(), batch64.y.end());
  batch32.w.assign(batch64.w.begin(), batch64.w.end());
  rh::cpu::Engine engine;
  rh::Config config;
  config.inference_matrices = true;
  const auto a = update(engine, rh::State<float>::empty(5), batch32, config).first;
  const auto b = update(engine, rh::State<double>::empty(5), batch64, config).first;
  expect_sums_close(a.inference, b.inference, 2e-3);
  expect_close(a.gram, b.gram, 2e-3, "gram");
  expect_close(a.score_gram, b.score_gram, 2e-3, "score_gram");
}

}  // namespace
