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
  static constexpr std::size_t max_blocks = 64;  // bounds the per-block partial buffers

  explicit RowBlocks(std::size_t rows)
      : rows_(rows), count_(std::clamp<std::size_t>(rows / min_rows, 1, max_blocks)) {}

  std::size_t count() const { return count_; }
  std::size_t begin(std::size_t block) const { return block * rows_ / count_; }
  std::size_t end(std::size_t block) const { return (block + 1) * rows_ / count_; }

 private:
  std::size_t rows_;
  std::size_t count_;
};

}  // namespace rh::cpu
