// Hand-made bad files: each must be a ModelFormatError naming the problem, never a crash (this
// suite also runs under ASan + UBSan).
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "model_files.hpp"
#include "rh/tuner/model.hpp"

namespace rh::tuner {
namespace {

using nlohmann::json;
using testing::f64;
using testing::i32;
using testing::i64;
using testing::RawTensor;

std::vector<std::byte> text_file(const std::string& header, std::size_t data_bytes = 0) {
  std::vector<std::byte> out = testing::assemble(header, {});
  out.resize(out.size() + data_bytes, std::byte{0});
  return out;
}

// The message of the ModelFormatError that loading bytes throws ("" when it loads).
std::string load_error(const std::vector<std::byte>& bytes) {
  try {
    (void)Model::from_bytes(bytes);
  } catch (const ModelFormatError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_LOAD_ERROR(bytes, fragment)                                          \
  do {                                                                              \
    const std::string message = load_error(bytes);                                  \
    EXPECT_NE(message.find(fragment), std::string::npos)                            \
        << "expected an error containing '" << (fragment) << "', got '" << message \
        << "'";                                                                     \
  } while (0)

TEST(TunerSafetensors, ParsesAValidFile) {
  const std::vector<std::byte> bytes = testing::regressor_file();
  const SafetensorsFile file = parse_safetensors(bytes);
  EXPECT_EQ(file.tensors.size(), 8u);
  EXPECT_EQ(file.tensors.at("value").shape, (std::vector<std::uint64_t>{8, 1}));
  EXPECT_EQ(file.tensors.at("tree_offsets").dtype, DType::i64);
  EXPECT_EQ(file.metadata.at("kind"), "gbt_regressor");
  EXPECT_EQ(load_error(bytes), "");
}

TEST(TunerSafetensors, ContainerErrors) {
  EXPECT_LOAD_ERROR(std::vector<std::byte>{}, "truncated");
  EXPECT_LOAD_ERROR(std::vector<std::byte>(7), "truncated");
  std::vector<std::byte> huge(16, std::byte{0xff});  // N = 2^64 - 1
  EXPECT_LOAD_ERROR(huge, "truncated");
  std::vector<std::byte> zero(8, std::byte{0});
  EXPECT_LOAD_ERROR(zero, "empty");
  EXPECT_LOAD_ERROR(text_file("{\"a\": "), "does not parse");
  EXPECT_LOAD_ERROR(text_file("[1, 2]"), "must be an object");
  EXPECT_LOAD_ERROR(text_file(std::string(5000, '[') + std::string(5000, ']')), "nests deeper");
  EXPECT_LOAD_ERROR(text_file(R"({"t": 3})"), "must be an object");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1]}})", 8), "needs dtype");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4),
                    "unsupported dtype 'F32'");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": 7, "shape": [1], "data_offsets": [0, 8]}})", 8),
                    "dtype must be a string");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [-1], "data_offsets": [0, 8]}})", 8),
                    "non-negative integer");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1.5], "data_offsets": [0, 8]}})", 8),
                    "non-negative integer");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": 1, "data_offsets": [0, 8]}})", 8),
                    "shape must be a list");
  EXPECT_LOAD_ERROR(
      text_file(R"({"t": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", 8),
      "overflows");
  EXPECT_LOAD_ERROR(
      text_file(R"({"t": {"dtype": "F64", "shape": [2305843009213693952], "data_offsets": [0, 8]}})", 8),
      "byte size overflows");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [0]}})", 8),
                    "[begin, end]");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [8, 0]}})", 8),
                    "is after end");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [0, 16]}})", 8),
                    "beyond the data buffer");
  EXPECT_LOAD_ERROR(
      text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [0, 18446744073709551615]}})", 8),
      "beyond the data buffer");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}})", 8),
                    "shape and dtype need 16");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]},
                                  "u": {"dtype": "F64", "shape": [1], "data_offsets": [4, 12]}})",
                              16),
                    "inside another tensor");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [8, 16]}})", 16),
                    "leaving a gap");
  EXPECT_LOAD_ERROR(text_file(R"({"t": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 9),
                    "no tensor refers to");
  EXPECT_LOAD_ERROR(text_file(R"({"__metadata__": {"kind": 1}})"), "must be a string");
  EXPECT_LOAD_ERROR(text_file(R"({"__metadata__": []})"), "__metadata__ must be an object");
}

// A regressor file with one change to its tensors or metadata.
std::vector<std::byte> regressor_with(
    const std::function<void(std::vector<RawTensor>&, std::map<std::string, std::string>&)>& edit) {
  std::vector<RawTensor> tensors = testing::regressor_tensors();
  std::map<std::string, std::string> metadata = testing::regressor_metadata();
  edit(tensors, metadata);
  return testing::write(tensors, metadata);
}

