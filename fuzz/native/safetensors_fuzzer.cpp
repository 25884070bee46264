// libFuzzer target: the tuner's model reader (native/tuner/src/safetensors.cpp and model.cpp)
// on arbitrary bytes. A file is either refused with rh::tuner::ModelFormatError (or another
// rh::Error) or loaded, and a loaded model predicts a row of zeros; anything else (a crash, a
// sanitizer report, another exception, a hang) is a finding. Built with clang
// -fsanitize=fuzzer,address,undefined by scripts/fuzz.sh.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rh/error.hpp"
#include "rh/tuner/model.hpp"
#include "rh/tuner/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    (void)rh::tuner::parse_safetensors(bytes);
  } catch (const rh::tuner::ModelFormatError&) {
  }
  try {
    const rh::tuner::Model model = rh::tuner::Model::from_bytes(bytes);
    const std::vector<double> x(model.n_features(), 0.0);
    std::vector<double> out(model.n_outputs());
    model.predict(x, out);
  } catch (const rh::Error&) {
  }
  return 0;
}
