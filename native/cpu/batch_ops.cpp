#include "batch_ops.hpp"

#include <algorithm>
#include <cmath>

#include "blas.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/huber.hpp"

namespace rh::cpu {

template <std::floating_point T>
BatchOps<T>::BatchOps(Workspace<T>& workspace, ThreadPool& pool, const StateView<T>& previous,
                      MatrixView<T> X, std::span<const T> y, std::span<const T> sample_weight,
                      bool fit_intercept, rh::bricks::Profiler& profiler)
    : ws_(workspace),
      pool_(pool),
      prof_(profiler),
      X_(X),
      y_(y),
      weights_(sample_weight),
      previous_coef_(previous.coef),
      previous_information_(previous.information),
      intercept_(fit_intercept),
      features_(X.cols),
      dim_(X.cols + (fit_intercept ? 1 : 0)),
      blocks_(X.rows),
      information64_(nullptr),
      effective_weight_(previous.effective_weight),
      history_weight_(static_cast<double>(
          static_cast<T>(previous.effective_weight * previous.previous_lambda))),
      current_(dim_, T{0}) {
  for (const T w : weights_) weight_sum_ += static_cast<double>(w);
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
void BatchOps<T>::residual_block(const T* beta, std::size_t block, T* out) const {
  const std::size_t begin = blocks_.begin(block);
  const std::size_t rows = blocks_.end(block) - begin;
  RH_BRICK_SCOPE(prof_, EngineBrick::residual, rows * dim_, (rows * (features_ + 2)) * sizeof(T),
                 2 * rows * dim_);
  blas::gemv(false, rows, features_, T{1}, X_.row(begin), features_, beta, T{0}, out + begin);
  const T offset = intercept_ ? beta[features_] : T{0};
  for (std::size_t i = begin; i < begin + rows; ++i) out[i] = y_[i] - (out[i] + offset);
}

template <std::floating_point T>
void BatchOps<T>::residuals_to_host(const Vector& beta, std::span<T> out) {
  pool_.run(blocks_.count(), [&](std::size_t b) { residual_block(beta.data(), b, out.data()); });
}

template <std::floating_point T>
void BatchOps<T>::evaluate(const Vector& beta, double tau) {
  prof_.set_iteration(evaluations_++);
  current_ = beta;
  tau_ = static_cast<T>(tau);
  const double tau64 = static_cast<double>(tau_);
  // One pass per block: residual, psi, curvature, loss, and the block's share of X~^T (w psi).
  pool_.run(blocks_.count(), [&](std::size_t b) {
    residual_block(beta.data(), b, ws_.residual.data());
    const std::size_t begin = blocks_.begin(b);
    const std::size_t end = blocks_.end(b);
    double loss = 0.0;
    double score_sum = 0.0;
    {
    RH_BRICK_SCOPE(prof_, EngineBrick::huber, end - begin, 4 * (end - begin) * sizeof(T),
                   8 * (end - begin));
    for (std::size_t i = begin; i < end; ++i) {
      const T r = ws_.residual[i];
      const T w = weights_[i];
      const T psi = std::clamp(r, -tau_, tau_);
      ws_.weighted_score[i] = w * psi;
      ws_.weighted_curvature[i] = std::fabs(r) <= tau_ ? w : T{0};
      loss += static_cast<double>(w) * huber_rho(static_cast<double>(r), tau64);
      score_sum += static_cast<double>(ws_.weighted_score[i]);
    }
    }
    ws_.loss_partials[b] = loss;
    RH_BRICK_SCOPE(prof_, EngineBrick::score, (end - begin) * dim_,
                   (end - begin) * (features_ + 1) * sizeof(T), 2 * (end - begin) * dim_);
    T* partial = ws_.score_partials.data() + b * dim_;
    blas::gemv(true, end - begin, features_, T{1}, X_.row(begin), features_,
               ws_.weighted_score.data() + begin, T{0}, partial);
    if (intercept_) partial[features_] = static_cast<T>(score_sum);
  });
  // J~ (beta - beta~), in T and in float64: the history part of the score.
  RH_BRICK_SCOPE(prof_, EngineBrick::score, 2 * dim_ * dim_,
                 dim_ * dim_ * (sizeof(T) + sizeof(double)), 4 * dim_ * dim_);
  for (std::size_t j = 0; j < dim_; ++j) {
    ws_.delta[j] = current_[j] - previous_coef_[j];
    ws_.delta64[j] = static_cast<double>(ws_.delta[j]);
  }
  apply_information(ws_.delta.data(), ws_.information_delta.data());
  apply_information64(ws_.delta64.data(), ws_.information_delta64.data());
}

template <std::floating_point T>
void BatchOps<T>::gradient(Vector& out) {
  RH_BRICK_SCOPE(prof_, EngineBrick::score, blocks_.count() * dim_,
                 blocks_.count() * dim_ * sizeof(T), blocks_.count() * dim_ + 3 * dim_);
  std::copy_n(ws_.score_partials.begin(), dim_, ws_.score.begin());
  for (std::size_t b = 1; b < blocks_.count(); ++b) {
    const T* partial = ws_.score_partials.data() + b * dim_;
    for (std::size_t j = 0; j < dim_; ++j) ws_.score[j] += partial[j];
  }
  const auto history = static_cast<T>(history_weight_);
  for (std::size_t j = 0; j < dim_; ++j) {
    out[j] = -ws_.score[j] + ws_.information_delta[j] - history * ws_.history_sign[j];
  }
}

template <std::floating_point T>
double BatchOps<T>::objective(double lambda) const {
  double loss = 0.0;
  for (std::size_t b = 0; b < blocks_.count(); ++b) loss += ws_.loss_partials[b];
  double quadratic = 0.0;
  double history = 0.0;
  double l1 = 0.0;
  for (std::size_t j = 0; j < dim_; ++j) {
    quadratic += ws_.delta64[j] * ws_.information_delta64[j];
    history += static_cast<double>(ws_.history_sign[j]) * ws_.delta64[j];
  }
  for (std::size_t j = 0; j < features_; ++j) l1 += std::fabs(static_cast<double>(current_[j]));
  return loss + 0.5 * quadratic - history_weight_ * history +
         (effective_weight_ + weight_sum_) * lambda * l1;
}

// --- the Newton system -------------------------------------------------------------------------

template <std::floating_point T>
void BatchOps<T>::weighted_gram(T* out, EngineBrick brick) {
  // The SYRK operand is sqrt(w c) * x~ with the intercept's column sqrt(w c) written out, so
  // every entry of the Gram, intercept row included, comes from one kernel with one summation
  // order: exactly duplicated columns then give an exactly singular Gram, as in the reference.
  pool_.run(blocks_.count(), [&](std::size_t b) {
    const std::size_t begin = blocks_.begin(b);
    const std::size_t end = blocks_.end(b);
    // The scaled rows and SYRK's lower triangle: rows * d * (d + 1) flops.
    RH_BRICK_SCOPE(prof_, brick, end - begin, 2 * (end - begin) * dim_ * sizeof(T),
                   (end - begin) * dim_ * (dim_ + 2));
    for (std::size_t i = begin; i < end; ++i) {
      const T root = std::sqrt(ws_.weighted_curvature[i]);
      const T* x = X_.row(i);
      T* scaled = ws_.scaled_rows.data() + i * dim_;
      for (std::size_t j = 0; j < features_; ++j) scaled[j] = root * x[j];
      if (intercept_) scaled[features_] = root;
    }
    blas::syrk_lower(end - begin, dim_, ws_.scaled_rows.data() + begin * dim_,
                     ws_.gram_partials.data() + b * dim_ * dim_, dim_);
  });
  RH_BRICK_SCOPE(prof_, brick, dim_ * dim_, blocks_.count() * dim_ * dim_ / 2 * sizeof(T),
                 blocks_.count() * dim_ * (dim_ + 1) / 2);
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      T sum = ws_.gram_partials[i * dim_ + j];
      for (std::size_t b = 1; b < blocks_.count(); ++b) {
        sum += ws_.gram_partials[b * dim_ * dim_ + i * dim_ + j];
      }
      out[i * dim_ + j] = sum;
      out[j * dim_ + i] = sum;
    }
  }
}

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
  T* H = ws_.hessian.data();
  weighted_gram(H, EngineBrick::gram);
  RH_BRICK_SCOPE(prof_, EngineBrick::gram, dim_ * dim_, 3 * dim_ * dim_ * sizeof(T), dim_ * dim_);
  for (std::size_t k = 0; k < dim_ * dim_; ++k) H[k] += previous_information_[k];
  const auto damping = static_cast<T>(ridge);
  for (std::size_t j = 0; j < dim_; ++j) H[j * dim_ + j] += damping;
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
void BatchOps<T>::solve_min_norm(const Vector& rhs, double rcond, Vector& out) {
  // SVD-based least squares: of the order of 4 d^3 flops.
  RH_BRICK_SCOPE(prof_, EngineBrick::solve, dim_ * dim_, dim_ * dim_ * sizeof(T),
                 4 * dim_ * dim_ * dim_);
  ws_.solver.min_norm(ws_.hessian.data(), rhs.data(), rcond, out.data());
}

