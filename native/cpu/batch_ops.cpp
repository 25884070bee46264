#include "batch_ops.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "blas.hpp"
#include "gram_kernel.hpp"
#include "row_dots.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/validation.hpp"
#include "row_kernels.hpp"
#include "thread_rows.hpp"

namespace rh::cpu {


template <std::floating_point T>
BatchOps<T>::BatchOps(Workspace<T>& workspace, ThreadPool& pool, const StateView<T>& previous,
                      MatrixView<T> X, std::span<const T> y, std::span<const T> sample_weight,
                      bool fit_intercept, rh::bricks::Profiler& profiler, bool scan_design,
                      GramStrategy gram, std::size_t chunk_bytes, bool diagonal_in_pass,
                      bool unit_weights)
    : ws_(workspace),
      pool_(pool),
      prof_(profiler),
      X_(X),
      y_(y),
      weights_(sample_weight),
      previous_coef_(previous.coef),
      previous_information_(previous.information),
      factor_(previous.information_factor),
      vector_(previous.information_vector),
      square_root_(previous.square_root()),
      intercept_(fit_intercept),
      scan_design_(scan_design),
      features_(X.cols),
      dim_(X.cols + (fit_intercept ? 1 : 0)),
      blocks_(X.rows),
      parallel_(runs_on_pool(X.rows, X.cols)),
      own_score_(X.rows * (X.cols + 1) >= min_own_score_entries),
      gram_strategy_(gram),
      thin_gram_(gram::use_kernel<T>(dim_)),
      chunk_(chunk_rows(X.rows, X.cols, sizeof(T), chunk_bytes)),
      diagonal_in_pass_(diagonal_in_pass),
      information64_(nullptr),
      effective_weight_(previous.effective_weight),
      history_weight_(static_cast<double>(
          static_cast<T>(previous.effective_weight * previous.previous_lambda))),
      current_(dim_, T{0}),
      residual_point_(dim_, T{0}),
      projected_steps_(phi_trials_per_pass, Vector(dim_, T{0})),
      prepared_point_(dim_, T{0}),
      expansion_allowed_(X.rows * (X.cols + 1) >= min_expansion_entries && !square_root_) {
  ws_.point.curvature_stamp = 0;  // an earlier batch's stamps say nothing of this one
  ws_.prepared.curvature_stamp = 0;
  // unit_weights: the caller's scan found every weight 1 (rh::ValueScan), whose sum is exact.
  ws_.scale_guess.unit_weights = unit_weights;
  if (unit_weights) {
    weight_sum_ = static_cast<double>(weights_.size());
  } else {
    LaneSum weights;  // by rows' lanes: vectorized, and exact for integer weights as before
    weights.add(weights_.data(), 0, weights_.size());
    weight_sum_ = weights.total();
  }
  if constexpr (std::same_as<T, double>) {
    information64_ = previous_information_.data();
  } else {
    std::copy(previous_information_.begin(), previous_information_.end(),
              ws_.information64.begin());
    information64_ = ws_.information64.data();
  }
  for (std::size_t j = 0; j < dim_; ++j) {
    const T coef = previous_coef_[j];
    ws_.history_sign[j] = j < features_ ? static_cast<T>((coef > T{0}) - (coef < T{0})) : T{0};
  }
}

// --- coefficient-sized vectors -----------------------------------------------------------------

template <std::floating_point T>
void BatchOps<T>::assign(std::span<const T> host, Vector& out) const {
  out.assign(host.begin(), host.end());
}

template <std::floating_point T>
void BatchOps<T>::copy_to_host(const Vector& v, std::span<T> host) const {
  RH_BRICK_SCOPE(prof_, EngineBrick::transfer, v.size(), 2 * v.size() * sizeof(T), 0);
  std::copy(v.begin(), v.end(), host.begin());
}

template <std::floating_point T>
void BatchOps<T>::scale(double factor, Vector& out) const {
  const auto f = static_cast<T>(factor);
  for (T& value : out) value *= f;
}

template <std::floating_point T>
void BatchOps<T>::axpy(double factor, const Vector& v, Vector& out) const {
  const auto f = static_cast<T>(factor);
  for (std::size_t j = 0; j < dim_; ++j) out[j] += f * v[j];
}

template <std::floating_point T>
double BatchOps<T>::dot(const Vector& a, const Vector& b) const {
  double sum = 0.0;
  for (std::size_t j = 0; j < dim_; ++j) {
    sum += static_cast<double>(a[j]) * static_cast<double>(b[j]);
  }
  return sum;
}

template <std::floating_point T>
double BatchOps<T>::norm_inf(const Vector& v) const {
  double norm = 0.0;
  for (const T value : v) norm = std::max(norm, std::fabs(static_cast<double>(value)));
  return norm;
}

template <std::floating_point T>
void BatchOps<T>::soft_threshold(const Vector& z, double level, Vector& out) const {
  RH_BRICK_SCOPE(prof_, EngineBrick::prox, dim_, 2 * dim_ * sizeof(T), 2 * dim_);
  const auto threshold = static_cast<T>(level);
  for (std::size_t j = 0; j < features_; ++j) {
    const T shrunk = std::max(std::fabs(z[j]) - threshold, T{0});
    out[j] = z[j] < T{0} ? -shrunk : shrunk;
  }
  if (intercept_) out[features_] = z[features_];  // the intercept is never penalized
}

// --- per-row passes ----------------------------------------------------------------------------

template <std::floating_point T>
bool BatchOps<T>::scan_design_rows(std::size_t lo, std::size_t hi) const {
  const std::size_t values = (hi - lo) * features_;
  RH_BRICK_SCOPE(prof_, EngineBrick::validate, values, values * sizeof(T), 0);
  return any_non_finite_rows(X_.row(lo), values);
}

// A non-finite x_ij makes its row's product x~ . beta non-finite at a finite beta (inf times a
// non-zero coefficient is inf, times zero NaN; NaN stays NaN; no sum of those is finite), and so
// the row's residual: X's values need a scan only on the rows of a chunk whose residual is not
// finite (an overflow of finite values too, which the scan then clears). The product reads the
// chunk anyway; a scan of every chunk would read it once more (~7 % of a steady batch).
template <std::floating_point T>
bool BatchOps<T>::product_rows_non_finite(std::size_t lo, std::size_t hi, const T* residual) const {
  return any_non_finite_rows(residual + lo, hi - lo) && scan_design_rows(lo, hi);
}

template <std::floating_point T>
void BatchOps<T>::finish_design_scan(bool found) {
  if (found) require_finite_design(X_);  // locates the first one and throws
  scan_design_ = false;
}

template <std::floating_point T>
void BatchOps<T>::require_design_scanned() const {
  if (scan_design_) throw std::logic_error("BatchOps: a pass read X before its values were scanned");
}

template <std::floating_point T>
void BatchOps<T>::residual_rows(const T* beta, std::size_t begin, std::size_t end, T* out,
                                bool with_norms) const {
  if (with_norms) {
    T* squares = thread_rows<RowSquares, T>(end - begin);
    row_dots_and_squares(X_.row(begin), end - begin, features_, beta, out + begin, squares);
    finish_squared_norms(squares, end - begin, features_, intercept_, ws_.row_norms.data() + begin);
  } else {
    row_dots(X_.row(begin), end - begin, features_, beta, out + begin);
  }
  const T offset = intercept_ ? beta[features_] : T{0};
  for (std::size_t i = begin; i < end; ++i) out[i] = y_[i] - (out[i] + offset);
}

template <std::floating_point T>
void BatchOps<T>::residuals_to_host(const Vector& beta, std::span<T> out) {
  form_residuals(beta, out.data());
}

template <std::floating_point T>
std::span<const T> BatchOps<T>::host_residuals(const Vector& beta) {
  form_residuals(beta, nullptr);
  return {ws_.point.residual.data(), X_.rows};
}

template <std::floating_point T>
void BatchOps<T>::form_residuals(const Vector& beta, T* out) {
  if (point_valid_ && beta == current_) {
    // The last evaluation's point (the pilot's final one, for the first batch's scale): its
    // residual is in ws_.point already (formed now if the point was evaluated by expansion),
    // and the evaluation stays valid.
    materialize_point();
    if (out != nullptr) std::copy_n(ws_.point.residual.begin(), X_.rows, out);
    return;
  }
  // Into ws_.point.residual as well: an evaluation at beta (the solve's first, usually) takes it
  // from there. The calls that refer to the current point need an evaluate() after this.
  T* residual = ws_.point.residual.data();
  // At beta = +0 (the first batch's y) the residual is y bit for bit wherever X is finite (each
  // product is a signed zero, y - (+0) = y), and a non-finite X throws after the pass: no product.
  const bool at_zero = std::all_of(beta.begin(), beta.end(),
                                   [](T v) { return v == T{0} && !std::signbit(v); });
  std::atomic<bool> non_finite{false};
  // The rows' norms for steps by expansion come with the products (the pass reads X from memory).
  const bool with_norms = expansion_enabled() && !row_norms_ready_ && !at_zero;
  if (with_norms && ws_.row_norms.size() < X_.rows) ws_.row_norms.resize(X_.rows);
  for_each_block([&](std::size_t b) {
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      // At zero no product reads X: the scan does.
      if (scan_design_ && at_zero && scan_design_rows(lo, hi)) {
        non_finite.store(true, std::memory_order_relaxed);
      }
      {
        const std::size_t rows = hi - lo;
        RH_BRICK_SCOPE(prof_, EngineBrick::residual, rows * dim_,
                       (rows * (features_ + 3)) * sizeof(T), 2 * rows * dim_);
        if (at_zero) {
          std::copy(y_.begin() + static_cast<std::ptrdiff_t>(lo),
                    y_.begin() + static_cast<std::ptrdiff_t>(hi), residual + lo);
        } else {
          residual_rows(beta.data(), lo, hi, residual, with_norms);
        }
      }
      if (scan_design_ && !at_zero && product_rows_non_finite(lo, hi, residual)) {
        non_finite.store(true, std::memory_order_relaxed);
      }
      if (out != nullptr) std::copy(residual + lo, residual + hi, out + lo);  // from cache
    });
  });
  finish_design_scan(non_finite.load());
  if (with_norms) row_norms_ready_ = true;
  point_valid_ = false;  // ws_.point.residual overwritten, the rest of ws_.point stale
  point_expansion_.active = false;
  segment_.valid = false;
  residual_point_ = beta;
  residual_known_ = true;
  projected_count_ = 0;
}

