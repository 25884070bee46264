#pragma once
// Inference for the tuner's models (docs/tuner.md, "C++ inference"): tree ensembles (a gradient
// boosted regressor, a random forest classifier) and a multinomial logistic regression, read from
// the safetensors files the Python side writes. Loading validates the whole structure; predict()
// then never fails on a loaded model beyond the sizes of its arguments, and never allocates.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rh/tuner/safetensors.hpp"

namespace rh::tuner {

enum class ModelKind { gbt_regressor, forest_classifier, logistic };

std::string_view to_string(ModelKind kind);

class Model {
 public:
  // Reads and validates a model file; ModelFormatError (or rh::Error for I/O) on any problem.
  static Model load(const std::filesystem::path& path);
  // The same from the file's bytes (copied: the model does not keep the span).
  static Model from_bytes(std::span<const std::byte> bytes);

  // out[0..n_outputs) for one row x[0..n_features). Trees: init + scale * value[leaf], added tree
  // by tree; a node goes left when float32(x[feature]) <= threshold, as scikit-learn compares
  // (its trees cast X to float32), NaN going right. Logistic: softmax(coef @ x + intercept), the
  // max subtracted first. No allocation; rh::InvalidArgument when a span has the wrong size.
  void predict(std::span<const double> x, std::span<double> out) const;

  [[nodiscard]] ModelKind kind() const noexcept { return kind_; }
  [[nodiscard]] std::size_t n_features() const noexcept { return feature_names_.size(); }
  [[nodiscard]] std::size_t n_outputs() const noexcept { return n_outputs_; }
  [[nodiscard]] std::size_t n_trees() const noexcept {
    return tree_roots_.size();
  }
  [[nodiscard]] const std::vector<std::string>& feature_names() const noexcept {
    return feature_names_;
  }
  // The metadata's "classes" list, each item as its JSON text when it is not a string; empty when
  // the file has none (the regressor).
  [[nodiscard]] const std::vector<std::string>& classes() const noexcept { return classes_; }
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& metadata() const noexcept {
    return metadata_;
  }

  // Limits of the compact node layout, checked when a tree model is loaded.
  static constexpr std::size_t kMaxFeatures = 1024;    // x is copied to float32 on the stack
  static constexpr std::size_t kMaxTreeNodes = 65535;  // a right step fits in 16 bits

  // One tree node as predict walks it, 8 bytes (half a 16-byte node's cache footprint: the
  // shipped forests outgrow L1 otherwise). Each tree is laid out depth first (its left child
  // right after a node); a leaf has a NaN threshold and a right step of 0, so it stays where it
  // is, and a tree is walked a fixed number of steps (its depth) without a branch on the data.
  struct Node {
    float threshold;           // go to the next node when float32(x[feature]) <= threshold
    std::uint16_t feature;     // 0 at a leaf
    std::uint16_t right_step;  // the right child is this node + right_step; 0 at a leaf
  };
  static_assert(sizeof(Node) == 8);

 private:
  Model() = default;
  static Model from_file(const SafetensorsFile& file);
  void load_trees(const SafetensorsFile& file);
  void load_logistic(const SafetensorsFile& file);

  ModelKind kind_ = ModelKind::gbt_regressor;
  std::size_t n_outputs_ = 0;
  std::vector<std::string> feature_names_;
  std::vector<std::string> classes_;
  std::map<std::string, std::string, std::less<>> metadata_;

  // Trees.
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> tree_roots_;
  std::vector<std::uint32_t> tree_depths_;
  std::vector<double> values_;  // [n_nodes, n_outputs]
  std::vector<double> init_;
  double scale_ = 1.0;

  // Logistic.
  std::vector<double> coef_;  // [n_outputs, n_features]
  std::vector<double> intercept_;
};

}  // namespace rh::tuner
