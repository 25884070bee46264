// The square-root information mode of BatchOps (factorization="qr"; shared/spec/method.md,
// contract v4; rh/square_root.hpp): Newton steps and the information update by Householder QR of
// stacked rows instead of normal equations.
//
// One pass over X per factorization: each row block QR-updates its own (d+1) x (d+1) triangle
// with its weighted rows sqrt(w c) [x~ | y], a group of chunks at a time (LAPACK's tpqrt, made
// for a triangle over a block of rows), so memory stays O(chunk d) and the blocks run on the
// pool; the blocks' triangles are merged pairwise in a fixed tree (its levels on the pool), then
// the history [R~ | z~] is stacked under the result (then the ridge rows). The last column
// carries the right-hand side, so the top of the result is [R_H | q].

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "batch_ops.hpp"
#include "blas.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/error.hpp"
#include "square_root_triangle.hpp"
#include "thread_rows.hpp"

namespace rh::cpu {
namespace {

// A block's rows go to tpqrt in groups of up to this many chunks: the panel's level-2 work per
// call and tpqrt's own overheads amortize over more rows, while its blocked update on a few
// hundred rows stays in the per-core cache (on the reference shape tpqrt ran 7 % faster on
// 728-row groups than on 364-row chunks, and slower again beyond 1,000 rows:
// docs/perf/experiments.jsonl, qr-tpqrt-row-groups).
constexpr std::size_t qr_chunks = 2;

// The leading dimension of a block's rows buffer: not a multiple of 4 KiB, where the columns
// would share cache sets (tpqrt ran 1.5x slower with 2048 rows than with 2056).
template <std::floating_point T>
std::size_t rows_stride(std::size_t rows) {
  return (rows * sizeof(T)) % 4096 == 0 ? rows + 64 / sizeof(T) : rows;
}

}  // namespace

template <std::floating_point T>
void BatchOps<T>::square_root_history() {
  auto& residual = ws_.root.history_residual;
  residual.resize(dim_);
  for (std::size_t i = 0; i < dim_; ++i) {
    double sum = 0.0;
    for (std::size_t j = i; j < dim_; ++j) {
      sum += static_cast<double>(factor_[i * dim_ + j]) * static_cast<double>(current_[j]);
    }
    residual[i] = sum - static_cast<double>(vector_[i]);
  }
  for (std::size_t j = 0; j < dim_; ++j) {
    double sum = 0.0;
    for (std::size_t i = 0; i <= j; ++i) sum += static_cast<double>(factor_[i * dim_ + j]) * residual[i];
    ws_.information_delta64[j] = sum;
    ws_.information_delta[j] = static_cast<T>(sum);
  }
}

template <std::floating_point T>
template <class Curvature>
void BatchOps<T>::stack_rows(Curvature&& curvature, bool residual_rhs,
                             std::vector<double>& linear) {
  require_design_scanned();
  const bool second = residual_rhs;  // a Newton step: the update's right-hand side rides along
  const std::size_t n = dim_ + (second ? 2 : 1);
  const std::size_t nb = reflector_block(n);
  const std::size_t blocks = blocks_.count();
  SquareRootBuffers<T>& root = ws_.root;
  root.stacked_columns = n;
  root.block_triangles.resize(blocks * n * n);
  const std::size_t capacity = qr_chunks * chunk_;
  const std::size_t ld = rows_stride<T>(capacity);
  root.reflectors.resize(blocks * nb * n);
  root.work.resize(blocks * nb * n);
  root.linear_partials.resize(blocks * dim_);
  const T* residual = ws_.point.residual.data();
  const T tau = tau_;
  // The columns' squared norms over the rows and the history, so the QR sees equilibrated
  // columns (one pass that reads X; the QR's pass then reads it again).
  root.column_partials.assign(blocks * dim_, 0.0);
  for_each_block([&](std::size_t b) {
    double* columns = root.column_partials.data() + b * dim_;
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      RH_BRICK_SCOPE(prof_, EngineBrick::gram, (hi - lo) * n, (hi - lo) * n * sizeof(T),
                     2 * (hi - lo) * n);
      for (std::size_t i = lo; i < hi; ++i) {
        const double wc = static_cast<double>(weights_[i] * curvature(residual[i]));
        if (!(wc > 0.0)) continue;
        const T* x = X_.row(i);
        for (std::size_t j = 0; j < features_; ++j) {
          const auto value = static_cast<double>(x[j]);
          columns[j] += wc * (value * value);
        }
        if (intercept_) columns[features_] += wc;
      }
    });
  });
  std::vector<double> squares(dim_, 0.0);
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t j = 0; j < dim_; ++j) squares[j] += root.column_partials[b * dim_ + j];
  }
  add_history_squares(factor_, dim_, squares);
  root.scales = column_scales<T>(squares);
  const T* scales = root.scales.data();
  for_each_block([&](std::size_t b) {
    T* triangle = root.block_triangles.data() + b * n * n;
    std::fill_n(triangle, n * n, T{0});
    // The block's rows buffer and row lists are the thread's (a block's task uses them from its
    // first chunk to its last QR): threads x, not blocks x, 2 chunks of n columns.
    T* rows = thread_rows<QrRows, T>(ld * n);
    T* reflectors = root.reflectors.data() + b * nb * n;
    T* work = root.work.data() + b * nb * n;
    double* partial = root.linear_partials.data() + b * dim_;
    std::fill_n(partial, dim_, 0.0);
    std::size_t* kept = thread_rows<KeptRows, std::size_t>(chunk_);
    T* row_scales = thread_rows<KeptScales, T>(chunk_);
    std::size_t buffered = 0;  // rows in the QR buffer, from this and earlier chunks
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      RH_BRICK_SCOPE(prof_, EngineBrick::gram, (hi - lo) * n, (hi - lo) * n * sizeof(T),
                     2 * (hi - lo) * n * n);
      // The rows of non-zero curvature with their scales sqrt(w c), and every row's linear term.
      std::size_t m = 0;
      for (std::size_t i = lo; i < hi; ++i) {
        const T w = weights_[i];
        if (w == T{0}) continue;
        const T r = residual[i];
        const T c = curvature(r);
        const T psi = std::clamp(r, -tau, tau);
        const T wc = w * c;
        if (wc > T{0}) {
          kept[m] = i;
          row_scales[m] = std::sqrt(wc);
          ++m;
        }
        // The row's linear term: w psi - w c r (0 inside the quadratic zone of the indicator).
        const double a = static_cast<double>(w) * static_cast<double>(psi) -
                         static_cast<double>(wc) * static_cast<double>(r);
        if (a != 0.0) {
          const T* x = X_.row(i);
          for (std::size_t j = 0; j < features_; ++j) partial[j] += a * static_cast<double>(x[j]);
          if (intercept_) partial[features_] += a;
        }
      }
      // The kept rows into the column-major chunk, a tile of rows at a time: each column's
      // entries of the tile are one contiguous run (row by row, every entry would be a store to
      // another column, n cache lines apart).
      constexpr std::size_t tile = 8;
      T* chunk_rows = rows + buffered;
      for (std::size_t k0 = 0; k0 < m; k0 += tile) {
        const std::size_t k1 = std::min(m, k0 + tile);
        for (std::size_t j = 0; j < features_; ++j) {
          T* column = chunk_rows + j * ld;
          const T scale_j = scales[j];
          for (std::size_t k = k0; k < k1; ++k) {
            column[k] = row_scales[k] * X_.row(kept[k])[j] * scale_j;
          }
        }
        for (std::size_t k = k0; k < k1; ++k) {
          const std::size_t i = kept[k];
          const T scale = row_scales[k];
          if (intercept_) chunk_rows[features_ * ld + k] = scale * scales[features_];
          chunk_rows[dim_ * ld + k] = scale * (residual_rhs ? residual[i] : y_[i]);
          if (second) chunk_rows[(dim_ + 1) * ld + k] = scale * y_[i];
        }
      }
      buffered += m;
      // The QR once the next chunk might not fit, and at the block's end.
      if (buffered > 0 && (buffered + chunk_ > capacity || hi == blocks_.end(b))) {
        check_lapack(blas::tpqrt(static_cast<blas::lapack_index>(buffered), static_cast<blas::lapack_index>(n),
                               0, static_cast<blas::lapack_index>(nb), triangle,
                               static_cast<blas::lapack_index>(n), rows,
                               static_cast<blas::lapack_index>(ld), reflectors,
                               static_cast<blas::lapack_index>(nb), work),
                   "tpqrt");
        buffered = 0;
      }
    });
  });

  RH_BRICK_SCOPE(prof_, EngineBrick::solve, (blocks + 1) * n * n, (blocks + 1) * n * n * sizeof(T),
                 2 * (blocks + 1) * n * n * n);
  // The blocks' triangles merged pairwise, a tree's level at a time on the pool: block b's
  // triangle takes in block b + step's (both upper triangular: tpqrt's l = n). The tree depends
  // on the number of blocks only, so the result does not depend on the threads.
  for (std::size_t step = 1; step < blocks; step *= 2) {
    const std::size_t pairs = (blocks - step + 2 * step - 1) / (2 * step);
    const auto merge = [&](std::size_t pair) {
      const std::size_t b = pair * 2 * step;
      check_lapack(blas::tpqrt(static_cast<blas::lapack_index>(n), static_cast<blas::lapack_index>(n),
                             static_cast<blas::lapack_index>(n), static_cast<blas::lapack_index>(nb),
                             root.block_triangles.data() + b * n * n,
                             static_cast<blas::lapack_index>(n),
                             root.block_triangles.data() + (b + step) * n * n,
                             static_cast<blas::lapack_index>(n), root.reflectors.data() + b * nb * n,
                             static_cast<blas::lapack_index>(nb), root.work.data() + b * nb * n),
                 "tpqrt");
    };
    if (parallel_ && pairs > 1) {
      pool_.run(pairs, merge);
    } else {
      for (std::size_t pair = 0; pair < pairs; ++pair) merge(pair);
    }
  }
  root.stacked.assign(root.block_triangles.begin(), root.block_triangles.begin() + n * n);
  // The history [R~ | z~] last (the batch's rows first, as the reference stacks them).
  root.below_rows.assign(n * n, T{0});
  history_rows(factor_, vector_, residual_rhs ? root.history_residual.data() : nullptr, scales,
               dim_, n, root.below_rows.data(), n);
  stack_below(root.below_rows.data(), n);
  require_finite_triangle(std::span<const T>(root.stacked));
  linear.assign(dim_, 0.0);
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t j = 0; j < dim_; ++j) linear[j] += root.linear_partials[b * dim_ + j];
  }
}

