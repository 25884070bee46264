#include "rh/tuner/model.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

namespace rh::tuner {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& message) {
  throw ModelFormatError("model file: " + message);
}

const TensorView& tensor(const SafetensorsFile& file, std::string_view name, DType dtype,
                         std::size_t ndim) {
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end()) fail("the tensor '" + std::string(name) + "' is missing");
  const TensorView& t = it->second;
  if (t.dtype != dtype) {
    fail("tensor '" + std::string(name) + "' must be " + std::string(to_string(dtype)) + ", not " +
         std::string(to_string(t.dtype)));
  }
  if (t.shape.size() != ndim) {
    fail("tensor '" + std::string(name) + "' must have " + std::to_string(ndim) +
         " dimension(s), not " + std::to_string(t.shape.size()));
  }
  return t;
}

void expect_dim(const TensorView& t, std::string_view name, std::size_t axis,
                std::uint64_t expected) {
  if (t.shape[axis] != expected) {
    fail("tensor '" + std::string(name) + "' has " + std::to_string(t.shape[axis]) +
         " along axis " + std::to_string(axis) + ", expected " + std::to_string(expected));
  }
}

// The tensor's values, copied out of the (possibly unaligned) little-endian bytes.
template <class T>
std::vector<T> values_of(const TensorView& t) {
  static_assert(std::endian::native == std::endian::little, "model files are little-endian");
  std::vector<T> out(t.elements);
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

std::vector<double> finite_values(const TensorView& t, std::string_view name) {
  std::vector<double> v = values_of<double>(t);
  for (double x : v) {
    if (!std::isfinite(x)) fail("tensor '" + std::string(name) + "' holds a non-finite value");
  }
  return v;
}

const std::string& meta(const SafetensorsFile& file, std::string_view key) {
  const auto it = file.metadata.find(key);
  if (it == file.metadata.end()) fail("the metadata lacks '" + std::string(key) + "'");
  return it->second;
}

json json_list(const std::string& text, std::string_view key) {
  json value;
  try {
    const json::parser_callback_t limit = [](int depth, json::parse_event_t, json&) {
      if (depth > 8) throw json::other_error::create(501, "nested too deep", nullptr);
      return true;
    };
    value = json::parse(text, limit);
  } catch (const json::exception& e) {
    fail("metadata '" + std::string(key) + "' is not valid JSON: " + e.what());
  }
  if (!value.is_array()) fail("metadata '" + std::string(key) + "' must be a JSON list");
  return value;
}

constexpr double kFltMax = std::numeric_limits<float>::max();
constexpr float kFloatInf = std::numeric_limits<float>::infinity();

// The largest float f <= t, for a non-NaN t: float32(x) <= t exactly when float32(x) <= f, so a
// float threshold reproduces scikit-learn's comparison (its trees cast X to float32; thresholds
// stay double) in half the node size.
float float32_floor(double t) {
  if (t == std::numeric_limits<double>::infinity()) return kFloatInf;
  if (t > kFltMax) return std::numeric_limits<float>::max();
  if (t < -kFltMax) return -kFloatInf;
  float f = static_cast<float>(t);
  if (static_cast<double>(f) > t) f = std::nextafter(f, -kFloatInf);
  return f;
}

// NumPy's astype(float32): round to nearest, ties to even, overflow to +-inf, NaN kept. (A
// static_cast of a double beyond the float range is undefined behaviour in C++, hence the cases.)
float to_float32(double v) {
  if (std::abs(v) <= kFltMax || std::isnan(v)) return static_cast<float>(v);
  // Beyond FLT_MAX: below the midpoint to the next power of two, it rounds to FLT_MAX; from the
  // midpoint on (FLT_MAX's last bit is odd, so the tie goes up) to inf.
  const double midpoint = kFltMax + std::ldexp(1.0, 103);
  const float magnitude = std::abs(v) < midpoint ? std::numeric_limits<float>::max() : kFloatInf;
  return v < 0 ? -magnitude : magnitude;
}

std::vector<char> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw rh::Error("cannot open the model file " + path.string());
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw rh::Error("cannot read the model file " + path.string());
  std::vector<char> bytes(static_cast<std::size_t>(size));
  in.seekg(0, std::ios::beg);
  if (size > 0 && !in.read(bytes.data(), size)) {
    throw rh::Error("cannot read the model file " + path.string());
  }
  return bytes;
}

}  // namespace

