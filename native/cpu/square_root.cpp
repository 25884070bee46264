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
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "batch_ops.hpp"
#include "blas.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/error.hpp"
#include "rh/ladder.hpp"

namespace rh::cpu {
namespace {

// tpqrt's block size. Its panel (level-2) work grows with nb but so does the blocked update's
// reuse; on a cache-sized chunk of rows (a few hundred) under a 91-column triangle, OpenBLAS's
// tpqrt ran 1.5x faster with nb = 8 than with 32 (docs/perf/experiments.jsonl, qr-tpqrt-block).
std::size_t reflector_block(std::size_t columns) { return std::min<std::size_t>(8, columns); }

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

void check_info(blas::lapack_index info, const char* routine) {
  if (info < 0) {
    throw std::logic_error(std::string("internal error: LAPACK ") + routine +
                           " rejected argument " + std::to_string(-info));
  }
}

// The triangle of the stacked rows in equilibrated units: F = R_H S, s_j = 1/||column j|| of
// the stacked rows (the ladder's 1/sqrt(H_jj): H_jj is that squared norm; 1 where it is not a
// finite positive normal number), and the contract's rank test.
template <std::floating_point T>
struct EquilibratedFactor {
  std::size_t d;
  std::vector<T> scales;  // s: the columns were scaled by these before the QR
  std::vector<T> factor;  // F = R_H S, d x d column-major
  bool deficient;         // a diagonal entry of F at or below eps(T) d max|diag F|

  // `stacked` is the QR's n x n result (n = ld: d + 1 or d + 2 columns) of rows whose columns
  // were scaled by `scales`.
  EquilibratedFactor(const T* stacked, std::size_t d_, std::size_t ld, std::vector<T> scales_)
      : d(d_), scales(std::move(scales_)), factor(d_ * d_, T{0}) {
    const std::size_t n = ld;
    double largest = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i <= j; ++i) factor[j * d + i] = stacked[j * n + i];
      largest = std::max(largest, std::fabs(static_cast<double>(factor[j * d + j])));
    }
    const double cut = std::numeric_limits<T>::epsilon() * static_cast<double>(d) * largest;
    deficient = !(largest > 0.0);
    for (std::size_t j = 0; j < d && !deficient; ++j) {
      deficient = std::fabs(static_cast<double>(factor[j * d + j])) <= cut;
    }
  }
};

// s_j = 1/sqrt(sum of squares of column j), as the ladder's equilibration_scales takes H_jj.
template <std::floating_point T>
std::vector<T> column_scales(const std::vector<double>& squares) {
  std::vector<T> scales(squares.size());
  for (std::size_t j = 0; j < squares.size(); ++j) scales[j] = static_cast<T>(squares[j]);
  equilibration_scales(std::span<T>(scales));
  return scales;
}

// The SVD F = U diag(sigma) V^T of a rank-deficient F, singular values at most eps(T) d sigma_max
// cut: the minimum-norm solutions of the model, through its pseudo-inverse.
template <std::floating_point T>
struct FactorSvd {
  std::size_t d;
  std::vector<T> u, vt, sigma;
  std::size_t rank = 0;