void replace(std::vector<RawTensor>& tensors, RawTensor t) {
  for (RawTensor& old : tensors) {
    if (old.name == t.name) old = std::move(t);
  }
}

TEST(TunerSafetensors, ModelErrors) {
  using T = std::vector<RawTensor>;
  using M = std::map<std::string, std::string>;
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m.erase("kind"); }), "lacks 'kind'");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["kind"] = "svm"; }), "unknown model kind");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["format_version"] = "2"; }),
                    "format_version '2'");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["feature_names"] = "[f0"; }),
                    "'feature_names' is not valid JSON");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["feature_names"] = "{}"; }),
                    "must be a JSON list");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["feature_names"] = "[1, 2]"; }),
                    "must hold strings");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["feature_names"] = R"(["f0"])"; }),
                    "feature 1 is outside [0, 1)");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) { t.erase(t.begin() + 2); }),
                    "'threshold' is missing");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i64("feature", {8}, {0, -1, -1, 1, 0, -1, -1, -1}));
                    }),
                    "'feature' must be I32, not I64");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, f64("value", {8}, {0, 1, 2, 0, 0, 10, 20, 30}));
                    }),
                    "'value' must have 2 dimension(s)");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) { replace(t, f64("init", {2}, {0.5, 0.5})); }),
                    "'init' has 2 along axis 0, expected 1");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) { replace(t, i64("tree_offsets", {3}, {1, 3, 8})); }),
                    "must start at 0");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) { replace(t, i64("tree_offsets", {3}, {0, 3, 7})); }),
                    "must end at the node count 8");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) { replace(t, i64("tree_offsets", {3}, {0, 9, 8})); }),
                    "increase strictly");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) { replace(t, i64("tree_offsets", {0}, {})); }),
                    "n_trees + 1");
  // A cycle: the second tree's node 1 points back to node 0.
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i32("left", {8}, {1, -1, -1, 1, 0, -1, -1, -1}));
                    }),
                    "tree 1, node 1: child 0 must lie after its parent");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i32("right", {8}, {3, -1, -1, 4, 3, -1, -1, -1}));
                    }),
                    "tree 0, node 0: child 3 must lie after its parent and inside the tree");
  // A shared subtree: node 4 of the second tree would have two parents.
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i32("right", {8}, {2, -1, -1, 4, 4, -1, -1, -1}));
                    }),
                    "tree 1, node 1: child 4 already has a parent");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i32("left", {8}, {2, -1, -1, 1, 2, -1, -1, -1}));
                    }),
                    "tree 0, node 0: both children are node 2");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i32("left", {8}, {1, 2, -1, 1, 2, -1, -1, -1}));
                    }),
                    "a leaf's children must both be -1");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, i32("feature", {8}, {-5, -1, -1, 1, 0, -1, -1, -1}));
                    }),
                    "feature -5 is outside");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, f64("threshold", {8}, {std::nan(""), -2, -2, 0, -1, -2, -2, -2}));
                    }),
                    "threshold is NaN");
  EXPECT_LOAD_ERROR(regressor_with([](T& t, M&) {
                      replace(t, f64("scale", {1}, {std::numeric_limits<double>::infinity()}));
                    }),
                    "'scale' holds a non-finite value");
  EXPECT_LOAD_ERROR(regressor_with([](T&, M& m) { m["kind"] = "forest_classifier"; }),
                    "'classes' has 0 entries but the model has 1 outputs");
  // Logistic: coef's width must match the feature names.
  EXPECT_LOAD_ERROR(testing::write({f64("coef", {1, 3}, {1, 2, 3}), f64("intercept", {1}, {0})},
                                   {{"kind", "logistic"}, {"format_version", "1"},
                                    {"feature_names", R"(["a", "b"])"}, {"classes", "[1]"}}),
                    "'coef' has 3 along axis 1, expected 2");
}

// Every prefix of a valid file, and every single-byte corruption of it, loads or throws
// ModelFormatError; nothing else (ASan checks the reads).
TEST(TunerSafetensors, TruncationsAndByteFlips) {
  for (const std::vector<std::byte>& good : {testing::regressor_file(), testing::logistic_file()}) {
    for (std::size_t n = 0; n < good.size(); ++n) {
      const std::vector<std::byte> prefix(good.begin(), good.begin() + static_cast<long>(n));
      EXPECT_NE(load_error(prefix), "") << "prefix of " << n << " bytes loaded";
    }
    for (std::size_t i = 0; i < good.size(); ++i) {
      for (const std::uint8_t mask : {0x01, 0x80, 0xff}) {
        std::vector<std::byte> bad = good;
        bad[i] ^= std::byte{mask};
        try {
          const Model m = Model::from_bytes(bad);
          std::vector<double> x(m.n_features(), 0.25), out(m.n_outputs());
          m.predict(x, out);
        } catch (const ModelFormatError&) {
        }
      }
    }
  }
}

}  // namespace
}  // namespace rh::tuner