template <std::floating_point T>
int BatchOps<T>::slot_reaching(const Vector& point) const {
  for (std::size_t k = 0; k < projected_count_; ++k) {
    const Vector& step = projected_steps_[k];
    bool reaches = true;
    for (std::size_t j = 0; j < dim_ && reaches; ++j) {
      reaches = residual_point_[j] + step[j] == point[j];
    }
    if (reaches) return static_cast<int>(k);
  }
  return -1;
}

template <std::floating_point T>
typename BatchOps<T>::ResidualSource BatchOps<T>::residual_source(const Vector& point,
                                                                  bool into_current) const {
  if (!residual_known_) return {};
  if (into_current && point == residual_point_) return {.kind = ResidualSource::known};
  const int slot = slot_reaching(point);
  if (slot < 0) return {};
  return {.kind = ResidualSource::step, .projection = projection(static_cast<std::size_t>(slot))};
}

// r(beta + s) = r(beta) - X~ s: a subtraction per row instead of a product with X~. The
// subtraction's rounding is eps |r(beta)|, so it is only as accurate as the product where the new
// residual keeps most of the old one's magnitude. Where it cancels (|r(beta)| > 64 |r(beta + s)|:
// a first step from far away, a batch on another scale than the stream so far) the row takes the
// product y - x~ beta instead; else a batch 1e11 times the stream's scale moved the intercept by
// 1e-6 (docs/numerics.md). The choice is per row, so it does not depend on the chunking.
template <std::floating_point T>
void BatchOps<T>::stepped_residual_rows(const T* beta, const T* projection, std::size_t lo,
                                        std::size_t hi, T* residual) const {
  constexpr T max_cancellation = 64;
  const T* known = ws_.point.residual.data();
  std::size_t product_from = hi;  // first row of the pending run of rows taking the product
  for (std::size_t i = lo; i < hi; ++i) {
    const T stepped = known[i] - projection[i];
    if (std::abs(known[i]) <= max_cancellation * std::abs(stepped)) {
      if (product_from < i) residual_rows(beta, product_from, i, residual);
      product_from = hi;
      residual[i] = stepped;
    } else if (product_from == hi) {
      product_from = i;  // also when either is NaN: the product decides
    }
  }
  if (product_from < hi) residual_rows(beta, product_from, hi, residual);
}