std::string_view to_string(ModelKind kind) {
  switch (kind) {
    case ModelKind::gbt_regressor: return "gbt_regressor";
    case ModelKind::forest_classifier: return "forest_classifier";
    case ModelKind::logistic: return "logistic";
  }
  return "?";
}

Model Model::load(const std::filesystem::path& path) {
  const std::vector<char> bytes = read_file(path);
  try {
    return from_bytes(std::as_bytes(std::span(bytes)));
  } catch (const ModelFormatError& e) {
    throw ModelFormatError(path.string() + ": " + e.what());
  }
}

Model Model::from_bytes(std::span<const std::byte> bytes) {
  return from_file(parse_safetensors(bytes));
}

Model Model::from_file(const SafetensorsFile& file) {
  Model model;
  model.metadata_ = file.metadata;
  const std::string& version = meta(file, "format_version");
  if (version != "1") fail("format_version '" + version + "' is not supported (1)");
  const std::string& kind = meta(file, "kind");
  if (kind == "gbt_regressor") {
    model.kind_ = ModelKind::gbt_regressor;
  } else if (kind == "forest_classifier") {
    model.kind_ = ModelKind::forest_classifier;
  } else if (kind == "logistic") {
    model.kind_ = ModelKind::logistic;
  } else {
    fail("unknown model kind '" + kind + "'");
  }
  for (const json& name : json_list(meta(file, "feature_names"), "feature_names")) {
    if (!name.is_string()) fail("metadata 'feature_names' must hold strings");
    model.feature_names_.push_back(name.get<std::string>());
  }
  if (file.metadata.contains("classes")) {
    for (const json& c : json_list(file.metadata.find("classes")->second, "classes")) {
      model.classes_.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    }
  }
  if (model.kind_ == ModelKind::logistic) {
    model.load_logistic(file);
  } else {
    model.load_trees(file);
  }
  const bool classifier = model.kind_ != ModelKind::gbt_regressor;
  if (classifier && model.classes_.size() != model.n_outputs_) {
    fail("metadata 'classes' has " + std::to_string(model.classes_.size()) +
         " entries but the model has " + std::to_string(model.n_outputs_) + " outputs");
  }
  return model;
}

