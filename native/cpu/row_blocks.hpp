#pragma once
// The fixed partition of a batch's rows into blocks for parallel passes. It depends on the row
// count only, so per-block partial sums, combined in block order, give the same result for every
// thread count and every schedule.

#include <algorithm>
#include <cstddef>

namespace rh::cpu {

class RowBlocks {
 public:
  static constexpr std::size_t min_rows = 2048;  // below this a block is not worth a task
  static constexpr std::size_t max_blocks = 64;  // bounds the per-block sums and flags

  explicit RowBlocks(std::size_t rows)
      : rows_(rows), count_(std::clamp<std::size_t>(rows / min_rows, 1, max_blocks)) {}

  std::size_t count() const { return count_; }
  // The most rows a block holds (blocks differ by at most one row).
  std::size_t largest() const { return (rows_ + count_ - 1) / count_; }
  std::size_t begin(std::size_t block) const { return block * rows_ / count_; }
  std::size_t end(std::size_t block) const { return (block + 1) * rows_ / count_; }

 private:
  std::size_t rows_;
  std::size_t count_;
};

// Rows per chunk of a fused pass inside a block: a pass reads a chunk of X from memory once and
// works on it while it sits in the per-core cache (a product, then a second product on the same
// rows). By default about 256 KiB of X per chunk (EngineOptions::chunk_bytes), half the per-core
// L2 of the reference machine (128 KiB ran as fast and 512 KiB 10 % slower; larger chunks also
// mean fewer profiler scopes), at least 16 rows. Like the blocks it depends on the shape and the
// option only, so summation orders, and results, do not depend on threads or timing.
// Never more than the batch's largest block: a chunk never spans two blocks (for_each_chunk), so
// a longer one is that block either way (the same passes, the same results), while the buffers
// sized by the chunk (w psi of a pass and the Gram's staging, the square root's QR rows and row
// lists; per thread, thread_rows.hpp) would be sized for rows no pass ever holds, zero-filled
// fresh pages a fresh process pays on its first batch (a 1 MiB chunk over 4,096 x 16 float32 is
// 15,420 rows by its bytes; over 65,536 x 2 float64, 65,536 rows for blocks of 2,048).
inline std::size_t chunk_rows(std::size_t rows, std::size_t features, std::size_t element_bytes,
                              std::size_t chunk_bytes) {
  const std::size_t by_bytes =
      std::max<std::size_t>(16, chunk_bytes / (std::max<std::size_t>(features, 1) * element_bytes));
  return std::min(by_bytes, std::max<std::size_t>(RowBlocks(rows).largest(), 1));
}

// Rows per slice of a chunk for a pass's per-row temporaries (thread_rows.hpp: the loss and
// inference terms, the thin Gram kernel's row list). Every result formed from them is the same
// however the rows are cut (LaneSum sums by rows' lanes; the thin kernel adds row after row), so
// slices change no bit, and the buffers stay 8-24 KiB per thread (in L1) whatever the chunk: at
// a 1 MiB chunk they were sized for every row of it, fresh pages that a fresh process paid on
// its first batch (22 more minor faults at 4,096 x 16 float32 than 64 KiB chunks).
inline constexpr std::size_t slice_rows = 1024;

// Calls fn(a, b) for the slices [a, b) of [lo, hi), in order.
template <class Fn>
void for_each_slice(std::size_t lo, std::size_t hi, Fn&& fn) {
  for (std::size_t a = lo; a < hi; a += slice_rows) fn(a, std::min(hi, a + slice_rows));
}

}  // namespace rh::cpu
