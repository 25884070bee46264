// Every validation error: its type, and a message in the caller's terms.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <rh/cpu/engine.hpp>
#include <rh/error.hpp>
#include <rh/validation.hpp>
#include <string>

#include "problems.hpp"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class Validation : public ::testing::Test {
 protected:
  // Runs one update with the fixture's inputs and returns the InvalidArgument message.
  std::string error_message() {
    try {
      engine.update(state, batch.design(), std::span<const double>(y), std::span<const double>(w),
                    config);
    } catch (const rh::InvalidArgument& e) {
      return e.what();
    }
    ADD_FAILURE() << "no rh::InvalidArgument was thrown";
    return {};
  }

  rh::cpu::Engine engine{{.threads = 1}};
  rh::test::Batch<double> batch = rh::test::contaminated_batch<double>(1, 20, 3);
  std::vector<double> y = batch.y;
  std::vector<double> w = batch.w;
  rh::State<double> state = rh::State<double>::empty(4);
  rh::Config config;
};

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

TEST_F(Validation, Parameters) {
  const std::pair<std::function<void(rh::Config&)>, const char*> cases[] = {
      {[](rh::Config& c) { c.alpha = -1; }, "alpha must be a finite number >= 0, got -1"},
      {[](rh::Config& c) { c.alpha = nan; }, "alpha must be a finite number >= 0"},
      {[](rh::Config& c) { c.epsilon = 0; }, "epsilon must be a finite number > 0, got 0"},
      {[](rh::Config& c) { c.tau = -2; }, "tau must be a finite number > 0, got -2"},
      {[](rh::Config& c) { c.ridge = -0.5; }, "ridge must be a finite number >= 0, got -0.5"},
      {[](rh::Config& c) { c.max_iter = 0; }, "max_iter must be >= 1, got 0"},
      {[](rh::Config& c) { c.tol = 0; }, "tol must be a finite number > 0, got 0"},
      {[](rh::Config& c) { c.tol = inf; }, "tol must be a finite number > 0"},
  };
  for (const auto& [mutate, expected] : cases) {
    config = rh::Config{};
    mutate(config);
    EXPECT_THAT(error_message(), HasSubstr(expected));
  }
}

TEST_F(Validation, ParametersAreCheckedBeforeData) {
  config.alpha = -1;
  batch.X[0] = nan;
  EXPECT_THAT(error_message(), HasSubstr("alpha"));
}

TEST_F(Validation, Design) {
  batch.X[2 * 3 + 1] = inf;
  EXPECT_THAT(error_message(), HasSubstr("X contains a non-finite value at row 2, column 1"));
}

TEST_F(Validation, DesignIsReportedBeforeTheErrorsThatFollowIt) {
  // The engine scans X's values in its first pass over X; the order of the errors stays the
  // documented one.
  batch.X[5 * 3 + 2] = nan;
  y.pop_back();
  EXPECT_THAT(error_message(), HasSubstr("X contains a non-finite value at row 5, column 2"));
  y = batch.y;
  state = rh::State<double>::empty(9);
  EXPECT_THAT(error_message(), HasSubstr("X contains a non-finite value at row 5, column 2"));
}

// The scan made in the engine's first pass over X, on every path that can come first: the first
// batch (its pilot scale), a later batch (the residual scale), a fixed tau (the first evaluation).
// Many row blocks on two threads (enough entries for the pool); the first non-finite value in
// row order is the one named, and the state given is left as it was.
TEST(DeferredDesignScan, NamesTheFirstNonFiniteValueOnEveryFirstPass) {
  rh::cpu::Engine engine({.threads = 2});
  const auto first = rh::test::contaminated_batch<double>(61, 24000, 5);
  rh::Config fixed_tau;
  fixed_tau.tau = 1.0;
  const auto [after_first, diag] = engine.update(rh::State<double>::empty(6), first.design(),
                                                 first.response(), first.weights(), rh::Config{});
  const std::pair<const rh::State<double>*, rh::Config> paths[] = {
      {nullptr, rh::Config{}}, {&after_first, rh::Config{}}, {&after_first, fixed_tau}};
  for (const auto& [given, config] : paths) {
    auto bad = rh::test::contaminated_batch<double>(62, 24000, 5);
    bad.X[17000 * 5 + 4] = inf;  // a late block
    bad.X[9000 * 5 + 1] = nan;   // an earlier one: this is the first
    const rh::State<double> state = given ? *given : rh::State<double>::empty(6);
    const rh::State<double> snapshot = state;
    try {
      engine.update(state, bad.design(), bad.response(), bad.weights(), config);
      ADD_FAILURE() << "no rh::InvalidArgument was thrown";
    } catch (const rh::InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("X contains a non-finite value at row 9000, column 1"));
    }
    EXPECT_EQ(state.coef, snapshot.coef);
    EXPECT_EQ(state.information, snapshot.information);
    // The engine is as good as new: the clean batch gives what a fresh engine gives.
    const auto clean = rh::test::contaminated_batch<double>(62, 24000, 5);
    rh::cpu::Engine fresh({.threads = 2});
    const auto [a, da] = engine.update(state, clean.design(), clean.response(), clean.weights(), config);
    const auto [b, db] = fresh.update(state, clean.design(), clean.response(), clean.weights(), config);
    EXPECT_EQ(a.coef, b.coef);
    EXPECT_EQ(a.information, b.information);
  }
}