template <std::floating_point T>
void BatchOps<T>::evaluate_rows(const T* beta, const ResidualSource& source, std::size_t lo,
                                std::size_t hi, PointRows<T>& point, T* scores, T* partial,
                                LaneSum& score_sum) const {
  const std::size_t rows = hi - lo;
  // Three back-to-back bricks: phases share one clock reading per boundary.
  RH_BRICK_PHASES(phases, prof_);
  RH_BRICK_NEXT_PHASE(phases, EngineBrick::residual, rows * dim_,
                      (rows * (features_ + 2)) * sizeof(T), 2 * rows * dim_);
  T* residual = point.residual.data();
  if (source.kind == ResidualSource::product) {
    residual_rows(beta, lo, hi, residual);
  } else if (source.kind == ResidualSource::step) {
    stepped_residual_rows(beta, source.projection, lo, hi, residual);
  }

  RH_BRICK_NEXT_PHASE(phases, EngineBrick::huber, rows, 4 * rows * sizeof(T), 8 * rows);
  huber_rows(residual + lo, weights_.data() + lo, rows, tau_, scores,
             point.weighted_curvature.data() + lo);
  score_sum.add(scores, lo, rows);

  RH_BRICK_NEXT_PHASE(phases, EngineBrick::score, rows * dim_, rows * sizeof(T),
                      2 * rows * dim_);
  if (own_score_) {
    add_weighted_rows(X_.row(lo), rows, features_, scores, partial);
  } else {
    blas::gemv(true, rows, features_, T{1}, X_.row(lo), features_, scores, T{1}, partial);
  }
}

template <std::floating_point T>
void BatchOps<T>::add_weighted_squares(std::size_t lo, std::size_t hi, double* columns) const {
  // Column by column within a row: independent sums, so the loop vectorizes.
  for (std::size_t i = lo; i < hi; ++i) {
    const T* row = X_.row(i);
    const auto weight = static_cast<double>(weights_[i]);
    for (std::size_t j = 0; j < features_; ++j) {
      const auto value = static_cast<double>(row[j]);
      columns[j] += weight * (value * value);
    }
  }
}

template <std::floating_point T>
double BatchOps<T>::finish_diagonal_mean() const {
  double trace = intercept_ ? weight_sum_ : 0.0;  // the intercept column's sum w * 1
  for (std::size_t b = 0; b < blocks_.count(); ++b) {
    const double* columns = ws_.diagonal_partials.data() + b * features_;
    for (std::size_t j = 0; j < features_; ++j) trace += columns[j];
  }
  for (std::size_t j = 0; j < dim_; ++j) trace += information64_[j * dim_ + j];
  return trace / static_cast<double>(dim_);
}

template <std::floating_point T>
double BatchOps<T>::diagonal_mean() {
  if (!diagonal_mean_) {  // no evaluation pass formed it: a pass of its own
    require_design_scanned();
    ws_.diagonal_partials.assign(blocks_.count() * features_, 0.0);
    for_each_block([&](std::size_t b) {
      double* columns = ws_.diagonal_partials.data() + b * features_;
      for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
        RH_BRICK_SCOPE(prof_, EngineBrick::score, (hi - lo) * features_,
                       (hi - lo) * (features_ + 1) * sizeof(T), 3 * (hi - lo) * features_);
        add_weighted_squares(lo, hi, columns);
      });
    });
    diagonal_mean_ = finish_diagonal_mean();
  }
  return *diagonal_mean_;
}

template <std::floating_point T>
void BatchOps<T>::evaluate_pass(const T* beta, const ResidualSource& source,
                                PointRows<T>& point, const T* project_step, bool with_gram) {
  // One pass over X per block, chunk by chunk: the first product on a chunk (a step's
  // projection, the residual's, or else the score's) brings its rows into cache, and what follows
  // on the chunk (psi, curvature and loss, the score product X^T (w psi), the Gram's scaled rows)
  // reads them from there, so X crosses the memory bus once per pass.
  std::atomic<bool> non_finite{false};
  // A first pass whose residuals are products scans X by them (product_rows_non_finite).
  const bool scan_by_residual = scan_design_ && source.kind == ResidualSource::product &&
                                project_step == nullptr;
  // The batch's diagonal_mean() from the chunks in cache, once, where the batch will ask for it.
  const bool with_diagonal = diagonal_in_pass_ && !diagonal_mean_;
  if (with_diagonal) ws_.diagonal_partials.assign(blocks_.count() * features_, 0.0);
  // The rows' norms for steps by expansion, once a batch, from the chunks in cache.
  const bool with_norms = expansion_enabled() && !row_norms_ready_;
  if (with_norms && ws_.row_norms.size() < X_.rows) ws_.row_norms.resize(X_.rows);
  // The outside rows' score, from cache, of a point that may anchor such steps.
  point.outside_formed = expansion_enabled();
  point.curvature_stamp = ++curvature_stamps_;
  expansion_of(point).curvature_anchor = 0;  // the pass writes every row's curvature
  if (with_gram) {
    // The blocks fold into ws_.gram as they finish: until reduce_gram it is no point's Gram (a
    // pass that throws, on a non-finite X, leaves none kept).
    gram_valid_ = false;
    start_gram_sums(1, {ws_.gram.data()});
  }
  for_each_block([&](std::size_t b) {
    T* partial = point.score_partials.data() + b * dim_;
    std::fill_n(partial, dim_, T{0});
    if (point.outside_formed) std::fill_n(point.outside_partials.data() + b * dim_, dim_, 0.0);
    LaneSum score_sum;
    BlockGram gram = with_gram ? block_gram(b) : BlockGram{};
    RowTrace row_trace;
    T* scores = thread_rows<Scores, T>(chunk_);  // w * psi of the chunk's rows
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      if (scan_design_ && !scan_by_residual && scan_design_rows(lo, hi)) {
        non_finite.store(true, std::memory_order_relaxed);
      }
      if (project_step != nullptr) project_rows(project_step, 0, lo, hi);
      evaluate_rows(beta, source, lo, hi, point, scores, partial, score_sum);
      if (scan_by_residual && product_rows_non_finite(lo, hi, point.residual.data())) {
        non_finite.store(true, std::memory_order_relaxed);
      }
      if (with_diagonal) {
        RH_BRICK_SCOPE(prof_, EngineBrick::score, (hi - lo) * features_, 0,
                       3 * (hi - lo) * features_);
        add_weighted_squares(lo, hi, ws_.diagonal_partials.data() + b * features_);
      }
      if (with_norms) {
        RH_BRICK_SCOPE(prof_, EngineBrick::score, (hi - lo) * features_, 0,
                       2 * (hi - lo) * features_);
        add_row_norms(lo, hi);
      }
      if (point.outside_formed) {
        add_outside_score(lo, hi, point.weighted_curvature.data(), scores,
                          point.outside_partials.data() + b * dim_);
      }
      if (tracing_) {  // the chunk's rows are still in cache
        row_trace.add_rows(point.residual.data() + lo, scores,
                           point.weighted_curvature.data() + lo, hi - lo);
      }
      if (with_gram) {
        add_gram_rows(gram, lo, hi, point.weighted_curvature.data(), EngineBrick::gram);
      }
    });
    if (with_gram) {
      finish_block_gram(gram, EngineBrick::gram);
      fold_block_gram(b, EngineBrick::gram);
    }
    if (tracing_) point.trace_partials[b] = row_trace;
    if (intercept_) partial[features_] = static_cast<T>(score_sum.total());
  });
  finish_design_scan(non_finite.load());
  if (with_diagonal) diagonal_mean_ = finish_diagonal_mean();
  if (with_norms) row_norms_ready_ = true;
  if (with_gram) reduce_gram(point);
}

