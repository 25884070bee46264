// The Gram X~^T diag(w c) X~ that BatchOps keeps through a batch's solve: formed afresh (by the
// thin-Gram kernel or SYRK, row blocks summed in block order) or brought to a new point by rank-k
// corrections over the rows whose curvature flipped. Newton matrices and the information are
// formed from it (batch_ops.cpp).

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "batch_ops.hpp"
#include "blas.hpp"
#include "gram_kernel.hpp"
#include "rh/bricks/scope.hpp"
#include "thread_rows.hpp"

namespace rh::cpu {

template <std::floating_point T>
void BatchOps<T>::scale_row(std::size_t row, T weight, T* out) const {
  const T root = std::sqrt(weight);
  const T* x = X_.row(row);
  for (std::size_t j = 0; j < features_; ++j) out[j] = root * x[j];
  if (intercept_) out[features_] = root;
}

template <std::floating_point T>
void BatchOps<T>::weighted_gram(EngineBrick brick) {
  if (gram_strategy_ == GramStrategy::full) {
    // The kept Gram was formed afresh at this curvature set: a new one would be the same bits.
    if (!gram_valid_ || !gram_at_current_curvature(brick)) full_gram(brick);
    return;
  }
  if (gram_valid_ && incremental_updates_ < max_incremental_updates &&
      update_gram_incrementally(brick)) {
    return;
  }
  full_gram(brick);
}

template <std::floating_point T>
bool BatchOps<T>::gram_at_current_curvature(EngineBrick brick) const {
  if (gram_kept_at_point()) return true;
  RH_BRICK_SCOPE(prof_, brick, X_.rows, 2 * X_.rows * sizeof(T), 0);
  return std::equal(ws_.point.weighted_curvature.begin(),
                    ws_.point.weighted_curvature.begin() + static_cast<std::ptrdiff_t>(X_.rows),
                    ws_.gram_curvature.begin());
}

template <std::floating_point T>
typename BatchOps<T>::BlockGram BatchOps<T>::block_gram(std::size_t b) {
  return block_gram_into(gram_sums_.take(b, 0), 0);
}

template <std::floating_point T>
void BatchOps<T>::start_gram_sums(std::size_t parts,
                                  const typename BlockSums<T>::Totals& totals) {
  // A buffer per block where they all fit in gram_sums_budget_bytes, so that no task ever
  // sleeps on a buffer where memory is cheap (a version with two a thread everywhere measured
  // 65,536 x 32 at 1.05-1.08x in one fresh-process run, A/A 0.97-1.00; a waiting thread's
  // wake-up, a futex on a KVM guest, is the suspect, not shown), else two a thread: a block
  // finished ahead of a slower one waits in the second while the thread starts its next, and a
  // wide block's Gram takes milliseconds.
  const std::size_t block_bytes = parts * dim_ * dim_ * sizeof(T);
  const std::size_t fitting = gram_sums_budget_bytes / block_bytes;
  const std::size_t buffers =
      !parallel_ ? 1 : std::max(2 * pool_.size(), std::min(blocks_.count(), fitting));
  gram_sums_.start(blocks_.count(), parts, dim_, buffers, totals, ws_.gram_partials);
}

template <std::floating_point T>
void BatchOps<T>::fold_block_gram(std::size_t b, EngineBrick brick) {
  RH_BRICK_SCOPE(prof_, brick, dim_ * dim_, dim_ * dim_ * sizeof(T), dim_ * (dim_ + 1) / 2);
  gram_sums_.finish(b);
}

template <std::floating_point T>
void BatchOps<T>::mirror_lower(T* out) const {
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j < i; ++j) out[j * dim_ + i] = out[i * dim_ + j];
  }
}