// A later batch's first pass finds X's non-finite values by the residuals of its product: an
// infinity at a coefficient that is exactly zero makes the product NaN, and is found as well; a
// finite X whose product overflows is scanned and passes (what fails then is the update's
// arithmetic, not X's validation).
TEST(DeferredDesignScan, FindsAnInfinityAtAZeroCoefficientAndPassesAnOverflow) {
  rh::cpu::Engine engine({.threads = 2});
  const auto first = rh::test::contaminated_batch<double>(63, 24000, 5);
  auto [state, diag] = engine.update(rh::State<double>::empty(6), first.design(),
                                     first.response(), first.weights(), rh::Config{});
  state.coef[3] = 0.0;
  auto bad = rh::test::contaminated_batch<double>(64, 24000, 5);
  bad.X[20000 * 5 + 3] = inf;
  try {
    engine.update(state, bad.design(), bad.response(), bad.weights(), rh::Config{});
    ADD_FAILURE() << "no rh::InvalidArgument was thrown";
  } catch (const rh::InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("X contains a non-finite value at row 20000, column 3"));
  }
  auto huge = rh::test::contaminated_batch<double>(64, 24000, 5);
  for (std::size_t j = 0; j < 5; ++j) huge.X[20000 * 5 + j] = 1e300;
  try {
    engine.update(state, huge.design(), huge.response(), huge.weights(), rh::Config{});
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), Not(HasSubstr("X contains"))) << e.what();
  }
}

TEST_F(Validation, EmptyDesign) {
  batch.rows = 0;
  EXPECT_THAT(error_message(), HasSubstr("X has 0 rows"));
  batch.rows = 20;
  batch.features = 0;
  EXPECT_THAT(error_message(), HasSubstr("X has 0 features"));
}

TEST_F(Validation, Response) {
  y.pop_back();
  EXPECT_THAT(error_message(), HasSubstr("y has 19 entries, but X has 20 rows"));
  y = batch.y;
  y[4] = nan;
  EXPECT_THAT(error_message(), HasSubstr("y contains a non-finite value at index 4"));
}

TEST_F(Validation, SampleWeight) {
  w.push_back(1);
  EXPECT_THAT(error_message(), HasSubstr("sample_weight has 21 entries, but X has 20 rows"));
  w = batch.w;
  w[3] = -1;
  EXPECT_THAT(error_message(), HasSubstr("sample_weight must be >= 0, but entry 3 is -1"));
  w[3] = inf;
  EXPECT_THAT(error_message(), HasSubstr("sample_weight contains a non-finite value at index 3"));
  std::fill(w.begin(), w.end(), 0.0);
  EXPECT_THAT(error_message(), HasSubstr("sample_weight sums to 0"));
}