template <std::floating_point T>
void BatchOps<T>::evaluate_point(const Vector& beta, double tau, bool with_gram) {
  prof_.set_iteration(evaluations_++);
  const auto tau_t = static_cast<T>(tau);
  // Nothing to compute when ws_.point already holds this very evaluation (same point, same
  // bandwidth): the driver evaluates the final point again for the information, and when the
  // last Newton step rounded away (beta + step == beta) that is the point just evaluated. A
  // Gram the pass would form is kept already (gram_valid_), or formed afresh from the same
  // curvature by form_hessian's full_gram (same bits as in the pass).
  const bool unchanged = point_valid_ && tau_t == tau_ && beta == current_ &&
                         (!with_gram || gram_valid_);
  tau_ = tau_t;
  if (unchanged) {
    // ws_.point, current_ and the history products below are this point's already.
  } else if (prepared_valid_ && tau_ == prepared_tau_ && beta == prepared_point_) {
    std::swap(ws_.point, ws_.prepared);  // computed by project_and_prepare, same arithmetic
    std::swap(point_expansion_, prepared_expansion_);
  } else if (auto offset = covered_offset(beta)) {
    evaluate_by_expansion(beta, std::move(*offset), ws_.point, point_expansion_);
  } else {
    if (point_expansion_.active) residual_known_ = false;  // ws_.point.residual is not its
    point_expansion_.active = false;
    segment_.valid = false;
    evaluate_pass(beta.data(), residual_source(beta, /*into_current=*/true), ws_.point, nullptr,
                  with_gram);
  }
  prepared_valid_ = false;
  point_valid_ = true;
  current_ = beta;
  // An expanded point's residuals are formed only when asked (materialize_point).
  residual_point_ = beta;
  residual_known_ = !point_expansion_.active;
  projected_count_ = 0;
  // J~ (beta - beta~), in T and in float64: the history part of the score.
  RH_BRICK_SCOPE(prof_, EngineBrick::score, 2 * dim_ * dim_,
                 dim_ * dim_ * (sizeof(T) + sizeof(double)), 4 * dim_ * dim_);
  for (std::size_t j = 0; j < dim_; ++j) {
    ws_.delta[j] = current_[j] - previous_coef_[j];
    ws_.delta64[j] = static_cast<double>(ws_.delta[j]);
  }
  if (square_root_) {
    square_root_history();
    return;
  }
  apply_information(ws_.delta.data(), ws_.information_delta.data());
  apply_information64(ws_.delta64.data(), ws_.information_delta64.data());
}

template <std::floating_point T>
void BatchOps<T>::gradient(Vector& out) {
  RH_BRICK_SCOPE(prof_, EngineBrick::score, blocks_.count() * dim_,
                 blocks_.count() * dim_ * sizeof(T), blocks_.count() * dim_ + 3 * dim_);
  std::copy_n(ws_.point.score_partials.begin(), dim_, ws_.score.begin());
  for (std::size_t b = 1; b < blocks_.count(); ++b) {
    const T* partial = ws_.point.score_partials.data() + b * dim_;
    for (std::size_t j = 0; j < dim_; ++j) ws_.score[j] += partial[j];
  }
  const auto history = static_cast<T>(history_weight_);
  for (std::size_t j = 0; j < dim_; ++j) {
    out[j] = -ws_.score[j] + ws_.information_delta[j] - history * ws_.history_sign[j];
  }
}

template <std::floating_point T>
void BatchOps<T>::trace_point(IterationTrace& record) const {
  RowTrace total;
  for (std::size_t b = 0; b < blocks_.count(); ++b) total.merge(ws_.point.trace_partials[b]);
  record.rows = static_cast<std::int64_t>(X_.rows);
  record.quadratic_rows = total.quadratic_rows;
  record.residual = total.residual;
  record.score = total.score;
}

template <std::floating_point T>
double BatchOps<T>::point_loss() {
  const T* residual = ws_.point.residual.data();
  for_each_block([&](std::size_t b) {
    LaneSum sum;
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      RH_BRICK_SCOPE(prof_, EngineBrick::huber, hi - lo, 2 * (hi - lo) * sizeof(T), 8 * (hi - lo));
      double* terms = thread_rows<LossTerms, double>(slice_rows);
      for_each_slice(lo, hi, [&](std::size_t a, std::size_t z) {
        loss_rows(residual + a, weights_.data() + a, z - a, static_cast<double>(tau_), terms);
        sum.add(terms, a, z - a);
      });
    });
    ws_.point.loss_partials[b] = sum.total();
  });
  double loss = 0.0;
  for (std::size_t b = 0; b < blocks_.count(); ++b) loss += ws_.point.loss_partials[b];
  return loss;
}

template <std::floating_point T>
double BatchOps<T>::objective(double lambda) {
  const double loss = point_expansion_.active ? expansion_loss() : point_loss();
  double quadratic = 0.0;
  double history = 0.0;
  double l1 = 0.0;
  for (std::size_t j = 0; j < dim_; ++j) {
    if (!square_root_) quadratic += ws_.delta64[j] * ws_.information_delta64[j];
    history += static_cast<double>(ws_.history_sign[j]) * ws_.delta64[j];
  }
  if (square_root_) {
    // h(beta) - h(beta~) of the history h = 1/2 ||R~ beta - z~||^2, so that Q keeps its
    // Cholesky-mode meaning: with u = R~ beta~ - z~ and a = R~ (beta - beta~), 2 u^T a + a^T a
    // (doubled, as the quadratic above is halved below), without the cancellation of the
    // difference of the two squares.
    for (std::size_t i = 0; i < dim_; ++i) {
      double a = 0.0;
      double u = -static_cast<double>(vector_[i]);
      for (std::size_t j = i; j < dim_; ++j) {
        const auto r = static_cast<double>(factor_[i * dim_ + j]);
        a += r * ws_.delta64[j];
        u += r * static_cast<double>(previous_coef_[j]);
      }
      quadratic += 2.0 * u * a + a * a;
    }
  }
  for (std::size_t j = 0; j < features_; ++j) l1 += std::fabs(static_cast<double>(current_[j]));
  return loss + 0.5 * quadratic - history_weight_ * history +
         (effective_weight_ + weight_sum_) * lambda * l1;
}

// --- the Newton system (the Gram it is formed from: gram_cache.cpp) ----------------------