template <std::floating_point T>
typename BatchOps<T>::BlockGram BatchOps<T>::block_gram_into(T* partial,
                                                             std::size_t slot) const {
  // The staged rows go to a buffer of this thread's, one stage long, reused stage after stage
  // and block after block: it stays in the core's cache, and the batch's rows are not pushed out
  // of the shared cache by a scaled copy of them (the next passes read X from there). Grams
  // formed in one pass (the information pass) stage in buffers of their own (slot).
  if (thin_gram_) {
    thread_local std::vector<std::size_t> rows;
    if (rows.size() < slice_rows) rows.resize(slice_rows);
    std::fill_n(partial, dim_ * dim_, T{0});  // the kernel adds to it
    return {.scaled = nullptr, .rows = rows.data(), .partial = partial};
  }
  thread_local std::array<std::vector<T>, max_grams_per_pass> staging;
  const std::size_t needed = gram_stage_rows() * dim_;
  if (staging[slot].size() < needed) staging[slot].resize(needed);
  return {.scaled = staging[slot].data(), .rows = nullptr, .partial = partial};
}

// The SYRK operand is sqrt(w c) * x~ with the intercept's column sqrt(w c) written out, so every
// entry of the Gram, intercept row included, comes from one kernel with one summation order:
// exactly duplicated columns then give an exactly singular Gram, as in the reference. Rows
// outside the quadratic zone have zero curvature and add exactly nothing: only the others are
// scaled, a chunk at a time (the scaled copy is read back from cache), and multiplied.
template <std::floating_point T>
void BatchOps<T>::add_gram_rows(BlockGram& gram, std::size_t lo, std::size_t hi,
                                const T* curvature, EngineBrick brick) const {
  if (thin_gram_) {
    // The same rule with the thin kernel: a slice's rows of non-zero curvature, listed, then
    // added by the kernel straight from X (weights in registers; the chunk is in cache).
    for_each_slice(lo, hi, [&](std::size_t a, std::size_t z) {
      std::size_t count = 0;
      for (std::size_t i = a; i < z; ++i) {
        gram.rows[count] = i;  // listed always, kept by the count: no branch on random rows
        count += curvature[i] != T{0};
      }
      RH_BRICK_SCOPE(prof_, brick, count, count * (features_ + 1) * sizeof(T),
                     count * dim_ * (dim_ + 1));
      gram::accumulate_lower(X_.data, features_, intercept_, curvature, gram.rows, count,
                             gram.partial);
      gram.used += count;
    });
    return;
  }
  const std::size_t stage = gram_stage_rows();
  std::size_t i = lo;
  while (i < hi) {
    {
      RH_BRICK_SCOPE(prof_, brick, hi - i, (hi - i) * (features_ + 1) * sizeof(T), hi - i);
      for (; i < hi && gram.staged < stage; ++i) {
        if (curvature[i] == T{0}) continue;
        scale_row(i, curvature[i], gram.scaled + gram.staged * dim_);
        ++gram.staged;
        ++gram.used;
      }
    }
    if (gram.staged == stage) multiply_staged(gram, brick);
  }
}

template <std::floating_point T>
void BatchOps<T>::multiply_staged(BlockGram& gram, EngineBrick brick) const {
  // The scaled rows and SYRK's lower triangle: rows * d * (d + 1) flops.
  RH_BRICK_SCOPE(prof_, brick, gram.staged, 2 * gram.staged * dim_ * sizeof(T),
                 gram.staged * dim_ * (dim_ + 1));
  blas::syrk_lower(gram.staged, dim_, gram.scaled, gram.used == gram.staged ? T{0} : T{1},
                   gram.partial, dim_);
  gram.staged = 0;
}

template <std::floating_point T>
void BatchOps<T>::finish_block_gram(BlockGram& gram, EngineBrick brick) const {
  if (gram.staged > 0) multiply_staged(gram, brick);
  if (gram.used == 0) std::fill_n(gram.partial, dim_ * dim_, T{0});  // no row adds anything
}

template <std::floating_point T>
void BatchOps<T>::reduce_gram(const PointRows<T>& point) {
  mirror_lower(ws_.gram.data());
  std::copy_n(point.weighted_curvature.begin(), X_.rows, ws_.gram_curvature.begin());
  gram_curvature_stamp_ = point.curvature_stamp;
  gram_valid_ = true;
  incremental_updates_ = 0;
}

template <std::floating_point T>
void BatchOps<T>::full_gram(EngineBrick brick) {
  require_design_scanned();
  const T* curvature = ws_.point.weighted_curvature.data();
  gram_valid_ = false;  // until reduce_gram: the blocks fold into ws_.gram as they finish
  start_gram_sums(1, {ws_.gram.data()});
  for_each_block([&](std::size_t b) {
    BlockGram gram = block_gram(b);
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      add_gram_rows(gram, lo, hi, curvature, brick);
    });
    finish_block_gram(gram, brick);
    fold_block_gram(b, brick);
  });
  reduce_gram(ws_.point);
}