void Model::load_trees(const SafetensorsFile& file) {
  if (n_features() > kMaxFeatures) {
    fail("a tree model with " + std::to_string(n_features()) +
         " features; this reader takes at most " + std::to_string(kMaxFeatures));
  }
  const TensorView& offsets_t = tensor(file, "tree_offsets", DType::i64, 1);
  if (offsets_t.shape[0] < 1) fail("tensor 'tree_offsets' must have n_trees + 1 >= 1 entries");
  const std::vector<std::int64_t> offsets = values_of<std::int64_t>(offsets_t);
  const TensorView& feature_t = tensor(file, "feature", DType::i32, 1);
  const std::uint64_t n_nodes = feature_t.shape[0];
  if (n_nodes > std::numeric_limits<std::int32_t>::max()) fail("too many tree nodes");
  const TensorView& threshold_t = tensor(file, "threshold", DType::f64, 1);
  const TensorView& left_t = tensor(file, "left", DType::i32, 1);
  const TensorView& right_t = tensor(file, "right", DType::i32, 1);
  const TensorView& value_t = tensor(file, "value", DType::f64, 2);
  expect_dim(threshold_t, "threshold", 0, n_nodes);
  expect_dim(left_t, "left", 0, n_nodes);
  expect_dim(right_t, "right", 0, n_nodes);
  expect_dim(value_t, "value", 0, n_nodes);
  n_outputs_ = value_t.shape[1];
  if (n_outputs_ < 1) fail("tensor 'value' must have at least one output column");
  const TensorView& init_t = tensor(file, "init", DType::f64, 1);
  expect_dim(init_t, "init", 0, n_outputs_);
  const TensorView& scale_t = tensor(file, "scale", DType::f64, 1);
  expect_dim(scale_t, "scale", 0, 1);

  const std::vector<std::int32_t> feature = values_of<std::int32_t>(feature_t);
  const std::vector<double> threshold = values_of<double>(threshold_t);
  const std::vector<std::int32_t> left = values_of<std::int32_t>(left_t);
  const std::vector<std::int32_t> right = values_of<std::int32_t>(right_t);
  const std::vector<double> all_values = finite_values(value_t, "value");
  init_ = finite_values(init_t, "init");
  scale_ = finite_values(scale_t, "scale")[0];

  if (offsets.front() != 0) fail("tensor 'tree_offsets' must start at 0");
  if (offsets.back() != static_cast<std::int64_t>(n_nodes)) {
    fail("tensor 'tree_offsets' must end at the node count " + std::to_string(n_nodes));
  }
  const std::size_t n_trees = offsets.size() - 1;
  for (std::size_t t = 0; t < n_trees; ++t) {
    if (offsets[t + 1] <= offsets[t]) {
      fail("tensor 'tree_offsets' must increase strictly (tree " + std::to_string(t) +
           " is empty or reversed)");
    }
  }
  const auto n_feat = static_cast<std::int64_t>(n_features());
  std::vector<std::uint32_t> depth(n_nodes, 0);
  std::vector<char> has_parent(n_nodes, 0);
  nodes_.reserve(n_nodes);
  values_.reserve(n_nodes * n_outputs_);
  std::vector<std::int64_t> stack;
  std::vector<std::pair<std::size_t, std::int64_t>> right_of;  // (new node, old right child)
  std::vector<std::uint32_t> new_index(n_nodes, 0);
  for (std::size_t t = 0; t < n_trees; ++t) {
    const std::int64_t begin = offsets[t];
    const std::int64_t size = offsets[t + 1] - begin;
    if (size > static_cast<std::int64_t>(kMaxTreeNodes)) {
      fail("tree " + std::to_string(t) + " has " + std::to_string(size) +
           " nodes; this reader takes at most " + std::to_string(kMaxTreeNodes) + " per tree");
    }
    // Check every node; a child lies after its parent inside the tree and has one parent, so the
    // tree is a tree (no cycle, no shared subtree).
    for (std::int64_t local = 0; local < size; ++local) {
      const std::int64_t i = begin + local;
      const std::string where =
          "tree " + std::to_string(t) + ", node " + std::to_string(local) + ": ";
      if (feature[i] == -1) {
        if (left[i] != -1 || right[i] != -1) fail(where + "a leaf's children must both be -1");
        continue;
      }
      if (feature[i] < 0 || feature[i] >= n_feat) {
        fail(where + "feature " + std::to_string(feature[i]) + " is outside [0, " +
             std::to_string(n_feat) + ")");
      }
      if (std::isnan(threshold[i])) fail(where + "the threshold is NaN");
      if (left[i] == right[i]) fail(where + "both children are node " + std::to_string(left[i]));
      for (const std::int32_t child : {left[i], right[i]}) {
        if (child <= local || child >= size) {
          fail(where + "child " + std::to_string(child) +
               " must lie after its parent and inside the tree (" + std::to_string(size) +
               " nodes)");
        }
        if (has_parent[begin + child]) {
          fail(where + "child " + std::to_string(child) + " already has a parent");
        }
        has_parent[begin + child] = 1;
        depth[begin + child] = depth[i] + 1;
      }
    }
    // Lay the reachable nodes out depth first, the left child next.
    const auto root = static_cast<std::uint32_t>(nodes_.size());
    std::uint32_t tree_depth = 0;
    stack.assign(1, begin);
    while (!stack.empty()) {
      const std::int64_t i = stack.back();
      stack.pop_back();
      const auto here = static_cast<std::uint32_t>(nodes_.size());
      new_index[i] = here;
      values_.insert(values_.end(), all_values.begin() + i * static_cast<std::int64_t>(n_outputs_),
                     all_values.begin() + (i + 1) * static_cast<std::int64_t>(n_outputs_));
      if (feature[i] == -1) {
        nodes_.push_back({std::numeric_limits<float>::quiet_NaN(), 0, 0});
        tree_depth = std::max(tree_depth, depth[i]);
        continue;
      }
      nodes_.push_back({float32_floor(threshold[i]), static_cast<std::uint16_t>(feature[i]), 0});
      right_of.emplace_back(here, begin + right[i]);
      stack.push_back(begin + right[i]);
      stack.push_back(begin + left[i]);  // next: it lands right after this node
    }
    tree_roots_.push_back(root);
    tree_depths_.push_back(tree_depth);
  }
  // Every node of a tree lies within kMaxTreeNodes of its root (checked above), so the step fits.
  for (const auto& [node, old_right] : right_of) {
    nodes_[node].right_step = static_cast<std::uint16_t>(new_index[old_right] - node);
  }
}