template <std::floating_point T>
void BatchOps<T>::apply_information(const T* v, T* out) const {
  blas::gemv(false, dim_, dim_, T{1}, previous_information_.data(), dim_, v, T{0}, out);
}

template <std::floating_point T>
void BatchOps<T>::apply_information64(const double* v, double* out) const {
  blas::gemv(false, dim_, dim_, 1.0, information64_, dim_, v, 0.0, out);
}

template <std::floating_point T>
void BatchOps<T>::form_hessian(double ridge) {
  weighted_gram(EngineBrick::gram);
  RH_BRICK_SCOPE(prof_, EngineBrick::gram, dim_ * dim_, 3 * dim_ * dim_ * sizeof(T), dim_ * dim_);
  T* H = ws_.hessian.data();
  for (std::size_t k = 0; k < dim_ * dim_; ++k) H[k] = ws_.gram[k] + previous_information_[k];
  const auto damping = static_cast<T>(ridge);
  for (std::size_t j = 0; j < dim_; ++j) H[j * dim_ + j] += damping;
}

template <std::floating_point T>
void BatchOps<T>::hessian_diagonal(std::span<T> out) const {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_, 2 * dim_ * sizeof(T), 0);
  const T* H = ws_.hessian.data();
  for (std::size_t j = 0; j < dim_; ++j) out[j] = H[j * dim_ + j];
}

template <std::floating_point T>
void BatchOps<T>::equilibrate_hessian(std::span<const T> scales) {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, (2 * dim_ * dim_ + dim_) * sizeof(T),
                 2 * dim_ * dim_);
  T* H = ws_.hessian.data();
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j < dim_; ++j) {
      // s_i * s_j first: it rounds the same for (i, j) and (j, i), so symmetry survives.
      const T factor = scales[i] * scales[j];
      H[i * dim_ + j] *= factor;
    }
  }
}

template <std::floating_point T>
bool BatchOps<T>::hessian_symmetric() const {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T), 0);
  const T* H = ws_.hessian.data();
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (H[i * dim_ + j] != H[j * dim_ + i]) return false;
    }
  }
  return true;
}

template <std::floating_point T>
SolveAttempt BatchOps<T>::solve_cholesky(const Vector& rhs, Vector& out) {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                 dim_ * dim_ * dim_ / 3 + 2 * dim_ * dim_);
  return ws_.solver.cholesky(ws_.hessian.data(), rhs.data(), out.data());
}

template <std::floating_point T>
SolveAttempt BatchOps<T>::solve_lu(const Vector& rhs, Vector& out) {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                 2 * dim_ * dim_ * dim_ / 3 + 2 * dim_ * dim_);
  return ws_.solver.lu(ws_.hessian.data(), rhs.data(), out.data());
}

template <std::floating_point T>
std::size_t BatchOps<T>::solve_min_norm(const Vector& rhs, double rcond, Vector& out) {
  // SVD-based least squares: of the order of 4 d^3 flops.
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                 4 * dim_ * dim_ * dim_);
  return ws_.solver.min_norm(ws_.hessian.data(), rhs.data(), rcond, out.data());
}

// --- the objective along a step ----------------------------------------------------------------

template <std::floating_point T>
void BatchOps<T>::reserve_projection_slots(std::size_t slots) {
  if (ws_.projections.size() < slots * X_.rows) ws_.projections.resize(slots * X_.rows);
}

template <std::floating_point T>
void BatchOps<T>::remember_projected(std::span<const Vector> steps) {
  reserve_projection_slots(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) projected_steps_[k] = steps[k];
  projected_count_ = steps.size();
}

template <std::floating_point T>
void BatchOps<T>::project_rows(const T* step, std::size_t slot, std::size_t lo, std::size_t hi) {
  RH_BRICK_SCOPE(prof_, EngineBrick::line_search, hi - lo, (hi - lo) * (features_ + 1) * sizeof(T),
                 2 * (hi - lo) * dim_);
  T* a = projection(slot);
  row_dots(X_.row(lo), hi - lo, features_, step, a + lo);
  if (intercept_) {
    for (std::size_t i = lo; i < hi; ++i) a[i] += step[features_];
  }
}

template <std::floating_point T>
void BatchOps<T>::project(const Vector& step) {
  require_design_scanned();
  if (begin_segment(step)) {
    projected_count_ = 0;
    return;
  }
  materialize_point();  // the usual projection reads the point's residuals
  remember_projected(std::span<const Vector>(&step, 1));
  for_each_block([&](std::size_t b) {
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) { project_rows(step.data(), 0, lo, hi); });
  });
}

template <std::floating_point T>
void BatchOps<T>::project_and_prepare(const Vector& step, const Vector& candidate) {
  if (begin_segment(step)) {
    if (auto offset = covered_offset(candidate)) {
      evaluate_by_expansion(candidate, std::move(*offset), ws_.prepared, prepared_expansion_);
      prepared_point_ = candidate;
      prepared_tau_ = tau_;
      prepared_valid_ = true;
      projected_count_ = 0;
      return;
    }
    segment_.valid = false;
  }
  materialize_point();
  prepared_expansion_.active = false;
  remember_projected(std::span<const Vector>(&step, 1));
  prepared_point_ = candidate;
  prepared_tau_ = tau_;
  // Slot 0 is projected chunk by chunk before the chunk's evaluation, which may use it.
  evaluate_pass(candidate.data(), residual_source(candidate, /*into_current=*/false),
                ws_.prepared, step.data(), /*with_gram=*/false);
  prepared_valid_ = true;
}

template <std::floating_point T>
void BatchOps<T>::add_loss_change(LaneSum& sum, std::size_t slot, std::size_t lo, std::size_t hi,
                                  T factor) const {
  RH_BRICK_SCOPE(prof_, EngineBrick::line_search, hi - lo, 3 * (hi - lo) * sizeof(T),
                 12 * (hi - lo));
  // The terms first, vectorized (row_kernels.hpp); then their sum by rows' lanes, which fixes
  // the result bit for bit.
  double* terms = thread_rows<LossTerms, double>(slice_rows);
  for_each_slice(lo, hi, [&](std::size_t a, std::size_t z) {
    loss_change_rows(ws_.point.residual.data() + a, projection(slot) + a, weights_.data() + a,
                     z - a, factor, static_cast<double>(tau_), terms);
    sum.add(terms, a, z - a);
  });
}