template <std::floating_point T>
bool BatchOps<T>::update_gram_incrementally(EngineBrick brick) {
  if (gram_kept_at_point()) return true;  // no row can have flipped
  const std::size_t rows = X_.rows;
  const T* now = ws_.point.weighted_curvature.data();
  T* kept = ws_.gram_curvature.data();  // the curvature the Gram has
  // Per row block (on the pool), the counts and the list of the flipped rows, in row order.
  std::vector<std::vector<std::size_t>>& flipped_rows = ws_.flipped_rows;
  if (flipped_rows.size() < blocks_.count()) flipped_rows.resize(blocks_.count());
  std::vector<FlipCounts> block_counts(blocks_.count());
  for_each_block([&](std::size_t b) {
    const std::size_t lo = blocks_.begin(b);
    const std::size_t n = blocks_.end(b) - lo;
    RH_BRICK_SCOPE(prof_, brick, n, 3 * n * sizeof(T), 0);
    auto* flags = thread_rows<FlipFlags, unsigned char>(n);
    block_counts[b] = count_flips(now + lo, kept + lo, weights_.data() + lo, n, flags);
    flipped_rows[b].clear();
    append_flagged(flags, n, lo, flipped_rows[b]);
  });
  FlipCounts counts;
  for (const FlipCounts& block : block_counts) counts += block;
  const std::size_t flips = counts.flipped;
  const std::size_t in_set = counts.in_set;  // rows of the new curvature set
  if (flips == 0) {  // the Gram is this point's already
    gram_curvature_stamp_ = ws_.point.curvature_stamp;
    return true;
  }
  // Each flipped row costs a rank-1 correction (two for a row whose weight moved without
  // leaving), a fresh Gram one per row of the new set. From the batch's whole weighted Gram
  // (every row inside: the least-squares start's), the corrections are taken up to half the new
  // set's rows, past which the fresh Gram is cheaper: the first Newton matrix of a first batch is
  // then that Gram less its outside rows, about a quarter of the rows instead of a fresh Gram of
  // three quarters. Otherwise up to rows / 8, as a solve's later steps flip: chained corrections
  // of many rows, each leaving a residue, made the last steps of a solve to tol 1e-12 too rough
  // for its line search (the proximal Newton solve of ProxNewton.* fell back to LAMM).
  // Subtracting the leaving rows leaves a rounding residue of the size of what they added; when
  // the set keeps fewer rows than that, the residue is no longer small next to what remains (an
  // empty set, every row an outlier, gave an LU-solvable Gram of noise instead of 0: found by
  // tests/test_reliability_numbers.py), and the Gram is formed afresh too.
  const std::size_t max_flips =
      counts.whole == rows ? in_set / max_flip_share_inverse : rows / max_flip_fraction_inverse;
  if (flips > max_flips || counts.leaving >= in_set) return false;
  ++incremental_updates_;
  // Per row block, the rows entering the curvature set with their new weights minus those
  // leaving it with their old, scaled as in full_gram (a row whose weight moved without leaving,
  // not produced by 0/w curvature but cheap to allow, is both), into the block's partial; the
  // partials summed in block order as a full Gram's are, so the result does not depend on the
  // threads. Each correction is staged gram_stage_rows() rows at a time in buffers of the
  // thread's, from the same kernel as the full Gram, so duplicated columns stay exactly
  // duplicated.
  RH_BRICK_SCOPE(prof_, brick, flips, 2 * flips * dim_ * sizeof(T), 2 * flips * dim_ * (dim_ + 2));
  const std::size_t square = dim_ * dim_;
  // The listed rows' Gram with the given weights into out (zeroed first), by the thin kernel or
  // by SYRK on scaled rows staged gram_stage_rows() at a time.
  const auto correction = [&](const std::size_t* listed, std::size_t count, const T* weights,
                              T* out) {
    std::fill_n(out, square, T{0});
    if (thin_gram_) {
      gram::accumulate_lower(X_.data, features_, intercept_, weights, listed, count, out);
      return;
    }
    const std::size_t stage = gram_stage_rows();
    T* scaled = thread_rows<ScaledRows, T>(stage * dim_);
    for (std::size_t first = 0; first < count; first += stage) {
      const std::size_t staged = std::min(stage, count - first);
      for (std::size_t k = 0; k < staged; ++k) {
        scale_row(listed[first + k], weights[listed[first + k]], scaled + k * dim_);
      }
      blas::syrk_lower(staged, dim_, scaled, T{1}, out, dim_);
    }
  };
  start_gram_sums(1, {ws_.gram_change.data()});
  for_each_block([&](std::size_t b) {
    // The block's entering and leaving rows, in row order, each flipped row written to both
    // lists and kept by the counts (no branch on rows that flip at random); then the kept
    // curvature brought to the new one on them.
    const std::vector<std::size_t>& flipped = flipped_rows[b];
    std::size_t* entering = thread_rows<GramRows, std::size_t>(flipped.size());
    std::size_t* leaving = thread_rows<LeavingRows, std::size_t>(flipped.size());
    std::size_t entering_count = 0;
    std::size_t leaving_count = 0;
    for (const std::size_t i : flipped) {
      entering[entering_count] = i;
      entering_count += now[i] != T{0};
      leaving[leaving_count] = i;
      leaving_count += kept[i] != T{0};
    }
    T* partial = gram_sums_.take(b, 0);
    T* removed = thread_rows<GramLeaving, T>(square);
    correction(entering, entering_count, now, partial);
    correction(leaving, leaving_count, kept, removed);
    for (std::size_t i = 0; i < dim_; ++i) {
      for (std::size_t j = 0; j <= i; ++j) partial[i * dim_ + j] -= removed[i * dim_ + j];
    }
    for (const std::size_t i : flipped) kept[i] = now[i];
    fold_block_gram(b, brick);
  });
  // The blocks' sum, mirrored, then added to the lower triangle and mirrored: exactly symmetric.
  T* change = ws_.gram_change.data();
  mirror_lower(change);
  T* gram = ws_.gram.data();
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      const T value = gram[i * dim_ + j] + change[i * dim_ + j];
      gram[i * dim_ + j] = value;
      gram[j * dim_ + i] = value;
    }
  }
  gram_curvature_stamp_ = ws_.point.curvature_stamp;
  return true;
}

