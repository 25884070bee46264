#include "rh/tuner/safetensors.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

namespace rh::tuner {
namespace {

using nlohmann::json;

// Bounds the JSON nesting (the parser is iterative; this keeps hostile headers cheap anyway).
constexpr int kMaxDepth = 16;
// The safetensors reference implementation's limit on the header.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void fail(const std::string& message) {
  throw ModelFormatError("model file: " + message);
}

struct DepthExceeded {};

json parse_header(std::string_view text) {
  try {
    const json::parser_callback_t limit = [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw DepthExceeded{};
      return true;
    };
    return json::parse(text.begin(), text.end(), limit);
  } catch (const DepthExceeded&) {
    fail("the JSON header nests deeper than " + std::to_string(kMaxDepth) + " levels");
  } catch (const json::exception& e) {
    fail(std::string("the JSON header does not parse: ") + e.what());
  }
}

std::uint64_t unsigned_integer(const json& value, const std::string& what) {
  if (!value.is_number_unsigned()) fail(what + " must be a non-negative integer");
  return value.get<std::uint64_t>();
}

DType parse_dtype(const json& value, const std::string& name) {
  if (!value.is_string()) fail("tensor '" + name + "': dtype must be a string");
  const auto& s = value.get_ref<const std::string&>();
  if (s == "F64") return DType::f64;
  if (s == "I64") return DType::i64;
  if (s == "I32") return DType::i32;
  fail("tensor '" + name + "': unsupported dtype '" + s + "' (F64, I64 or I32)");
}

}  // namespace

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::f64: return "F64";
    case DType::i64: return "I64";
    case DType::i32: return "I32";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) { return dtype == DType::i32 ? 4 : 8; }

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes) {
  if (bytes.size() < 8) {
    fail("truncated: " + std::to_string(bytes.size()) +
         " bytes, fewer than the 8 of the header length");
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  const std::uint64_t available = bytes.size() - 8;
  if (n > available) {
    fail("truncated: the header length is " + std::to_string(n) + " bytes but only " +
         std::to_string(available) + " follow");
  }
  if (n > kMaxHeaderBytes) fail("the header length " + std::to_string(n) + " is too large");
  if (n < 2) fail("the JSON header is empty");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  const std::span<const std::byte> buffer = bytes.subspan(8 + n);

  const json header = parse_header(text);
  if (!header.is_object()) fail("the JSON header must be an object");

  SafetensorsFile file;
  struct Range {
    std::uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ must be an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail("__metadata__['" + key + "'] must be a string");
        file.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    if (!entry.is_object()) fail("tensor '" + name + "' must be an object");
    if (!entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets")) {
      fail("tensor '" + name + "' needs dtype, shape and data_offsets");
    }
    TensorView view;
    view.dtype = parse_dtype(entry["dtype"], name);
    const json& shape = entry["shape"];
    if (!shape.is_array()) fail("tensor '" + name + "': shape must be a list");
    if (shape.size() > 8) fail("tensor '" + name + "': more than 8 dimensions");
    std::uint64_t elements = 1;
    for (const json& dim : shape) {
      const std::uint64_t d = unsigned_integer(dim, "tensor '" + name + "': each dimension");
      if (__builtin_mul_overflow(elements, d, &elements)) {
        fail("tensor '" + name + "': the product of the shape overflows");
      }
      view.shape.push_back(d);
    }
    std::uint64_t nbytes = 0;
    if (__builtin_mul_overflow(elements, std::uint64_t{dtype_size(view.dtype)}, &nbytes)) {
      fail("tensor '" + name + "': the byte size overflows");
    }
    const json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2) {
      fail("tensor '" + name + "': data_offsets must be [begin, end]");
    }
    const std::uint64_t begin = unsigned_integer(offsets[0], "tensor '" + name + "': begin");
    const std::uint64_t end = unsigned_integer(offsets[1], "tensor '" + name + "': end");
    if (begin > end) {
      fail("tensor '" + name + "': data_offsets begin " + std::to_string(begin) +
           " is after end " + std::to_string(end));
    }
    if (end > buffer.size()) {
      fail("tensor '" + name + "': data_offsets end " + std::to_string(end) +
           " is beyond the data buffer (" + std::to_string(buffer.size()) + " bytes)");
    }
    if (end - begin != nbytes) {
      fail("tensor '" + name + "': " + std::to_string(end - begin) +
           " bytes but its shape and dtype need " + std::to_string(nbytes));
    }
    view.elements = elements;
    view.data = buffer.subspan(begin, end - begin);
    const auto [it, inserted] = file.tensors.emplace(name, std::move(view));
    if (!inserted) fail("tensor '" + name + "' appears twice");
    ranges.push_back({begin, end, &it->first});
  }

  // The byte ranges must tile the buffer: sorted, no gap, no overlap, nothing left over.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t position = 0;
  for (const Range& r : ranges) {
    if (r.begin != position) {
      fail("tensor '" + *r.name + "' starts at byte " + std::to_string(r.begin) +
           (r.begin < position ? " inside another tensor" : " leaving a gap") + " (expected " +
           std::to_string(position) + ")");
    }
    position = r.end;
  }
  if (position != buffer.size()) {
    fail("the data buffer has " + std::to_string(buffer.size() - position) +
         " bytes no tensor refers to");
  }
  return file;
}

}  // namespace rh::tuner
