#pragma once
// Valid model files for the tests and the benchmark, built in memory.

#include <random>

#include "safetensors_writer.hpp"

namespace rh::tuner::testing {

inline std::string feature_names_json(std::size_t n) {
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t j = 0; j < n; ++j) {
    std::string name = std::to_string(j);
    name.insert(name.begin(), 'f');  // not "f" + ...: GCC 12 warns falsely (-Wrestrict)
    names.push_back(name);
  }
  return names.dump();
}

// Two trees on two features (see test_model.cpp for the hand-computed predictions).
inline std::vector<RawTensor> regressor_tensors() {
  return {i64("tree_offsets", {3}, {0, 3, 8}),
          i32("feature", {8}, {0, -1, -1, 1, 0, -1, -1, -1}),
          f64("threshold", {8}, {0.5, -2, -2, 0.0, -1.0, -2, -2, -2}),
          i32("left", {8}, {1, -1, -1, 1, 2, -1, -1, -1}),
          i32("right", {8}, {2, -1, -1, 4, 3, -1, -1, -1}),
          f64("value", {8, 1}, {0, 1, 2, 0, 0, 10, 20, 30}),
          f64("init", {1}, {0.5}),
          f64("scale", {1}, {0.1})};
}

inline std::map<std::string, std::string> regressor_metadata() {
  return {{"kind", "gbt_regressor"}, {"format_version", "1"},
          {"feature_names", feature_names_json(2)}, {"classes", "[]"}};
}

inline std::vector<std::byte> regressor_file() {
  return write(regressor_tensors(), regressor_metadata());
}

inline const std::vector<double>& logistic_coef() {
  static const std::vector<double> coef = {1.0, -2.0, 0.5, 0.25, -1.5, 3.0};  // [3, 2]
  return coef;
}
inline const std::vector<double>& logistic_intercept() {
  static const std::vector<double> intercept = {0.1, -0.2, 0.3};
  return intercept;
}

inline std::vector<std::byte> logistic_file() {
  return write({f64("coef", {3, 2}, logistic_coef()), f64("intercept", {3}, logistic_intercept())},
               {{"kind", "logistic"}, {"format_version", "1"},
                {"feature_names", feature_names_json(2)}, {"classes", R"(["a", "b", "c"])"}});
}

// A forest of full binary trees of the given depth, random features and thresholds in [0, 1),
// n_outputs values per leaf; the layout scikit-learn uses (depth first, left child next).
inline std::vector<std::byte> random_forest_file(std::size_t n_trees, int depth,
                                                 std::size_t n_features, std::size_t n_outputs,
                                                 std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int32_t> feature, left, right;
  std::vector<double> threshold, value;
  for (std::size_t t = 0; t < n_trees; ++t) {
    const auto base = static_cast<std::int32_t>(feature.size());
    // Depth-first build: returns the node's local index.
    auto build = [&](auto&& self, int d) -> std::int32_t {
      const auto local = static_cast<std::int32_t>(feature.size()) - base;
      feature.push_back(-1);
      threshold.push_back(-2.0);
      left.push_back(-1);
      right.push_back(-1);
      for (std::size_t c = 0; c < n_outputs; ++c) value.push_back(unit(rng));
      if (d < depth) {
        feature[base + local] = static_cast<std::int32_t>(rng() % n_features);
        threshold[base + local] = unit(rng);
        const std::int32_t l = self(self, d + 1);
        const std::int32_t r = self(self, d + 1);
        left[base + local] = l;
        right[base + local] = r;
      }
      return local;
    };
    build(build, 0);
    offsets.push_back(static_cast<std::int64_t>(feature.size()));
  }
  const std::uint64_t n = feature.size();
  const std::string kind = n_outputs == 1 ? "gbt_regressor" : "forest_classifier";
  nlohmann::json classes = nlohmann::json::array();
  if (n_outputs > 1) {
    for (std::size_t c = 0; c < n_outputs; ++c) classes.push_back(c);
  }
  return write({i64("tree_offsets", {offsets.size()}, offsets), i32("feature", {n}, feature),
                f64("threshold", {n}, threshold), i32("left", {n}, left),
                i32("right", {n}, right), f64("value", {n, n_outputs}, value),
                f64("init", {n_outputs}, std::vector<double>(n_outputs, 0.0)),
                f64("scale", {1}, {1.0 / static_cast<double>(n_trees)})},
               {{"kind", kind}, {"format_version", "1"},
                {"feature_names", feature_names_json(n_features)}, {"classes", classes.dump()}});
}

}  // namespace rh::tuner::testing