// BatchOps<T> is instantiated in batch_ops.cpp; these members are defined here.
#define RH_GRAM_CACHE_INSTANTIATE(T)                                                             \
  template void BatchOps<T>::scale_row(std::size_t, T, T*) const;                               \
  template void BatchOps<T>::weighted_gram(EngineBrick);                                        \
  template bool BatchOps<T>::gram_at_current_curvature(EngineBrick) const;                      \
  template BatchOps<T>::BlockGram BatchOps<T>::block_gram(std::size_t);                         \
  template void BatchOps<T>::start_gram_sums(std::size_t,                                       \
                                             const typename BlockSums<T>::Totals&);             \
  template void BatchOps<T>::fold_block_gram(std::size_t, EngineBrick);                         \
  template void BatchOps<T>::mirror_lower(T*) const;                                            \
  template BatchOps<T>::BlockGram BatchOps<T>::block_gram_into(T*, std::size_t) const;          \
  template void BatchOps<T>::add_gram_rows(BlockGram&, std::size_t, std::size_t, const T*,      \
                                           EngineBrick) const;                                  \
  template void BatchOps<T>::multiply_staged(BlockGram&, EngineBrick) const;                    \
  template void BatchOps<T>::finish_block_gram(BlockGram&, EngineBrick) const;                  \
  template void BatchOps<T>::reduce_gram(const PointRows<T>&);                                  \
  template void BatchOps<T>::full_gram(EngineBrick);                                            \
  template bool BatchOps<T>::update_gram_incrementally(EngineBrick);
RH_GRAM_CACHE_INSTANTIATE(float)
RH_GRAM_CACHE_INSTANTIATE(double)
#undef RH_GRAM_CACHE_INSTANTIATE

}  // namespace rh::cpu
