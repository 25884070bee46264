#pragma once
// Per-block d x d sums (the Grams of a block's rows) added into the batch's totals in block
// order as the blocks finish: the left fold total = p_0, then += p_1, p_2, ... on the lower
// triangle, the same for every thread count and schedule, so the bits do not depend on them.
// A block's partial lives only from its task's start until it is folded in, in one of a few
// buffers used in turn (block b in buffer b mod buffers): one d x d buffer per block for the
// whole pass had been 538 MB beside a 1 GiB batch (64 blocks at d = 1,025 in float64).
//
// A task takes its block's buffer once the block `buffers` before it is folded in. That never
// waits forever: the lowest unfinished block's buffer was last used by a block below it, and
// every block below the lowest unfinished one is finished and, by then, folded (finish() folds
// every block in order that it finds finished). Waits are rare where buffers exceed the threads
// (a block finished far ahead of a slow one).
//
// No library offers this (OpenMP's ordered reductions would fold in the same order but need
// OpenMP's runtime beside our pool); it is a mutex, a condition variable and a counter.

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace rh::cpu {

template <class T>
class BlockSums {
 public:
  static constexpr std::size_t max_parts = 4;
  using Totals = std::array<T*, max_parts>;

  // Before a pass: `parts` (<= max_parts) sums of dim x dim per block (totals[part] receives
  // each, its lower triangle), the blocks folded through `buffers` buffers (at most `blocks`) kept in `storage`
  // (grown to them, never shrunk: the engine's workspace, reused batch after batch).
  void start(std::size_t blocks, std::size_t parts, std::size_t dim, std::size_t buffers,
             const Totals& totals, std::vector<T>& storage) {
    blocks_ = blocks;
    parts_ = parts;
    dim_ = dim;
    buffers_ = std::max<std::size_t>(1, std::min(buffers, blocks));
    totals_ = totals;
    const std::size_t size = buffers_ * parts_ * dim_ * dim_;
    if (storage.size() < size) storage.resize(size);
    storage_ = storage.data();
    finished_.assign(blocks_, false);
    folded_ = 0;
  }

  // The block's buffer for `part` (dim x dim, row-major), waiting until it is free: a block's
  // task asks for part 0 first (the wait is there), then for the others.
  T* take(std::size_t block, std::size_t part) {
    if (part == 0 && block >= buffers_) {
      std::unique_lock lock(mutex_);
      folded_changed_.wait(lock, [&] { return folded_ > block - buffers_; });
    }
    return buffer(block, part);
  }

  // The block is done: every block now finished in order is folded into the totals.
  void finish(std::size_t block) {
    std::lock_guard lock(mutex_);
    finished_[block] = true;
    const std::size_t before = folded_;
    while (folded_ < blocks_ && finished_[folded_]) {
      fold(folded_);
      ++folded_;
    }
    if (folded_ != before) folded_changed_.notify_all();
  }

 private:
  T* buffer(std::size_t block, std::size_t part) {
    return storage_ + ((block % buffers_) * parts_ + part) * dim_ * dim_;
  }
  // The first block's lower triangle copied, every later one's added.
  void fold(std::size_t block) {
    for (std::size_t part = 0; part < parts_; ++part) {
      const T* partial = buffer(block, part);
      T* total = totals_[part];
      for (std::size_t i = 0; i < dim_; ++i) {
        T* row = total + i * dim_;
        const T* add = partial + i * dim_;
        if (block == 0) {
          std::copy_n(add, i + 1, row);
        } else {
          for (std::size_t j = 0; j <= i; ++j) row[j] += add[j];
        }
      }
    }
  }

  std::size_t blocks_ = 0;
  std::size_t parts_ = 0;
  std::size_t dim_ = 0;
  std::size_t buffers_ = 1;
  Totals totals_{};
  T* storage_ = nullptr;
  std::vector<bool> finished_;
  std::size_t folded_ = 0;  // blocks 0 .. folded_ - 1 are in the totals
  std::mutex mutex_;
  std::condition_variable folded_changed_;
};

}  // namespace rh::cpu