// --- the objective along a step ----------------------------------------------------------------

template <std::floating_point T>
void BatchOps<T>::project(const Vector& step) {
  pool_.run(blocks_.count(), [&](std::size_t b) {
    const std::size_t begin = blocks_.begin(b);
    const std::size_t rows = blocks_.end(b) - begin;
    RH_BRICK_SCOPE(prof_, EngineBrick::line_search, rows, rows * (features_ + 1) * sizeof(T),
                   2 * rows * dim_);
    T* a = ws_.projection.data();
    blas::gemv(false, rows, features_, T{1}, X_.row(begin), features_, step.data(), T{0},
               a + begin);
    if (intercept_) {
      for (std::size_t i = begin; i < begin + rows; ++i) a[i] += step[features_];
    }
  });
}

// dQ_smooth(s) for s = t * step (docs/numerics.md): per-row Huber differences without
// cancellation, plus the exact change of the quadratic and linear history terms.
template <std::floating_point T>
double BatchOps<T>::objective_change(const Vector& step, double t) {
  const auto factor = static_cast<T>(t);
  const double tau64 = static_cast<double>(tau_);
  pool_.run(blocks_.count(), [&](std::size_t b) {
    const std::size_t rows = blocks_.end(b) - blocks_.begin(b);
    RH_BRICK_SCOPE(prof_, EngineBrick::line_search, rows, 3 * rows * sizeof(T), 12 * rows);
    double change = 0.0;
    for (std::size_t i = blocks_.begin(b); i < blocks_.end(b); ++i) {
      const T a = factor * ws_.projection[i];
      change +=
          static_cast<double>(weights_[i]) *
          huber_rho_change(static_cast<double>(ws_.residual[i]), static_cast<double>(a), tau64);
    }
    ws_.scratch_partials[b] = change;
  });
  RH_BRICK_SCOPE(prof_, EngineBrick::line_search, dim_, dim_ * dim_ * sizeof(double),
                 2 * dim_ * dim_ + 8 * dim_);
  double loss_change = 0.0;
  for (std::size_t b = 0; b < blocks_.count(); ++b) loss_change += ws_.scratch_partials[b];

  for (std::size_t j = 0; j < dim_; ++j) {
    ws_.trial64[j] = static_cast<double>(factor * step[j]);  // s is formed in T
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
  return loss_change + 0.5 * (delta_j_s + s_j_delta + s_j_s) - history_weight_ * history;
}

template <std::floating_point T>
void BatchOps<T>::information(std::span<T> out) {
  weighted_gram(out.data(), EngineBrick::info_update);
  RH_BRICK_SCOPE(prof_, EngineBrick::info_update, dim_ * dim_, 3 * dim_ * dim_ * sizeof(T),
                 dim_ * dim_);
  for (std::size_t k = 0; k < dim_ * dim_; ++k) out[k] += previous_information_[k];
}

template class BatchOps<float>;
template class BatchOps<double>;

}  // namespace rh::cpu