// dQ_smooth(s) for s = t * step (docs/numerics.md): per-row Huber differences without
// cancellation, plus the exact change of the quadratic and linear history terms.
template <std::floating_point T>
double BatchOps<T>::objective_change(const Vector& step, double t) {
  const auto factor = static_cast<T>(t);
  if (segment_.valid && current_ == segment_.from_point && step == segment_.step) {
    return smooth_change(step, factor, expansion_loss_change(t));
  }
  for_each_block([&](std::size_t b) {
    LaneSum sum;
    add_loss_change(sum, 0, blocks_.begin(b), blocks_.end(b), factor);
    ws_.scratch_partials[b] = sum.total();
  });
  double loss_change = 0.0;
  for (std::size_t b = 0; b < blocks_.count(); ++b) loss_change += ws_.scratch_partials[b];
  return smooth_change(step, factor, loss_change);
}

template <std::floating_point T>
void BatchOps<T>::objective_changes(std::span<const Vector> steps, std::span<double> changes) {
  require_design_scanned();
  if (steps.size() > static_cast<std::size_t>(phi_trials_per_pass)) {
    throw std::logic_error("BatchOps::objective_changes: more steps than one pass takes");
  }
  materialize_point();
  segment_.valid = false;
  remember_projected(steps);
  const std::size_t count = steps.size();
  for_each_block([&](std::size_t b) {
    std::array<LaneSum, phi_trials_per_pass> sums{};
    // Step by step within a chunk, the chunk's rows staying in cache; each step's sum takes the
    // block's rows as objective_change's does, so the sums agree bit for bit.
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t k = 0; k < count; ++k) {
        project_rows(steps[k].data(), k, lo, hi);
        add_loss_change(sums[k], k, lo, hi, T{1});
      }
    });
    for (std::size_t k = 0; k < count; ++k) ws_.scratch_partials[b * count + k] = sums[k].total();
  });
  for (std::size_t k = 0; k < count; ++k) {
    double loss_change = 0.0;
    for (std::size_t b = 0; b < blocks_.count(); ++b) {
      loss_change += ws_.scratch_partials[b * count + k];
    }
    changes[k] = smooth_change(steps[k], T{1}, loss_change);
  }
}

template <std::floating_point T>
typename BatchOps<T>::HistoryChange BatchOps<T>::history_change(const Vector& step, T factor) {
  RH_BRICK_SCOPE(prof_, EngineBrick::line_search, dim_, dim_ * dim_ * sizeof(double),
                 2 * dim_ * dim_ + 8 * dim_);
  for (std::size_t j = 0; j < dim_; ++j) {
    ws_.trial64[j] = static_cast<double>(factor * step[j]);  // s is formed in T
  }
  if (square_root_) {
    // 1/2 ||R~ (beta + s) - z~||^2 - 1/2 ||R~ beta - z~||^2 = u^T (R~ beta - z~) + 1/2 u^T u with
    // u = R~ s, from the factor itself (R~^T R~ formed would square its condition).
    double cross = 0.0;
    double square = 0.0;
    double history = 0.0;
    for (std::size_t i = 0; i < dim_; ++i) {
      double u = 0.0;
      for (std::size_t j = i; j < dim_; ++j) {
        u += static_cast<double>(factor_[i * dim_ + j]) * ws_.trial64[j];
      }
      cross += u * ws_.root.history_residual[i];
      square += u * u;
      history += static_cast<double>(ws_.history_sign[i]) * ws_.trial64[i];
    }
    return {.quadratic = cross + 0.5 * square, .linear = history_weight_ * history};
  }
  apply_information64(ws_.trial64.data(), ws_.information_trial64.data());
  double delta_j_s = 0.0;
  double s_j_delta = 0.0;
  double s_j_s = 0.0;
  double history = 0.0;
  for (std::size_t j = 0; j < dim_; ++j) {
    const double s = ws_.trial64[j];
    delta_j_s += ws_.delta64[j] * ws_.information_trial64[j];
    s_j_delta += s * ws_.information_delta64[j];
    s_j_s += s * ws_.information_trial64[j];
    history += static_cast<double>(ws_.history_sign[j]) * s;
  }
  return {.quadratic = 0.5 * (delta_j_s + s_j_delta + s_j_s), .linear = history_weight_ * history};
}

template <std::floating_point T>
double BatchOps<T>::smooth_change(const Vector& step, T factor, double loss_change) {
  const HistoryChange history = history_change(step, factor);
  return loss_change + history.quadratic - history.linear;
}

// The step bound (refused_prefix) is in step_bound.cpp.

// --- the L1 model (proximal Newton) --------------------------------------------------------------

template <std::floating_point T>
double BatchOps<T>::l1_norm_change(const Vector& from, const Vector& to) const {
  double change = 0.0;
  for (std::size_t j = 0; j < features_; ++j) {
    change += std::fabs(static_cast<double>(to[j])) - std::fabs(static_cast<double>(from[j]));
  }
  return change;
}

