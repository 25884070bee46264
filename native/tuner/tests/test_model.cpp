#include "rh/tuner/model.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <cstring>
#include <unistd.h>

#include "model_files.hpp"

namespace rh::tuner {
namespace {

using testing::f64;
using testing::i32;
using testing::i64;

double predict1(const Model& m, std::vector<double> x) {
  std::array<double, 1> out{};
  m.predict(x, out);
  return out[0];
}

// One tree, one split on feature 0 at ``threshold``: 1.0 to the left, 2.0 to the right.
std::vector<std::byte> one_split_file(double threshold, std::size_t n_features = 1) {
  return testing::write(
      {i64("tree_offsets", {2}, {0, 3}), i32("feature", {3}, {0, -1, -1}),
       f64("threshold", {3}, {threshold, -2, -2}), i32("left", {3}, {1, -1, -1}),
       i32("right", {3}, {2, -1, -1}), f64("value", {3, 1}, {0, 1, 2}), f64("init", {1}, {0}),
       f64("scale", {1}, {1})},
      {{"kind", "gbt_regressor"}, {"format_version", "1"},
       {"feature_names", testing::feature_names_json(n_features)}});
}

TEST(TunerModel, TwoTreeRegressorHandComputed) {
  const Model m = Model::from_bytes(testing::regressor_file());
  EXPECT_EQ(m.kind(), ModelKind::gbt_regressor);
  EXPECT_EQ(to_string(m.kind()), "gbt_regressor");
  EXPECT_EQ(m.n_features(), 2u);
  EXPECT_EQ(m.n_outputs(), 1u);
  EXPECT_EQ(m.n_trees(), 2u);
  EXPECT_EQ(m.feature_names(), (std::vector<std::string>{"f0", "f1"}));
  EXPECT_TRUE(m.classes().empty());
  EXPECT_EQ(m.metadata().at("format_version"), "1");
  EXPECT_DOUBLE_EQ(predict1(m, {0.0, 0.0}), 0.5 + 0.1 * (1 + 20));
  EXPECT_DOUBLE_EQ(predict1(m, {1.0, 1.0}), 0.5 + 0.1 * (2 + 30));
  EXPECT_DOUBLE_EQ(predict1(m, {-2.0, -1.0}), 0.5 + 0.1 * (1 + 10));
  // Ties go left (x <= threshold), NaN goes right.
  EXPECT_DOUBLE_EQ(predict1(m, {0.5, 0.0}), 0.5 + 0.1 * (1 + 20));
  EXPECT_DOUBLE_EQ(predict1(m, {std::nan(""), 0.0}), 0.5 + 0.1 * (2 + 20));
}

TEST(TunerModel, LogisticHandComputed) {
  const Model m = Model::from_bytes(testing::logistic_file());
  EXPECT_EQ(m.kind(), ModelKind::logistic);
  EXPECT_EQ(m.n_outputs(), 3u);
  EXPECT_EQ(m.classes(), (std::vector<std::string>{"a", "b", "c"}));
  for (const std::array<double, 2>& x : {std::array{0.3, -0.7}, std::array{800.0, -900.0}}) {
    std::array<double, 3> out{};
    m.predict(x, out);
    std::array<double, 3> z{};
    double top = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < 3; ++c) {
      z[c] = testing::logistic_coef()[2 * c] * x[0] + testing::logistic_coef()[2 * c + 1] * x[1] +
             testing::logistic_intercept()[c];
      top = std::max(top, z[c]);
    }
    double sum = 0;
    for (double& v : z) sum += (v = std::exp(v - top));
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(out[c], z[c] / sum, 1e-15);
      EXPECT_TRUE(std::isfinite(out[c]));  // large logits: the max is subtracted
    }
  }
}

TEST(TunerModel, PredictChecksSizes) {
  const Model m = Model::from_bytes(testing::regressor_file());
  std::array<double, 1> out{};
  std::array<double, 2> two{};
  const std::vector<double> x3(3, 0.0);
  EXPECT_THROW(m.predict(x3, out), rh::InvalidArgument);
  EXPECT_THROW(m.predict(two, two), rh::InvalidArgument);
}

TEST(TunerModel, ForestMatchesAPlainWalk) {
  const std::vector<std::byte> bytes = testing::random_forest_file(10, 4, 5, 3, 7);
  const Model m = Model::from_bytes(bytes);
  EXPECT_EQ(m.kind(), ModelKind::forest_classifier);
  EXPECT_EQ(m.classes(), (std::vector<std::string>{"0", "1", "2"}));
  // Walk the raw arrays directly, with scikit-learn's float32 comparison.
  const SafetensorsFile file = parse_safetensors(bytes);
  auto get = [&](const char* name, auto zero) {
    const TensorView& t = file.tensors.at(name);
    std::vector<decltype(zero)> v(t.elements);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  };
  const auto offsets = get("tree_offsets", std::int64_t{});
  const auto feature = get("feature", std::int32_t{});
  const auto left = get("left", std::int32_t{});
  const auto right = get("right", std::int32_t{});
  const auto threshold = get("threshold", double{});
  const auto value = get("value", double{});
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(-0.2, 1.2);
  for (int row = 0; row < 200; ++row) {
    std::vector<double> x(5);
    for (double& v : x) v = unit(rng);
    std::array<double, 3> expected{}, out{};
    for (std::size_t t = 0; t + 1 < offsets.size(); ++t) {
      std::int64_t i = offsets[t];
      while (feature[i] != -1) {
        const bool go_left =
            static_cast<double>(static_cast<float>(x[feature[i]])) <= threshold[i];
        i = offsets[t] + (go_left ? left[i] : right[i]);
      }
      for (int c = 0; c < 3; ++c) expected[c] += value[3 * i + c];
    }
    m.predict(x, out);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(out[c], expected[c] / 10.0, 1e-14);
  }
}

