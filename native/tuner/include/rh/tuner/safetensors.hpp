#pragma once
// A strict reader of the safetensors container (docs/tuner.md, "C++ inference"): an 8-byte
// little-endian header length N, N bytes of JSON naming each tensor's dtype, shape and byte range,
// then the data buffer. Every length and offset is checked before anything is read; a file that
// does not hold up is a ModelFormatError that names the problem, never a crash.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rh/error.hpp"

namespace rh::tuner {

// A model file that is corrupt, truncated, hostile or not in the expected format.
class ModelFormatError : public rh::Error {
 public:
  using rh::Error::Error;
};

// The dtypes the tuner's files use; any other is refused.
enum class DType { f64, i64, i32 };

std::string_view to_string(DType dtype);
std::size_t dtype_size(DType dtype);

// One tensor: a view into the bytes handed to parse_safetensors (not necessarily aligned).
struct TensorView {
  DType dtype = DType::f64;
  std::vector<std::uint64_t> shape;
  std::uint64_t elements = 0;  // product of shape (1 for a scalar)
  std::span<const std::byte> data;
};

struct SafetensorsFile {
  std::map<std::string, TensorView, std::less<>> tensors;
  std::map<std::string, std::string, std::less<>> metadata;
};

// Parses and checks the container: N within the file; a JSON object (nesting depth bounded) whose
// entries have a known dtype, a shape of non-negative integers and [begin, end] offsets; sizes ==
// product(shape) * dtype size without overflow; the byte ranges sorted, contiguous, covering the
// data buffer exactly (as the safetensors writers lay it out); "__metadata__" maps str to str.
// The views refer into `bytes`, which must outlive the result.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes);

}  // namespace rh::tuner