// Cyclic coordinate descent on g^T s + 1/2 s^T H s + c ||(beta + s)_S||_1, in float64, keeping
// u = H s up to date column by column. Written here because LAPACK has no L1-penalized quadratic
// solver; at d <= a few hundred a sweep costs O(d) plus O(d) per coordinate that moves, far less
// than one pass over the batch. H is used as stored (J~ may be slightly asymmetric).
template <std::floating_point T>
bool BatchOps<T>::solve_l1_model(const Vector& gradient, const Vector& beta, double strength,
                                 double tolerance, Vector& out) {
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                 2 * dim_ * dim_);
  const T* H = ws_.hessian.data();
  for (std::size_t j = 0; j < dim_; ++j) {
    if (!(H[j * dim_ + j] > T{0})) return false;  // no curvature along j: no minimizer
  }
  // The model's quadratic form is that of the symmetric part of H (J~ as stored may not be
  // exactly symmetric), in float64 and row-major: each coordinate's move then updates H s along
  // one contiguous row, which vectorizes, where a column of H would be d strided loads.
  if (ws_.model_matrix.size() < dim_ * dim_) ws_.model_matrix.resize(dim_ * dim_);
  double* M = ws_.model_matrix.data();
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j < dim_; ++j) {
      M[i * dim_ + j] = 0.5 * (static_cast<double>(H[i * dim_ + j]) +
                               static_cast<double>(H[j * dim_ + i]));
    }
  }
  double* s = ws_.model_step.data();
  double* u = ws_.model_product.data();  // M s
  std::fill_n(s, dim_, 0.0);
  std::fill_n(u, dim_, 0.0);
  // One coordinate-descent update of coordinate j; returns |move| and sets `value` to the new
  // beta_j + s_j.
  const auto update = [&](std::size_t j, double& value) {
    const double curvature = M[j * dim_ + j];
    const double now = static_cast<double>(beta[j]) + s[j];
    double next = now - (static_cast<double>(gradient[j]) + u[j]) / curvature;
    if (j < features_) {  // the slopes are penalized, the intercept is not
      const double level = strength / curvature;
      next = std::copysign(std::max(std::fabs(next) - level, 0.0), next);
    }
    const double move = next - now;
    if (move != 0.0) {
      s[j] += move;
      const double* row = M + j * dim_;
      for (std::size_t i = 0; i < dim_; ++i) u[i] += move * row[i];
    }
    value = next;
    return std::fabs(move);
  };
  // Sweeps go over a working set: the coordinates that are non-zero, unpenalized, or whose
  // optimality at s = 0 fails (|g_j| > strength: the strong rule of a single lambda). A full
  // sweep over every coordinate is the KKT check: it ends the solve when nothing moves by more
  // than the tolerance, and otherwise makes the working set anew from what it moved or left
  // non-zero.
  std::vector<std::size_t>& working = ws_.model_working_set;
  working.clear();
  for (std::size_t j = 0; j < dim_; ++j) {
    if (j >= features_ || beta[j] != T{0} ||
        std::fabs(static_cast<double>(gradient[j])) > strength) {
      working.push_back(j);
    }
  }
  bool full = working.size() == dim_;
  double first_move = 0.0;  // the largest move of the first sweep
  double previous_move = 0.0;  // and of the sweep before the last
  double last_move = 0.0;
  bool exhausted = true;  // every sweep of the budget ran
  for (std::size_t sweep = 0; sweep < max_model_sweeps; ++sweep) {
    double largest_move = 0.0;
    double largest_value = 0.0;
    double value = 0.0;
    if (full) {
      working.clear();  // rebuilt: the coordinates this sweep leaves non-zero or moved
      for (std::size_t j = 0; j < dim_; ++j) {
        const double move = update(j, value);
        largest_move = std::max(largest_move, move);
        largest_value = std::max(largest_value, std::fabs(value));
        if (move != 0.0 || value != 0.0 || j >= features_) working.push_back(j);
      }
    } else {
      for (const std::size_t j : working) {
        largest_move = std::max(largest_move, update(j, value));
        largest_value = std::max(largest_value, std::fabs(value));
      }
    }
    if (sweep == 0) first_move = largest_move;
    previous_move = last_move;
    last_move = largest_move;
    const bool settled = largest_move <= std::max(tolerance * std::max(1.0, largest_value),
                                                  model_relative_tolerance * first_move);
    if (settled && full) {
      exhausted = false;
      break;
    }
    // A settled working set is checked by a full sweep; a full sweep that moved something goes
    // back to the working set unless that is every coordinate.
    full = settled || working.size() == dim_;
  }
  // Where the sweeps converge slowly (the last moved more than slow_model_sweep_ratio of the
  // one before, or the budget ran out: correlated columns far from centred), the step they
  // stopped at can be far short of the model's minimizer, even where a sweep's moves are below
  // the tolerance asked (a crawl moves little each sweep); from their pattern, the active-set
  // solve (l1_model.hpp) finds it. Where they converge fast their step is close already, and
  // the solve's d^3/3 would cost more than it saves.
  if (exhausted || last_move > slow_model_sweep_ratio * previous_move) {
    L1ModelBuffers& polish = ws_.model_polish;
    polish.gradient.resize(dim_);
    polish.beta.resize(dim_);
    for (std::size_t j = 0; j < dim_; ++j) {
      polish.gradient[j] = static_cast<double>(gradient[j]);
      polish.beta[j] = static_cast<double>(beta[j]);
    }
    // Its factorizations at most an eighth of the flops of the Gram that formed H (rows d^2 / 2,
    // which each iteration pays; LAPACK's Cholesky of a few hundred runs at a fraction of the
    // Gram kernel's rate), or 1e7 flops on a small batch: a 4,096 x 256 pilot, whose
    // nearly flat model the method did not finish in 42 faces, spent 19 ms on one iteration
    // with a whole Gram's worth.
    const double work = std::max(static_cast<double>(X_.rows) *
                                     static_cast<double>(dim_ * dim_) / 16.0, 1e7);
    polish_l1_model_step(M, dim_, features_, polish.gradient.data(), polish.beta.data(),
                         strength, s, polish, work);
  }
  for (std::size_t j = 0; j < dim_; ++j) out[j] = static_cast<T>(s[j]);
  return true;
}

// --- the information update and the inference sums ----------------------------------------------

