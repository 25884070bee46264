// The step bound of LAMM's fused trials (rh::FusedTrialOps::refused_prefix): which trial steps
// the line search may refuse without evaluating them, proved with rounding included.

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>

#include "batch_ops.hpp"
#include "rh/bricks/scope.hpp"
#include "row_kernels.hpp"

namespace rh::cpu {

// The bound, for each step s in turn (a the computed projection X~ s, as project_rows forms it):
//  * s = alpha u + beta v + e with u, v the first two steps (least squares in float64), so
//    a_hat = alpha (X~u) + beta (X~v) estimates a with |a_hat_i - a_i| <= ||x~_i||_inf E, where
//    E = ||e||_1 + gamma (||s||_1 + |alpha| ||u||_1 + |beta| ||v||_1) + float64 slack, gamma =
//    m u / (1 - m u) the bound on a dot product of m = d + 1 terms in T (Higham, "Accuracy and
//    Stability of Numerical Algorithms", 2nd ed., §3.1), whatever the order of the BLAS;
//  * rho is tau-Lipschitz, so the loss changes differ by at most tau E sum_i w_i ||x~_i||_inf;
//  * each of the two float64 sums of n terms, and each term's own cancellation, errs by at most
//    (n + 16) u64 times the sum of the magnitudes behind it (the estimate's, widened by the gap);
//  * the history terms are computed as the exact trial computes them.
// A step is refused for certain when the estimate minus all of that exceeds its bound. Nothing
// here is written by hand for speed only: no library bounds a Huber sum along a family of steps.
template <std::floating_point T>
std::size_t BatchOps<T>::refused_prefix(std::span<const Vector> steps,
                                        std::span<const double> bounds) {
  require_design_scanned();
  if (steps.empty()) return 0;
  const Vector& u = steps[0];
  const double uu = dot(u, u);
  if (!(uu > 0.0) || !std::isfinite(uu)) return 0;
  const bool plane = steps.size() > 1;
  const Vector& v = plane ? steps[1] : u;
  const double uv = plane ? dot(u, v) : 0.0;
  const double vv = plane ? dot(v, v) : 0.0;
  const double det = uu * vv - uv * uv;
  const bool independent = plane && det > 1e-12 * uu * vv;  // else u alone

  // One pass: X~u and X~v into projection slots 0 and 1, and the row bound once per batch.
  reserve_projection_slots(2);
  projected_count_ = 0;  // the slots no longer hold the steps residual_source knows
  const bool need_row_bound = !weighted_row_max_;
  for_each_block([&](std::size_t b) {
    double row_bound = 0.0;
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      project_rows(u.data(), 0, lo, hi);
      if (independent) project_rows(v.data(), 1, lo, hi);
      if (need_row_bound) {
        RH_BRICK_SCOPE(prof_, EngineBrick::line_search, (hi - lo) * features_,
                       (hi - lo) * (features_ + 1) * sizeof(T), 2 * (hi - lo) * features_);
        row_bound += weighted_row_max_abs(X_.row(lo), hi - lo, features_, weights_.data() + lo,
                                          intercept_);
      }
    });
    ws_.scratch_partials[b] = row_bound;
  });
  if (need_row_bound) {
    double sum = 0.0;
    for (std::size_t b = 0; b < blocks_.count(); ++b) sum += ws_.scratch_partials[b];
    weighted_row_max_ = sum;
  }

  const double unit_t = std::numeric_limits<T>::epsilon() / 2;
  const double unit64 = std::numeric_limits<double>::epsilon() / 2;
  const double terms = static_cast<double>(dim_ + 1);
  const double gamma = terms * unit_t / (1.0 - terms * unit_t);
  const double rows = static_cast<double>(X_.rows);
  const double tau = static_cast<double>(tau_);
  double u1 = 0.0;
  double v1 = 0.0;
  for (std::size_t j = 0; j < dim_; ++j) {
    u1 += std::fabs(static_cast<double>(u[j]));
    v1 += std::fabs(static_cast<double>(v[j]));
  }
  const T* projection_u = projection(0);
  const T* projection_v = independent ? projection(1) : projection(0);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Vector& s = steps[k];
    const double su = dot(s, u);
    const double sv = independent ? dot(s, v) : 0.0;
    const double alpha = independent ? (su * vv - sv * uv) / det : su / uu;
    const double beta = independent ? (sv * uu - su * uv) / det : 0.0;
    double e1 = 0.0;
    double s1 = 0.0;
    for (std::size_t j = 0; j < dim_; ++j) {
      const double sj = static_cast<double>(s[j]);
      const double vj = independent ? static_cast<double>(v[j]) : 0.0;
      e1 += std::fabs(sj - alpha * static_cast<double>(u[j]) - beta * vj);
      s1 += std::fabs(sj);
    }
    const double combination = std::fabs(alpha) * u1 + (independent ? std::fabs(beta) * v1 : 0.0);
    const double reach = e1 + gamma * (s1 + combination) + 8.0 * unit64 * (e1 + s1 + combination);
    const double gap = tau * *weighted_row_max_ * reach * (1.0 + 8.0 * unit64);
    if (!std::isfinite(gap)) return k;

    for_each_block([&](std::size_t b) {
      double change = 0.0;
      double scale = 0.0;
      const std::size_t lo = blocks_.begin(b);
      const std::size_t rows_in_block = blocks_.end(b) - lo;
      RH_BRICK_SCOPE(prof_, EngineBrick::line_search, rows_in_block,
                     rows_in_block * (4 * sizeof(T)), 40 * rows_in_block);
      estimated_loss_change_rows(ws_.point.residual.data() + lo, projection_u + lo,
                                 projection_v + lo, alpha, beta, weights_.data() + lo,
                                 rows_in_block, tau, change, scale);
      ws_.scratch_partials[2 * b] = change;
      ws_.scratch_partials[2 * b + 1] = scale;
    });
    double loss = 0.0;
    double scale = 0.0;
    for (std::size_t b = 0; b < blocks_.count(); ++b) {
      loss += ws_.scratch_partials[2 * b];
      scale += ws_.scratch_partials[2 * b + 1];
    }
    const HistoryChange history = history_change(s, T{1});
    const double estimate = loss + history.quadratic - history.linear;
    const double margin = gap + 2.0 * (rows + 16.0) * unit64 * (scale + gap) +
                          8.0 * unit64 * (std::fabs(loss) + gap + std::fabs(history.quadratic) +
                                          std::fabs(history.linear));
    if (!(estimate - margin > bounds[k])) return k;
  }
  return steps.size();
}

template std::size_t BatchOps<float>::refused_prefix(std::span<const Vector>,
                                                     std::span<const double>);
template std::size_t BatchOps<double>::refused_prefix(std::span<const Vector>,
                                                      std::span<const double>);

}  // namespace rh::cpu