// On a batch large enough for the pool, two threads scan y's and the weights' values by row
// ranges (rh::scan_values in the engine); the errors and their order are the serial scan's: the
// first offending entry in row order, X's error before y's, y's before the weights'.
TEST(PooledValueScan, ErrorsAreTheSerialScansInTheirOrder) {
  const auto clean = rh::test::contaminated_batch<double>(65, 24000, 5);
  const auto message = [&](std::vector<double> X, std::vector<double> y, std::vector<double> w) {
    rh::cpu::Engine engine({.threads = 2});
    try {
      engine.update(rh::State<double>::empty(6), rh::MatrixView<double>{X.data(), 24000, 5},
                    std::span<const double>(y), std::span<const double>(w), rh::Config{});
    } catch (const rh::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto y = clean.y;
  y[23999] = inf;  // the last range
  y[13000] = nan;  // the second: this is the first
  EXPECT_THAT(message(clean.X, y, clean.w), HasSubstr("y contains a non-finite value at index 13000"));
  auto X = clean.X;
  X[20000 * 5] = nan;
  EXPECT_THAT(message(X, y, clean.w), HasSubstr("X contains a non-finite value at row 20000"));
  auto w = clean.w;
  w[23000] = -2;
  w[12500] = nan;
  EXPECT_THAT(message(clean.X, y, w), HasSubstr("y contains a non-finite value at index 13000"));
  EXPECT_THAT(message(clean.X, clean.y, w),
              HasSubstr("sample_weight contains a non-finite value at index 12500"));
  w[12500] = 1;
  EXPECT_THAT(message(clean.X, clean.y, w), HasSubstr("sample_weight must be >= 0, but entry 23000"));
  std::fill(w.begin(), w.end(), 0.0);
  EXPECT_THAT(message(clean.X, clean.y, w), HasSubstr("sample_weight sums to 0"));
  w.push_back(1);
  y.pop_back();
  EXPECT_THAT(message(clean.X, y, w), HasSubstr("y has 23999 entries, but X has 24000 rows"));
  EXPECT_THAT(message(clean.X, clean.y, w), HasSubstr("sample_weight has 24001 entries"));
}

// What the scan reports beside the errors: every weight exactly 1 (the engine then skips its
// weights' sum and the scale's check of them), and ranges merged exactly.
TEST(PooledValueScan, FindsUnitWeightsAndMergesRanges) {
  const std::vector<double> y{1.0, 2.0, 3.0, 4.0};
  std::vector<double> w(4, 1.0);
  const auto scan = [&](std::size_t lo, std::size_t n) {
    return rh::scan_values(std::span<const double>(y).subspan(lo, n),
                           std::span<const double>(w).subspan(lo, n));
  };
  rh::ValueScan all = scan(0, 4);
  EXPECT_TRUE(all.weights_units);
  EXPECT_TRUE(all.weights_positive);
  EXPECT_FALSE(all.weights_bad || all.y_non_finite);
  w[3] = std::nextafter(1.0, 2.0);
  EXPECT_FALSE(scan(0, 4).weights_units);
  rh::ValueScan merged = scan(0, 2);
  merged.merge(scan(2, 2));
  EXPECT_FALSE(merged.weights_units);
  EXPECT_TRUE(scan(0, 2).weights_units);
  w[3] = 0.0;
  EXPECT_FALSE(scan(3, 1).weights_positive);
  EXPECT_FALSE(scan(3, 1).weights_units);
  w[3] = -0.0;
  EXPECT_FALSE(scan(3, 1).weights_bad);  // -0 is >= 0
  EXPECT_FALSE(scan(3, 1).weights_positive);
  const std::vector<float> yf{1.0F, std::numeric_limits<float>::infinity()};
  const std::vector<float> wf{1.0F, 1.0F};
  const rh::ValueScan f = rh::scan_values(std::span<const float>(yf), std::span<const float>(wf));
  EXPECT_TRUE(f.y_non_finite);
  EXPECT_TRUE(f.weights_units);
}

TEST_F(Validation, FeatureCountAgainstTheState) {
  state = rh::State<double>::empty(5);
  EXPECT_THAT(error_message(), HasSubstr("X has 3 features, but the state has 4"));
  state = rh::State<double>::empty(4);
  config.fit_intercept = false;
  EXPECT_THAT(error_message(), HasSubstr("X has 3 features, but the state has 4"));
}

TEST_F(Validation, StateShapeAndValues) {
  state.information.pop_back();
  EXPECT_THAT(error_message(), HasSubstr("information matrix has 15 entries, expected 4 x 4"));
  state = rh::State<double>::empty(4);
  state.coef[0] = nan;
  EXPECT_THAT(error_message(), HasSubstr("the state's coef contains a non-finite value"));
  state = rh::State<double>::empty(4);
  state.batch_count = 2;
  EXPECT_THAT(error_message(), HasSubstr("the state's scale must be a finite number > 0"));
}

}  // namespace
