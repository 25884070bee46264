// Every validation error: its type, and a message in the caller's terms.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <rh/cpu/engine.hpp>
#include <rh/error.hpp>
#include <string>

#include "problems.hpp"

namespace {

using ::testing::HasSubstr;

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