template <std::floating_point T>
void BatchOps<T>::stack_below(T* rows, std::size_t m) {
  rh::cpu::stack_below(ws_.root.stacked.data(), ws_.root.stacked_columns, rows, m,
                       ws_.root.reflectors.data(), ws_.root.work.data());
}

template <std::floating_point T>
std::uint8_t BatchOps<T>::pattern_class(std::size_t i) const {
  if (weights_[i] == T{0}) return 0;
  const T r = ws_.point.residual[i];
  if (std::abs(r) <= tau_) return 1;
  return r > T{0} ? 2 : 3;
}

// The per-row passes below run over the row blocks on the pool (when the batch is parallel):
// each block's share of a pass touches only its rows, so the result is the same either way.
template <std::floating_point T>
bool BatchOps<T>::pattern_repeats() {
  RH_BRICK_SCOPE(prof_, EngineBrick::huber, X_.rows, 2 * X_.rows * sizeof(T), X_.rows);
  auto& pattern = ws_.root.pattern;
  pattern.resize(X_.rows);
  auto& repeats = ws_.root.block_flags;
  repeats.assign(blocks_.count(), 1);
  for_each_block([&](std::size_t b) {
    bool same = true;
    for (std::size_t i = blocks_.begin(b); i < blocks_.end(b); ++i) {
      const std::uint8_t c = pattern_class(i);
      same = same && pattern[i] == c;
      pattern[i] = c;
    }
    repeats[b] = same ? 1 : 0;
  });
  const bool same = pattern_known_ && std::all_of(repeats.begin(), repeats.end(),
                                                  [](std::uint8_t flag) { return flag != 0; });
  pattern_known_ = true;
  return same;
}