template <std::floating_point T>
InferenceSums BatchOps<T>::information(const InformationRequest& request,
                                       InformationOutputs<T> out) {
  const bool smoothed = request.bandwidth > 0.0;
  const bool matrices = request.matrices;
  const std::size_t rows = X_.rows;
  const std::size_t square = dim_ * dim_;
  const std::size_t blocks = blocks_.count();
  // The Gram maintained through the solve, brought to this point's curvature set (usually that
  // of the last Newton matrix, so no flips at all): the indicator J_b, and what the smoothed
  // J_b and G_b differ from it by only on a few rows.
  weighted_gram(EngineBrick::info_update);
  if (smoothed || matrices) require_design_scanned();
  if (point_expansion_.active) {
    if (!smoothed && !matrices) {  // J_b is the kept Gram; the sums by expansion
      for (std::size_t k = 0; k < square; ++k) {
        out.information[k] = ws_.gram[k] + previous_information_[k];
      }
      return expansion_sums();
    }
    materialize_point();
  }
  // Sized on first use, by the streams that ask for a smoothed curvature (the band's row
  // weights) or the matrices (G's and K's): the others never hold these row vectors
  // (docs/native.md, "Memory").
  for (auto* buffer : {&ws_.band_added_weights, &ws_.band_removed_weights}) {
    if (smoothed && buffer->size() < rows) buffer->resize(rows);
  }
  for (auto* buffer : {&ws_.outlier_weights, &ws_.score_sq_weights}) {
    if (matrices && buffer->size() < rows) buffer->resize(rows);
  }
  if (ws_.inference_partials.size() < 4 * blocks) ws_.inference_partials.resize(4 * blocks);
  if ((smoothed || matrices) && ws_.inference_grams.size() < 4 * square) {
    ws_.inference_grams.resize(4 * square);
  }
  const T tau = tau_;
  const auto two_h = static_cast<T>(2.0 * request.bandwidth);  // exact: h is a value of T
  const T* residual = ws_.point.residual.data();
  const T* newton_curvature = ws_.point.weighted_curvature.data();  // the kept Gram's w c
  const T* weights = weights_.data();
  T* band_added = ws_.band_added_weights.data();
  T* band_removed = ws_.band_removed_weights.data();
  T* outlier_weights = ws_.outlier_weights.data();
  T* score_sq_weights = ws_.score_sq_weights.data();
  // The Grams of the pass, each folded into its quarter of ws_.inference_grams as the blocks
  // finish (gram_sums_, the asked ones in this order) and staged in its own slot.
  enum Part : std::size_t { added = 0, removed, outliers, quadratic };
  std::array<Part, max_grams_per_pass> asked{};
  std::size_t asked_count = 0;
  if (smoothed) {
    asked[asked_count++] = added;
    asked[asked_count++] = removed;
  }
  if (matrices) {
    asked[asked_count++] = outliers;
    asked[asked_count++] = quadratic;
  }
  if (asked_count > 0) {
    typename BlockSums<T>::Totals totals{};
    for (std::size_t k = 0; k < asked_count; ++k) {
      totals[k] = ws_.inference_grams.data() + asked[k] * square;
    }
    start_gram_sums(asked_count, totals);
  }

  // One pass over the rows, chunk by chunk: psi, c and the sums from the residuals, and, where
  // a Gram is asked for, its rows added from X while the chunk is in cache. With Q the rows of
  // the kept Gram (|r| <= tau, where psi = r) and O the others (psi = +-tau), every Gram asked
  // for is the kept one plus Grams over few rows, or needs one full Gram:
  //  * smoothed J_b = (kept) + sum_O w c_h x~x~' - sum_Q w (1 - c_h) x~x~': both sums run over
  //    the band |r| in (tau - h, tau + h) only, where c_h is neither 0 nor the indicator;
  //  * G_b = (kept) + G_O and K_b = K_Q + tau^2 G_O, G_O over the rows of O.
  for_each_block([&](std::size_t b) {
    std::array<BlockGram, max_grams_per_pass> grams{};
    for (std::size_t k = 0; k < asked_count; ++k) {
      grams[asked[k]] = block_gram_into(gram_sums_.take(b, k), asked[k]);
    }
    // The sums by rows' lanes (LaneSum): the same bits however the rows are cut.
    LaneSum score_sq;
    LaneSum curvature;
    LaneSum curvature_sq;
    LaneSum weight;
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      {
        RH_BRICK_SCOPE(prof_, EngineBrick::info_update, hi - lo, 4 * (hi - lo) * sizeof(T),
                       16 * (hi - lo));
        double* terms = thread_rows<InferenceTerms, double>(3 * slice_rows);
        for_each_slice(lo, hi, [&](std::size_t a, std::size_t z) {
          const std::size_t n = z - a;
          information_rows(residual + a, weights + a, newton_curvature + a, n, tau,
                           smoothed ? two_h : T{1}, smoothed, terms, terms + n, terms + 2 * n,
                           smoothed ? band_added + a : nullptr,
                           smoothed ? band_removed + a : nullptr,
                           matrices ? outlier_weights + a : nullptr,
                           matrices ? score_sq_weights + a : nullptr);
          score_sq.add(terms, a, n);
          curvature.add(terms + n, a, n);
          curvature_sq.add(terms + 2 * n, a, n);
        });
        weight.add(weights + lo, lo, hi - lo);
      }
      if (smoothed) {
        add_gram_rows(grams[added], lo, hi, band_added, EngineBrick::info_update);
        add_gram_rows(grams[removed], lo, hi, band_removed, EngineBrick::info_update);
      }
      if (matrices) {
        add_gram_rows(grams[outliers], lo, hi, outlier_weights, EngineBrick::info_update);
        add_gram_rows(grams[quadratic], lo, hi, score_sq_weights, EngineBrick::info_update);
      }
    });
    for (std::size_t k = 0; k < max_grams_per_pass; ++k) {
      if (grams[k].partial != nullptr) finish_block_gram(grams[k], EngineBrick::info_update);
    }
    if (asked_count > 0) fold_block_gram(b, EngineBrick::info_update);
    double* sums = ws_.inference_partials.data() + 4 * b;
    sums[0] = score_sq.total();
    sums[1] = curvature.total();
    sums[2] = curvature_sq.total();
    sums[3] = weight.total();
  });

  const auto reduced = [&](std::size_t part) {
    T* gram = ws_.inference_grams.data() + part * square;
    mirror_lower(gram);
    return gram;
  };
  RH_BRICK_SCOPE(prof_, EngineBrick::info_update, 3 * square, 12 * square * sizeof(T),
                 6 * square);
  const T* kept = ws_.gram.data();
  if (smoothed) {
    const T* gained = reduced(added);
    const T* lost = reduced(removed);
    for (std::size_t k = 0; k < square; ++k) {
      out.information[k] = (kept[k] + gained[k] - lost[k]) + previous_information_[k];
    }
  } else {
    for (std::size_t k = 0; k < square; ++k) out.information[k] = kept[k] + previous_information_[k];
  }
  if (matrices) {
    const T* outside = reduced(outliers);
    const T* inside = reduced(quadratic);
    const T tau_sq = tau * tau;
    for (std::size_t k = 0; k < square; ++k) {
      out.gram[k] += kept[k] + outside[k];
      out.score_gram[k] += inside[k] + tau_sq * outside[k];
    }
  }
  InferenceSums batch{.inference_batches = 1};
  for (std::size_t b = 0; b < blocks; ++b) {
    const double* sums = ws_.inference_partials.data() + 4 * b;
    batch.score_sq_sum += sums[0];
    batch.curvature_sum += sums[1];
    batch.curvature_sq_sum += sums[2];
    batch.inference_weight += sums[3];
  }
  return batch;
}

// --- the drift test's reads of the current point ------------------------------------------------

template <std::floating_point T>
void BatchOps<T>::batch_gram_to_host(std::span<double> out) const {
  for (std::size_t k = 0; k < dim_ * dim_; ++k) out[k] = static_cast<double>(ws_.gram[k]);
}

template <std::floating_point T>
InferenceSums BatchOps<T>::point_sums() const {
  if (point_expansion_.active) return expansion_sums();
  // The indicator's terms a chunk at a time, summed by rows' lanes (LaneSum).
  const T* residual = ws_.point.residual.data();
  LaneSum score_sq;
  LaneSum curvature;
  LaneSum weight;
  double* terms = thread_rows<InferenceTerms, double>(3 * slice_rows);
  for_each_slice(0, X_.rows, [&](std::size_t lo, std::size_t hi) {
    const std::size_t n = hi - lo;
    information_rows<T>(residual + lo, weights_.data() + lo, residual + lo, n, tau_, T{1}, false,
                        terms, terms + n, terms + 2 * n, nullptr, nullptr, nullptr, nullptr);
    score_sq.add(terms, lo, n);
    curvature.add(terms + n, lo, n);
    weight.add(weights_.data() + lo, lo, n);
  });
  return {.score_sq_sum = score_sq.total(),
          .curvature_sum = curvature.total(),
          .inference_weight = weight.total(),
          .inference_batches = 1};
}

template class BatchOps<float>;
template class BatchOps<double>;

}  // namespace rh::cpu
