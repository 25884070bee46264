#pragma once
// Builds safetensors bytes in memory for the tests and the benchmark: the layout the Python
// writers produce (tensors in order, contiguous; the header padded with spaces to 8 bytes).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace rh::tuner::testing {

struct RawTensor {
  std::string name;
  std::string dtype;  // "F64", "I64", "I32", or anything, for the bad-file tests
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;
};

template <class T>
RawTensor raw(std::string name, std::string dtype, std::vector<std::uint64_t> shape,
              const std::vector<T>& values) {
  RawTensor t{std::move(name), std::move(dtype), std::move(shape), {}};
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

inline RawTensor f64(std::string name, std::vector<std::uint64_t> shape, std::vector<double> v) {
  return raw(std::move(name), "F64", std::move(shape), v);
}
inline RawTensor i64(std::string name, std::vector<std::uint64_t> shape,
                     std::vector<std::int64_t> v) {
  return raw(std::move(name), "I64", std::move(shape), v);
}
inline RawTensor i32(std::string name, std::vector<std::uint64_t> shape,
                     std::vector<std::int32_t> v) {
  return raw(std::move(name), "I32", std::move(shape), v);
}

// The header JSON for the tensors laid out in order, and the data buffer.
inline nlohmann::json header_of(const std::vector<RawTensor>& tensors,
                                const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  return header;
}

inline std::vector<std::byte> assemble(std::string header_text,
                                       const std::vector<RawTensor>& tensors) {
  while ((header_text.size() + 8) % 8 != 0) header_text.push_back(' ');
  std::vector<std::byte> out(8);
  std::uint64_t n = header_text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  for (char c : header_text) out.push_back(static_cast<std::byte>(c));
  for (const RawTensor& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

inline std::vector<std::byte> write(const std::vector<RawTensor>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  return assemble(header_of(tensors, metadata).dump(), tensors);
}

}  // namespace rh::tuner::testing