template <std::floating_point T>
void BatchOps<T>::keep_step_factorization(const std::vector<double>& linear) {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, X_.rows, X_.rows * sizeof(T), 0);
  SquareRootBuffers<T>& root = ws_.root;
  root.step_stacked = root.stacked;
  root.step_scales = root.scales;
  root.step_linear = linear;
  root.step_pattern.resize(X_.rows);
  for_each_block([&](std::size_t b) {
    for (std::size_t i = blocks_.begin(b); i < blocks_.end(b); ++i) {
      root.step_pattern[i] = pattern_class(i);
    }
  });
  step_tau_ = tau_;
  step_kept_ = true;
}

template <std::floating_point T>
bool BatchOps<T>::at_step_pattern() {
  if (!step_kept_ || tau_ != step_tau_) return false;
  RH_BRICK_SCOPE(prof_, EngineBrick::huber, X_.rows, 2 * X_.rows * sizeof(T), X_.rows);
  auto& matches = ws_.root.block_flags;
  matches.assign(blocks_.count(), 1);
  for_each_block([&](std::size_t b) {
    for (std::size_t i = blocks_.begin(b); i < blocks_.end(b); ++i) {
      if (ws_.root.step_pattern[i] != pattern_class(i)) {
        matches[b] = 0;
        return;
      }
    }
  });
  return std::all_of(matches.begin(), matches.end(), [](std::uint8_t flag) { return flag != 0; });
}

template <std::floating_point T>
SquareRootStep BatchOps<T>::square_root_step(double ridge, Vector& out) {
  std::vector<double> linear;
  const T tau = tau_;
  stack_rows([tau](T r) { return std::abs(r) <= tau ? T{1} : T{0}; }, /*residual_rhs=*/true,
             linear);
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T), 2 * dim_ * dim_);
  keep_step_factorization(linear);
  return triangle_step(ws_.root.stacked.data(), ws_.root.stacked_columns, dim_, ws_.root.scales,
                       linear, ridge, out.data());
}

