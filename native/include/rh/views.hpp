#pragma once
// Non-owning views of caller data; the engine never copies a batch.

#include <cstddef>

namespace rh {

// A C-contiguous (row-major) rows x cols matrix.
template <class T>
struct MatrixView {
  const T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;

  const T* row(std::size_t i) const { return data + i * cols; }
};

}  // namespace rh