  FactorSvd(const std::vector<T>& factor, std::size_t d_, SquareRootBuffers<T>& buffers)
      : d(d_), u(d_ * d_), vt(d_ * d_), sigma(d_) {
    std::vector<T> a = factor;
    const auto n = static_cast<blas::lapack_index>(d);
    T size = 0;
    check_info(blas::gesvd(n, a.data(), sigma.data(), u.data(), vt.data(), &size, -1), "gesvd");
    buffers.svd_work.resize(std::max<std::size_t>(1, static_cast<std::size_t>(size)));
    const blas::lapack_index info =
        blas::gesvd(n, a.data(), sigma.data(), u.data(), vt.data(), buffers.svd_work.data(),
                    static_cast<blas::lapack_index>(buffers.svd_work.size()));
    check_info(info, "gesvd");
    if (info > 0) throw NumericalError("the SVD of the square-root Newton system did not converge");
    const double cut = std::numeric_limits<T>::epsilon() * static_cast<double>(d) *
                       static_cast<double>(sigma[0]);
    while (rank < d && static_cast<double>(sigma[rank]) > cut) ++rank;
  }
  double U(std::size_t i, std::size_t k) const { return u[k * d + i]; }
  double V(std::size_t i, std::size_t k) const { return vt[i * d + k]; }  // V = (V^T)^T
};

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
  root.chunk_rows.resize(blocks * ld * n);
  root.reflectors.resize(blocks * nb * n);
  root.work.resize(blocks * nb * n);
  root.linear_partials.resize(blocks * dim_);
  root.kept_rows.resize(blocks * chunk_);
  root.row_scales.resize(blocks * chunk_);
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
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = i; j < dim_; ++j) {
      const auto value = static_cast<double>(factor_[i * dim_ + j]);
      squares[j] += value * value;
    }
  }
  root.scales = column_scales<T>(squares);
  const T* scales = root.scales.data();
  for_each_block([&](std::size_t b) {
    T* triangle = root.block_triangles.data() + b * n * n;
    std::fill_n(triangle, n * n, T{0});
    T* rows = root.chunk_rows.data() + b * ld * n;
    T* reflectors = root.reflectors.data() + b * nb * n;
    T* work = root.work.data() + b * nb * n;
    double* partial = root.linear_partials.data() + b * dim_;
    std::fill_n(partial, dim_, 0.0);
    std::size_t* kept = root.kept_rows.data() + b * chunk_;
    T* row_scales = root.row_scales.data() + b * chunk_;
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
        check_info(blas::tpqrt(static_cast<blas::lapack_index>(buffered), static_cast<blas::lapack_index>(n),
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
      check_info(blas::tpqrt(static_cast<blas::lapack_index>(n), static_cast<blas::lapack_index>(n),
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
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = i; j < dim_; ++j) {
      root.below_rows[j * n + i] = factor_[i * dim_ + j] * scales[j];
    }
    root.below_rows[dim_ * n + i] =
        residual_rhs ? static_cast<T>(-root.history_residual[i]) : vector_[i];
    if (second) root.below_rows[(dim_ + 1) * n + i] = vector_[i];
  }
  stack_below(root.below_rows.data(), n);
  // A non-finite triangle has no usable step, and LAPACK's SVD must not see it (it can loop
  // forever on one: rh/ladder.hpp).
  for (const T value : root.stacked) {
    if (!std::isfinite(value)) {
      throw NumericalError(std::string("the stacked rows of the square-root information are not "
                                       "finite in ") +
                           (sizeof(T) == 4 ? "float32" : "float64") +
                           ": rescale the columns of X, y or the sample weights");
    }
  }
  linear.assign(dim_, 0.0);
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t j = 0; j < dim_; ++j) linear[j] += root.linear_partials[b * dim_ + j];
  }
}

template <std::floating_point T>
void BatchOps<T>::stack_below(T* rows, std::size_t m) {
  const std::size_t n = ws_.root.stacked_columns;
  const std::size_t nb = reflector_block(n);
  check_info(blas::tpqrt(static_cast<blas::lapack_index>(m), static_cast<blas::lapack_index>(n),
                         0, static_cast<blas::lapack_index>(nb), ws_.root.stacked.data(),
                         static_cast<blas::lapack_index>(n), rows,
                         static_cast<blas::lapack_index>(m), ws_.root.reflectors.data(),
                         static_cast<blas::lapack_index>(nb), ws_.root.work.data()),
             "tpqrt");
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
  const std::size_t d = dim_;
  const std::size_t n = ws_.root.stacked_columns;
  const T* q = ws_.root.stacked.data() + d * n;
  EquilibratedFactor<T> f(ws_.root.stacked.data(), d, n, ws_.root.scales);
  keep_step_factorization(linear);
  // With a ridge, as in the Cholesky mode (rh/newton.hpp), the undamped factor decides first:
  // a rank-deficient one takes its minimum-norm step undamped; otherwise the rows
  // sqrt(ridge) [I | beta] join it, one more QR of d rows.
  if (ridge > 0.0 && !f.deficient) {
    // In equilibrated units: sqrt(ridge) s_j on the diagonal; then the damped columns'
    // equilibration composed with the first.
    const auto root_ridge = static_cast<T>(std::sqrt(ridge));
    ws_.root.below_rows.assign(d * n, T{0});
    for (std::size_t j = 0; j < d; ++j) {
      ws_.root.below_rows[j * d + j] = root_ridge * f.scales[j];
      // (right-hand side sqrt(ridge) (beta - beta) = 0)
    }
    stack_below(ws_.root.below_rows.data(), d);
    std::vector<double> squares(d, 0.0);
    T* stacked = ws_.root.stacked.data();
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i <= j; ++i) {
        const auto value = static_cast<double>(stacked[j * n + i]);
        squares[j] += value * value;
      }
    }
    const std::vector<T> damped = column_scales<T>(squares);
    std::vector<T> composed(d);
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i <= j; ++i) stacked[j * n + i] *= damped[j];
      composed[j] = f.scales[j] * damped[j];
    }
    f = EquilibratedFactor<T>(stacked, d, n, std::move(composed));
  }
  const auto ld = static_cast<blas::lapack_index>(d);
  std::vector<T> scaled_linear(d);
  for (std::size_t j = 0; j < d; ++j) {
    scaled_linear[j] = static_cast<T>(static_cast<double>(f.scales[j]) * linear[j]);
  }
  if (!f.deficient) {
    // The model's minimizer, as a step u: F^T v = S c, then F u = q + v; the step S u.
    std::vector<T> u = scaled_linear;
    bool solved = blas::trtrs(true, ld, f.factor.data(), ld, u.data()) == 0;
    if (solved) {
      for (std::size_t j = 0; j < d; ++j) u[j] += q[j];
      solved = blas::trtrs(false, ld, f.factor.data(), ld, u.data()) == 0;
    }
    bool finite = solved;
    for (std::size_t j = 0; j < d && finite; ++j) {
      out[j] = f.scales[j] * u[j];
      finite = std::isfinite(out[j]);
    }
    if (finite) {
      T rcond = 0;
      ws_.root.condition_work.resize(3 * d);
      ws_.root.condition_iwork.resize(d);
      check_info(blas::trcon(ld, f.factor.data(), ld, &rcond, ws_.root.condition_work.data(),
                             ws_.root.condition_iwork.data()),
                 "trcon");
      const auto r = static_cast<double>(rcond);
      return {.rung = Solver::qr, .rcond = r * r, .rank = d};
    }
  }
  // The minimum-norm step of the model (as the ladder's SVD rung takes it):
  // min 1/2 ||F t - q||^2 - (S c)^T t, t = V Sigma+ (U^T q + Sigma+ V^T S c), the step S t.
  const FactorSvd<T> svd(f.factor, d, ws_.root);
  std::vector<double> t(d, 0.0);
  for (std::size_t k = 0; k < svd.rank; ++k) {
    double left = 0.0;
    double right = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      left += svd.U(i, k) * static_cast<double>(q[i]);
      right += svd.V(i, k) * static_cast<double>(scaled_linear[i]);
    }
    const auto sigma = static_cast<double>(svd.sigma[k]);
    const double coefficient = (left + right / sigma) / sigma;
    for (std::size_t i = 0; i < d; ++i) t[i] += svd.V(i, k) * coefficient;
  }
  for (std::size_t j = 0; j < d; ++j) out[j] = static_cast<T>(static_cast<double>(f.scales[j]) * t[j]);
  return {.rung = Solver::svd, .rcond = 0.0, .rank = svd.rank};
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
  const EquilibratedFactor<T> f(stacked, d, n, std::move(scales));
  // z~ = q + R_H^-T c, so that 1/2 ||R~ beta - z~||^2 = 1/2 ||R_H beta - q||^2 - c^T beta + const:
  // R_H^T v = c is F^T v = S c (a rank-deficient F: the minimum-norm v).
  std::vector<double> v(d, 0.0);
  bool solved = false;
  if (!f.deficient) {
    std::vector<T> solution(d);
    for (std::size_t j = 0; j < d; ++j) {
      solution[j] = static_cast<T>(static_cast<double>(f.scales[j]) * linear[j]);
    }
    const auto ld = static_cast<blas::lapack_index>(d);
    solved = blas::trtrs(true, ld, f.factor.data(), ld, solution.data()) == 0;
    for (std::size_t j = 0; j < d && solved; ++j) {
      v[j] = static_cast<double>(solution[j]);
      solved = std::isfinite(v[j]);
    }
  }
  if (!solved) {  // v = (F^T)+ S c = U Sigma+ V^T S c
    const FactorSvd<T> svd(f.factor, d, ws_.root);
    std::fill(v.begin(), v.end(), 0.0);
    for (std::size_t k = 0; k < svd.rank; ++k) {
      double right = 0.0;
      for (std::size_t i = 0; i < d; ++i) {
        right += svd.V(i, k) * static_cast<double>(f.scales[i]) * linear[i];
      }
      const double coefficient = right / static_cast<double>(svd.sigma[k]);
      for (std::size_t i = 0; i < d; ++i) v[i] += svd.U(i, k) * coefficient;
    }
  }
  // In the data's units (F S^-1), the rows of a negative diagonal entry negated (R~ and z~
  // together): diagonal >= 0.
  for (std::size_t i = 0; i < d; ++i) {
    const T sign = stacked[i * n + i] < T{0} ? T{-1} : T{1};
    for (std::size_t j = 0; j < i; ++j) out.factor[i * d + j] = T{0};
    for (std::size_t j = i; j < d; ++j) {
      out.factor[i * d + j] = sign * (stacked[j * n + i] / f.scales[j]);
    }
    out.vector[i] = sign * static_cast<T>(static_cast<double>(stacked[rhs * n + i]) + v[i]);
  }
  return batch;
}

#define RH_SQUARE_ROOT_INSTANTIATE(T)                                                           \
  template void BatchOps<T>::square_root_history();                                             \
  template void BatchOps<T>::stack_below(T*, std::size_t);                                      \
  template std::uint8_t BatchOps<T>::pattern_class(std::size_t) const;                          \
  template bool BatchOps<T>::pattern_repeats();                                                 \
  template void BatchOps<T>::keep_step_factorization(const std::vector<double>&);               \
  template bool BatchOps<T>::at_step_pattern();                                           \
  template SquareRootStep BatchOps<T>::square_root_step(double, Vector&);                       \
  template InferenceSums BatchOps<T>::square_root_information(const InformationRequest&,        \
                                                              SquareRootOutputs<T>);
RH_SQUARE_ROOT_INSTANTIATE(float)
RH_SQUARE_ROOT_INSTANTIATE(double)
#undef RH_SQUARE_ROOT_INSTANTIATE

}  // namespace rh::cpu