template <std::floating_point T>
InferenceSums BatchOps<T>::square_root_information(const InformationRequest& request,
                                                   SquareRootOutputs<T> out) {
  const bool smoothed = request.bandwidth > 0.0;
  const T tau = tau_;
  const auto two_h = static_cast<T>(2.0 * request.bandwidth);  // exact: h is a value of T
  // The information update's curvature, as information() takes it.
  const auto curvature = [&](T r) {
    const T magnitude = std::abs(r);
    return smoothed ? std::clamp(T{0.5} + (tau - magnitude) / two_h, T{0}, T{1})
                    : (magnitude <= tau ? T{1} : T{0});
  };
  InferenceSums batch{.inference_batches = 1};
  if (request.matrices) {
    // G_b and K_b (and the sums) as the Cholesky mode forms them; its J~ + J_b goes to scratch.
    batch = information(request, InformationOutputs<T>{ws_.hessian, out.gram, out.score_gram});
  } else {
    const T* residual = ws_.point.residual.data();
    // Each block's sums on the pool, added in block order.
    auto& partials = ws_.root.block_sums;
    partials.assign(4 * blocks_.count(), 0.0);
    for_each_block([&](std::size_t b) {
      double* sums = partials.data() + 4 * b;
      for (std::size_t i = blocks_.begin(b); i < blocks_.end(b); ++i) {
        const auto w = static_cast<double>(weights_[i]);
        const auto psi = static_cast<double>(std::clamp(residual[i], -tau, tau));
        const auto c = static_cast<double>(curvature(residual[i]));
        sums[0] += w * psi * psi;
        const double wc = w * c;
        sums[1] += wc;
        sums[2] += wc * c;
        sums[3] += w;
      }
    });
    for (std::size_t b = 0; b < blocks_.count(); ++b) {
      batch.score_sq_sum += partials[4 * b];
      batch.curvature_sum += partials[4 * b + 1];
      batch.curvature_sq_sum += partials[4 * b + 2];
      batch.inference_weight += partials[4 * b + 3];
    }
  }

  const std::size_t d = dim_;
  std::vector<double> linear;
  const T* stacked = nullptr;
  std::size_t n = 0;    // the stacked triangle's columns
  std::size_t rhs = 0;  // the column of the update's right-hand side in it
  std::vector<T> scales;
  if (!smoothed && !request.anchor && at_step_pattern()) {
    // The final point has the last Newton step's pattern and bandwidth: the update's rows
    // sqrt(w c) [x~ | y] and its linear term are that step's, and its factorization carried the
    // update's right-hand side [sqrt(w c) y; z~] along (no second QR of the batch).
    linear = ws_.root.step_linear;
    stacked = ws_.root.step_stacked.data();
    n = d + 2;
    rhs = d + 1;
    scales = ws_.root.step_scales;
  } else {
    stack_rows(curvature, /*residual_rhs=*/false, linear);
    if (request.anchor) {  // + the smooth gradient without the pull: -X~^T (w psi) + R~^T(R~ beta - z~)
      for (std::size_t b = 0; b < blocks_.count(); ++b) {
        const T* partial = ws_.point.score_partials.data() + b * dim_;
        for (std::size_t j = 0; j < dim_; ++j) linear[j] -= static_cast<double>(partial[j]);
      }
      for (std::size_t j = 0; j < dim_; ++j) linear[j] += ws_.information_delta64[j];
    }
    stacked = ws_.root.stacked.data();
    n = d + 1;
    rhs = d;
    scales = ws_.root.scales;
  }
  RH_BRICK_SCOPE(prof_, EngineBrick::info_update, dim_ * dim_, dim_ * dim_ * sizeof(T),
                 2 * dim_ * dim_);
  triangle_information(stacked, n, rhs, d, std::move(scales), linear, out.factor.data(),
                       out.vector.data());
  return batch;
}

#define RH_SQUARE_ROOT_INSTANTIATE(T)                                                           \
  template void BatchOps<T>::square_root_history();                                             \
  template void BatchOps<T>::stack_below(T*, std::size_t);                                      \
  template std::uint8_t BatchOps<T>::pattern_class(std::size_t) const;                          \
  template bool BatchOps<T>::pattern_repeats();                                                 \
  template void BatchOps<T>::keep_step_factorization(const std::vector<double>&);               \
  template bool BatchOps<T>::at_step_pattern();                                                 \
  template SquareRootStep BatchOps<T>::square_root_step(double, Vector&);                       \
  template InferenceSums BatchOps<T>::square_root_information(const InformationRequest&,        \
                                                              SquareRootOutputs<T>);
RH_SQUARE_ROOT_INSTANTIATE(float)
RH_SQUARE_ROOT_INSTANTIATE(double)
#undef RH_SQUARE_ROOT_INSTANTIATE

}  // namespace rh::cpu