void Model::load_logistic(const SafetensorsFile& file) {
  const TensorView& coef_t = tensor(file, "coef", DType::f64, 2);
  n_outputs_ = coef_t.shape[0];
  if (n_outputs_ < 1) fail("tensor 'coef' must have at least one class");
  expect_dim(coef_t, "coef", 1, n_features());
  const TensorView& intercept_t = tensor(file, "intercept", DType::f64, 1);
  expect_dim(intercept_t, "intercept", 0, n_outputs_);
  coef_ = finite_values(coef_t, "coef");
  intercept_ = finite_values(intercept_t, "intercept");
}

void Model::predict(std::span<const double> x, std::span<double> out) const {
  if (x.size() != n_features()) {
    throw rh::InvalidArgument("x has " + std::to_string(x.size()) + " features, the model " +
                              std::to_string(n_features()));
  }
  if (out.size() != n_outputs_) {
    throw rh::InvalidArgument("out has " + std::to_string(out.size()) + " entries, the model " +
                              std::to_string(n_outputs_) + " outputs");
  }
  const std::size_t k = n_outputs_;
  if (kind_ == ModelKind::logistic) {
    const std::size_t d = n_features();
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c) {
      const double* row = coef_.data() + c * d;
      double z = 0.0;
      for (std::size_t j = 0; j < d; ++j) z += row[j] * x[j];
      out[c] = z + intercept_[c];
      top = std::max(top, out[c]);
    }
    double sum = 0.0;
    for (std::size_t c = 0; c < k; ++c) {
      out[c] = std::exp(out[c] - top);
      sum += out[c];
    }
    for (std::size_t c = 0; c < k; ++c) out[c] /= sum;
    return;
  }
  // The comparisons are in float32, as scikit-learn's (thresholds were rounded down at load).
  std::array<float, kMaxFeatures> xf;
  for (std::size_t j = 0; j < x.size(); ++j) xf[j] = to_float32(x[j]);
  // Trees are walked kLanes at a time, interleaved, so that their independent chains of loads
  // overlap; a lane whose tree is shallower sits on its leaf (a leaf's step is 0).
  constexpr std::size_t kLanes = 16;
  const Node* nodes = nodes_.data();
  const std::size_t n_trees = tree_roots_.size();
  // init + scale * value, added tree by tree: scikit-learn's order for the boosted trees, and the
  // NumPy evaluation's (model_files.py).
  std::copy(init_.begin(), init_.end(), out.begin());
  const double scale = scale_;
  for (std::size_t t0 = 0; t0 < n_trees; t0 += kLanes) {
    const std::size_t lanes = std::min(kLanes, n_trees - t0);
    std::uint32_t idx[kLanes];
    std::uint32_t steps = 0;
    for (std::size_t l = 0; l < kLanes; ++l) {
      const std::size_t t = t0 + (l < lanes ? l : 0);
      idx[l] = tree_roots_[t];
      steps = std::max(steps, tree_depths_[t]);
    }
    for (std::uint32_t s = 0; s < steps; ++s) {
      for (std::size_t l = 0; l < kLanes; ++l) {
        const Node n = nodes[idx[l]];
        // Branch-free: a mask, not a conditional the compiler might turn into a branch. Left is
        // the next node (+1), right is +right_step; a leaf (NaN threshold, step 0) stays put.
        const bool right = !(xf[n.feature] <= n.threshold);
        const std::uint32_t go_right = 0u - static_cast<std::uint32_t>(right);
        idx[l] += 1u + ((std::uint32_t{n.right_step} - 1u) & go_right);
      }
    }
    for (std::size_t l = 0; l < lanes; ++l) {
      const double* v = values_.data() + std::size_t{idx[l]} * k;
      for (std::size_t c = 0; c < k; ++c) out[c] += scale * v[c];
    }
  }
}

}  // namespace rh::tuner