// x <= the adjusted threshold exactly when float32(x) <= threshold, at and around every edge.
TEST(TunerModel, ThresholdsCompareAsFloat32) {
  std::mt19937_64 rng(11);
  std::vector<double> thresholds = {0.0,
                                    -0.0,
                                    1.0,
                                    0.1,
                                    -0.1,
                                    1e-45,
                                    1e-300,
                                    -1e-300,
                                    3.4028234663852886e38,
                                    3.5e38,
                                    -3.5e38,
                                    1e300,
                                    -1e300,
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity()};
  std::uniform_real_distribution<double> wide(-1e3, 1e3);
  for (int i = 0; i < 200; ++i) thresholds.push_back(wide(rng));
  for (int i = 0; i < 100; ++i) thresholds.push_back(static_cast<float>(wide(rng)));  // on floats
  for (const double t : thresholds) {
    const Model m = Model::from_bytes(one_split_file(t));
    std::vector<double> probes;
    for (double centre :
         {t, static_cast<double>(static_cast<float>(std::clamp(t, -3.4e38, 3.4e38)))}) {
      double below = centre, above = centre;
      for (int k = 0; k < 40; ++k) {
        probes.push_back(below);
        probes.push_back(above);
        below = std::nextafter(below, -std::numeric_limits<double>::infinity());
        above = std::nextafter(above, std::numeric_limits<double>::infinity());
      }
      // Midpoints between floats, where the rounding ties.
      const auto f = static_cast<float>(std::clamp(centre, -3.4e38, 3.4e38));
      for (float g : {std::nextafter(f, std::numeric_limits<float>::infinity()),
                       std::nextafter(f, -std::numeric_limits<float>::infinity())}) {
        const double mid = (static_cast<double>(f) + static_cast<double>(g)) / 2;
        probes.push_back(mid);
        probes.push_back(std::nextafter(mid, 1e300));
        probes.push_back(std::nextafter(mid, -1e300));
      }
    }
    for (const double x : probes) {
      if (!std::isfinite(x) || std::abs(x) > 3.4e38) continue;  // float(x) would overflow
      const bool left = static_cast<double>(static_cast<float>(x)) <= t;
      ASSERT_EQ(predict1(m, {x}), left ? 1.0 : 2.0) << "threshold " << t << " x " << x;
    }
  }
}

// x beyond the float range is cast as NumPy casts it (to FLT_MAX below the midpoint to the next
// power of two, to inf from there on), never by an undefined C++ cast.
TEST(TunerModel, FeaturesBeyondTheFloatRangeRoundAsNumPy) {
  constexpr double kFltMax = 3.4028234663852886e38;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double midpoint = kFltMax + std::ldexp(1.0, 103);
  const Model at_max = Model::from_bytes(one_split_file(kFltMax));
  EXPECT_EQ(predict1(at_max, {std::nextafter(kFltMax, kInf)}), 1.0);   // -> FLT_MAX <= t
  EXPECT_EQ(predict1(at_max, {std::nextafter(midpoint, 0.0)}), 1.0);  // still FLT_MAX
  EXPECT_EQ(predict1(at_max, {midpoint}), 2.0);                       // the tie goes to inf
  EXPECT_EQ(predict1(at_max, {1e300}), 2.0);
  EXPECT_EQ(predict1(at_max, {-1e300}), 1.0);                         // -inf
  const Model at_inf = Model::from_bytes(one_split_file(kInf));
  EXPECT_EQ(predict1(at_inf, {1e300}), 1.0);                          // inf <= inf
  const Model at_minus_max = Model::from_bytes(one_split_file(-kFltMax));
  EXPECT_EQ(predict1(at_minus_max, {-std::nextafter(midpoint, 0.0)}), 1.0);  // -FLT_MAX
  EXPECT_EQ(predict1(at_minus_max, {-midpoint}), 1.0);                       // -inf
  EXPECT_EQ(predict1(at_minus_max, {-1e38}), 2.0);
}

TEST(TunerModel, RefusesTreeModelsBeyondTheCompactLayout) {
  EXPECT_NO_THROW(Model::from_bytes(one_split_file(0.5, Model::kMaxFeatures)));
  try {
    Model::from_bytes(one_split_file(0.5, Model::kMaxFeatures + 1));
    FAIL() << "a tree model with too many features was accepted";
  } catch (const ModelFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 1024"), std::string::npos) << e.what();
  }
}

TEST(TunerModel, LoadFromPath) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto path = dir / ("rh_tuner_model_" + std::to_string(::getpid()) + ".safetensors");
  const std::vector<std::byte> bytes = testing::regressor_file();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  const Model m = Model::load(path);
  EXPECT_DOUBLE_EQ(predict1(m, {1.0, 1.0}), 3.7);
  std::filesystem::remove(path);
  EXPECT_THROW(Model::load(path), rh::Error);
}

}  // namespace
}  // namespace rh::tuner
