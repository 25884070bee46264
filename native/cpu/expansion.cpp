// Steps by expansion (batch_ops.hpp says what they are; docs/native.md, "Passes over X per
// batch"): a Newton step of a large batch evaluated without a pass over X, from the quadratic
// that the anchor's pattern makes of every row's loss and the few rows near the bandwidth.
// Written here: no library evaluates a piecewise-quadratic loss this way.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "batch_ops.hpp"
#include "blas.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/huber.hpp"
#include "row_dots.hpp"
#include "thread_rows.hpp"

namespace rh::cpu {

namespace {

// A sum of per-row terms in row order (one chain: the order the expanded sums have always had).
double sum_in_order(const double* terms, std::size_t n) {
  double sum = 0.0;
  for (std::size_t k = 0; k < n; ++k) sum += terms[k];
  return sum;
}

double norm2(const std::vector<double>& v) {
  double sum = 0.0;
  for (const double x : v) sum += x * x;
  return std::sqrt(sum);
}

// G v for a d x d row-major G (OpenBLAS's GEMV: on wide batches d^2 is not small).
std::vector<double> times(const std::vector<double>& G, const std::vector<double>& v) {
  const std::size_t d = v.size();
  std::vector<double> out(d, 0.0);
  blas::gemv(false, d, d, 1.0, G.data(), d, v.data(), 0.0, out.data());
  return out;
}

}  // namespace

template <std::floating_point T>
bool BatchOps<T>::expansion_enabled() const {
  return expansion_allowed_ && expansion_on_ && !tracing_ &&
         gram_strategy_ == GramStrategy::incremental;
}

template <std::floating_point T>
bool BatchOps<T>::expansion_usable() const {
  return expansion_enabled() && row_norms_ready_;
}

template <std::floating_point T>
void BatchOps<T>::add_outside_score(std::size_t lo, std::size_t hi, const T* curvature,
                                    const T* scores, double* partial) const {
  std::size_t* rows = thread_rows<OutsideRows, std::size_t>(hi - lo);
  std::size_t count = 0;
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  for (std::size_t i = lo; i < hi; ++i) {
    rows[count] = i;  // listed always, kept by the count: no branch on random rows
    count += std::bit_cast<Bits>(curvature[i]) == 0;  // the +0 of huber_rows' outside rows
  }
  RH_BRICK_SCOPE(prof_, EngineBrick::score, count * dim_, count * features_ * sizeof(T),
                 2 * count * dim_);
  add_listed_rows(X_.data, features_, rows, count, scores, lo, partial);
  if (intercept_) {
    for (std::size_t k = 0; k < count; ++k) {
      partial[features_] += static_cast<double>(scores[rows[k] - lo]);
    }
  }
}

template <std::floating_point T>
void BatchOps<T>::near_products(const T* v, std::vector<double>& out) const {
  const std::size_t near = segment_.rows.size();
  T* dots = thread_rows<NearDots, T>(near);
  row_dots(ws_.near_design.data(), near, features_, v, dots);
  const double offset = intercept_ ? static_cast<double>(v[features_]) : 0.0;
  out.resize(near);
  for (std::size_t k = 0; k < near; ++k) out[k] = static_cast<double>(dots[k]) + offset;
}

template <std::floating_point T>
bool BatchOps<T>::anchor_at_current() {
  if (anchor_.valid && tau_ == anchor_.tau && current_ == anchor_.point) return true;
  if (!gram_valid_ || !gram_at_current_curvature(EngineBrick::line_search)) return false;
  // The step that follows evaluates its full step's point into ws_.prepared: that buffer takes
  // the anchor's curvature in the same row pass, where it holds no prepared point.
  PointRows<T>* prepared = prepared_valid_ ? nullptr : &ws_.prepared;
  set_anchor(anchor_margins(prepared));
  if (prepared != nullptr) {
    prepared->curvature_stamp = ++curvature_stamps_;
    prepared_expansion_.curvature_anchor = anchor_.id;
    prepared_expansion_.rows.clear();  // no row differs from the anchor's curvature
    prepared_expansion_.active = false;
  }
  return true;
}

template <std::floating_point T>
std::vector<double> BatchOps<T>::anchor_margins(PointRows<T>* curvature_rows) {
  RH_BRICK_SCOPE(prof_, EngineBrick::line_search, X_.rows, 4 * X_.rows * sizeof(T), 8 * X_.rows);
  if (ws_.expansion_residual.size() < X_.rows) ws_.expansion_residual.resize(X_.rows);
  if (ws_.expansion_margin.size() < X_.rows) ws_.expansion_margin.resize(X_.rows);
  // Block by block (on the pool), the blocks' sums added in block order by set_anchor.
  std::vector<double> sums(3 * blocks_.count());
  for_each_block([&](std::size_t b) {
    const std::size_t lo = blocks_.begin(b);
    anchor_rows(ws_.point.residual.data() + lo, weights_.data() + lo, blocks_.end(b) - lo, tau_,
                ws_.expansion_residual.data() + lo, ws_.expansion_margin.data() + lo,
                sums.data() + 3 * b);
    if (curvature_rows != nullptr) {  // from r0 in cache, as evaluate_by_expansion would
      indicator_curvature_rows(ws_.expansion_residual.data() + lo, weights_.data() + lo,
                               blocks_.end(b) - lo, tau_,
                               curvature_rows->weighted_curvature.data() + lo);
    }
  });
  return sums;
}

template <std::floating_point T>
void BatchOps<T>::set_anchor(const std::vector<double>& sums) {
  anchor_.inside_square = 0.0;
  anchor_.outside_weight = 0.0;
  anchor_.loss = 0.0;
  for (std::size_t b = 0; b < blocks_.count(); ++b) {
    anchor_.inside_square += sums[3 * b];
    anchor_.outside_weight += sums[3 * b + 1];
    anchor_.loss += sums[3 * b + 2];
  }
  anchor_.point = current_;
  anchor_.tau = tau_;
  // The score as gradient() sums it: the blocks' partials in block order, in T.
  anchor_.score.assign(dim_, 0.0);
  for (std::size_t j = 0; j < dim_; ++j) {
    T sum = ws_.point.score_partials[j];
    for (std::size_t b = 1; b < blocks_.count(); ++b) sum += ws_.point.score_partials[b * dim_ + j];
    anchor_.score[j] = static_cast<double>(sum);
  }
  anchor_.gram.assign(ws_.gram.begin(), ws_.gram.begin() + static_cast<std::ptrdiff_t>(dim_ * dim_));
  anchor_.inside_score_ready = ws_.point.outside_formed;
  if (anchor_.inside_score_ready) {  // A0 = S0 less the outside rows' score
    anchor_.inside_score = anchor_.score;
    for (std::size_t b = 0; b < blocks_.count(); ++b) {
      for (std::size_t j = 0; j < dim_; ++j) {
        anchor_.inside_score[j] -= ws_.point.outside_partials[b * dim_ + j];
      }
    }
  }
  ++anchor_.id;
  point_expansion_.curvature_anchor = anchor_.id;  // huber_rows' curvature of r0, the same bits
  point_expansion_.rows.clear();
  anchor_.valid = true;
}

template <std::floating_point T>
float BatchOps<T>::squared_reach(double radius) {
  return std::nextafter(static_cast<float>(radius * radius),
                        std::numeric_limits<float>::infinity());
}

template <std::floating_point T>
bool BatchOps<T>::anchor_if_expanding(const Vector& step, double reach_factor) {
  if (!expansion_usable() || !point_valid_) return false;
  // Expanded already: the point was evaluated about an anchor, or is one.
  if (point_expansion_.active ||
      (anchor_.valid && anchor_.tau == tau_ && anchor_.point == current_)) {
    return true;
  }
  if (!(residual_known_ && residual_point_ == current_)) return false;
  // The current point's margins, then a count of the rows begin_segment would call near for
  // this reach (its first, roomier radius): row passes, no read of X. The Gram only if they are
  // few — a kept one (an earlier solve's of this batch, at another bandwidth: the first batch's
  // pilot) brought here by its flipped rows where they are few, else a new one —; the margins
  // then make the anchor as they are.
  const std::vector<double> sums = anchor_margins(nullptr);
  double squared = 0.0;
  for (const T v : step) squared += static_cast<double>(v) * static_cast<double>(v);
  const float reach =
      squared_reach(std::sqrt(squared) * reach_factor * (1.0 + 1e-12) * near_radius_room);
  std::vector<std::size_t> counts(blocks_.count(), 0);
  for_each_block([&](std::size_t b) {
    const std::size_t lo = blocks_.begin(b);
    const std::size_t n = blocks_.end(b) - lo;
    RH_BRICK_SCOPE(prof_, EngineBrick::line_search, n, 2 * n * sizeof(float), n);
    auto* flags = thread_rows<NearFlags, unsigned char>(n);
    near_flags(ws_.expansion_margin.data() + lo, ws_.row_norms.data() + lo, n, reach, flags);
    counts[b] = n - static_cast<std::size_t>(std::count(flags, flags + n, 0));
  });
  std::size_t near = 0;
  for (const std::size_t c : counts) near += c;
  if (near > X_.rows / max_expansion_rows_inverse) {
    // The margins and r0 buffers are this point's now, not the earlier anchor's: that anchor
    // and a segment about it can no longer be used.
    anchor_.valid = false;
    segment_.valid = false;
    if (prepared_expansion_.active) prepared_valid_ = false;  // expanded about that anchor
    return false;
  }
  weighted_gram(EngineBrick::gram);  // at the current curvature: the anchor's G0
  set_anchor(sums);
  return true;
}

template <std::floating_point T>
std::vector<double> BatchOps<T>::anchor_offset(const Vector& point) const {
  std::vector<double> offset(dim_);
  for (std::size_t j = 0; j < dim_; ++j) {
    offset[j] = static_cast<double>(point[j]) - static_cast<double>(anchor_.point[j]);
  }
  return offset;
}

template <std::floating_point T>
std::optional<std::vector<double>> BatchOps<T>::covered_offset(const Vector& point) const {
  if (!segment_.valid || tau_ != anchor_.tau) return std::nullopt;
  std::vector<double> offset = anchor_offset(point);
  if (!(norm2(offset) <= segment_.radius)) return std::nullopt;
  return offset;
}

template <std::floating_point T>
bool BatchOps<T>::begin_segment(const Vector& step) {
  segment_.valid = false;
  if (!expansion_usable() || !point_valid_) return false;
  if (point_expansion_.active) {
    if (!anchor_.valid || tau_ != anchor_.tau) return false;
  } else if (!(residual_known_ && residual_point_ == current_) || !anchor_at_current()) {
    return false;
  }
  const bool at_anchor = !point_expansion_.active;
  Vector end = current_;
  for (std::size_t j = 0; j < dim_; ++j) end[j] += step[j];  // as the drivers form beta + step
  // Both ends of the segment bound every point on it (the norm is convex); room for the
  // rounding of offsets formed later from the same values.
  const double from = at_anchor ? 0.0 : norm2(point_expansion_.offset);
  const double radius = std::max(from, norm2(anchor_offset(end))) * (1.0 + 1e-12);

  if (segment_.near_anchor != anchor_.id || !(radius <= segment_.radius)) {
    // A new near set, for a radius with room for the steps after this one (a Newton solve's
    // later steps stay within about the first one's reach): they reuse it, scan and gather.
    if (!find_near_rows(radius * near_radius_room) && !find_near_rows(radius)) return false;
  }
  const std::size_t near = segment_.rows.size();
  {
    RH_BRICK_SCOPE(prof_, EngineBrick::line_search, near * dim_, near * features_ * sizeof(T),
                   2 * near * dim_);
    near_products(step.data(), segment_.projection);
    if (at_anchor) {
      segment_.residual.resize(near);
      for (std::size_t k = 0; k < near; ++k) {
        segment_.residual[k] = static_cast<double>(segment_.anchor_residual[k]);
      }
    } else if (point_expansion_.near_id == segment_.near_id) {
      // The current point was evaluated on these very rows: its residuals are these, bit for bit.
      segment_.residual = point_expansion_.residual;
    } else {
      near_products(current_.data(), segment_.residual);
      for (std::size_t k = 0; k < near; ++k) {
        segment_.residual[k] = static_cast<double>(segment_.y[k]) - segment_.residual[k];
      }
    }
  }
  // (S0 - G0 D)' step and step' G0 step, D the current point's offset (0 at the anchor).
  std::vector<double> step64(step.begin(), step.end());
  const std::vector<double> gram_step = times(anchor_.gram, step64);
  double slope = 0.0;
  double curvature = 0.0;
  for (std::size_t j = 0; j < dim_; ++j) {
    const double gram_offset = at_anchor ? 0.0 : point_expansion_.gram_offset[j];
    slope += (anchor_.score[j] - gram_offset) * step64[j];
    curvature += step64[j] * gram_step[j];
  }
  segment_.slope = slope;
  segment_.curvature = curvature;
  segment_.from_point = current_;
  segment_.step = step;
  segment_.valid = true;
  return true;
}

template <std::floating_point T>
bool BatchOps<T>::find_near_rows(double radius) {
  segment_.near_anchor = 0;
  ++segment_.near_id;
  const float reach = squared_reach(radius);
  // Each block's near rows (on the pool): their flags a chunk at a time (a vectorized compare),
  // then their indices, eight flags at a time (most words are 0); the rows of X gathered into
  // the block's share of ws_.near_design, all of their cache lines asked for first so that the
  // misses overlap, and their y, weight and r0 staged beside. Then the blocks' lists in block
  // order.
  auto& lists = segment_.block_rows;
  lists.resize(blocks_.count());
  for_each_block([&](std::size_t b) {
    RH_BRICK_SCOPE(prof_, EngineBrick::line_search, blocks_.end(b) - blocks_.begin(b),
                   2 * (blocks_.end(b) - blocks_.begin(b)) * sizeof(T),
                   blocks_.end(b) - blocks_.begin(b));
    std::vector<std::size_t>& list = lists[b];
    list.clear();
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      const std::size_t n = hi - lo;
      auto* flags = thread_rows<NearFlags, unsigned char>(n);
      near_flags(ws_.expansion_margin.data() + lo, ws_.row_norms.data() + lo, n, reach, flags);
      append_flagged(flags, n, lo, list);
    });
  });
  std::size_t near = 0;
  for (const auto& list : lists) near += list.size();
  if (near > X_.rows / max_expansion_rows_inverse) return false;
  segment_.rows.resize(near);
  segment_.y.resize(near);
  segment_.weight.resize(near);
  segment_.anchor_residual.resize(near);
  if (ws_.near_design.size() < near * features_) ws_.near_design.resize(near * features_);
  {
    std::size_t first = 0;
    std::vector<std::size_t> firsts(blocks_.count());
    for (std::size_t b = 0; b < blocks_.count(); ++b) {
      firsts[b] = first;
      first += lists[b].size();
    }
    for_each_block([&](std::size_t b) {
      const std::vector<std::size_t>& list = lists[b];
      RH_BRICK_SCOPE(prof_, EngineBrick::line_search, list.size() * features_,
                     2 * list.size() * features_ * sizeof(T), 0);
      const std::size_t row_bytes = features_ * sizeof(T);
      for (const std::size_t i : list) {
        const auto* row = reinterpret_cast<const char*>(X_.row(i));
        for (std::size_t byte = 0; byte < row_bytes; byte += 64) __builtin_prefetch(row + byte);
      }
      const T* r0 = ws_.expansion_residual.data();
      for (std::size_t k = 0; k < list.size(); ++k) {
        const std::size_t i = list[k];
        const std::size_t at = firsts[b] + k;
        segment_.rows[at] = i;
        segment_.y[at] = y_[i];
        segment_.weight[at] = weights_[i];
        segment_.anchor_residual[at] = r0[i];
        std::copy_n(X_.row(i), features_, ws_.near_design.data() + at * features_);
      }
    });
  }
  segment_.radius = radius;
  segment_.near_anchor = anchor_.id;
  return true;
}

template <std::floating_point T>
void BatchOps<T>::evaluate_by_expansion(const Vector& point, std::vector<double> offset,
                                        PointRows<T>& rows, ExpandedPoint& expanded) {
  const std::size_t near = segment_.rows.size();
  RH_BRICK_SCOPE(prof_, EngineBrick::huber, X_.rows + near * dim_,
                 (3 * X_.rows + near * dim_) * sizeof(T), X_.rows + 4 * near * dim_);
  const T tau = anchor_.tau;
  // The anchor's curvature on every row (where the buffer holds it, on the rows it was patched
  // at), then the near rows' own.
  T* curvature = rows.weighted_curvature.data();
  rows.curvature_stamp = ++curvature_stamps_;
  if (expanded.curvature_anchor == anchor_.id) {
    for (std::size_t k = 0; k < expanded.rows.size(); ++k) {
      curvature[expanded.rows[k]] =
          select(std::fabs(expanded.anchor_residual[k]) <= tau, expanded.weight[k], T{0});
    }
  } else {
    const T* r0 = ws_.expansion_residual.data();
    for_each_block([&](std::size_t b) {
      const std::size_t lo = blocks_.begin(b);
      indicator_curvature_rows(r0 + lo, weights_.data() + lo, blocks_.end(b) - lo, tau,
                               curvature + lo);
    });
    expanded.curvature_anchor = anchor_.id;
  }
  expanded.rows = segment_.rows;
  expanded.weight = segment_.weight;
  expanded.anchor_residual = segment_.anchor_residual;
  expanded.near_id = segment_.near_id;
  near_products(point.data(), expanded.residual);
  // Each near row's residual and curvature, and its w psi off the anchor's piece, to add to
  // S0 - G0 D.
  T* off = thread_rows<NearScores, T>(2 * near);
  T* near_curvature = off + near;
  near_score_rows(segment_.y.data(), expanded.residual.data(), segment_.weight.data(),
                  segment_.anchor_residual.data(), near, tau, near_curvature, off);
  T off_sum = 0;
  for (std::size_t k = 0; k < near; ++k) {
    curvature[segment_.rows[k]] = near_curvature[k];
    off_sum += off[k];
  }
  T* score = rows.score_partials.data();  // block 0 holds the score, the others 0
  std::fill_n(score, blocks_.count() * dim_, T{0});
  add_weighted_rows(ws_.near_design.data(), near, features_, off, score);
  if (intercept_) score[features_] = off_sum;
  expanded.gram_offset = times(anchor_.gram, offset);
  for (std::size_t j = 0; j < dim_; ++j) {
    score[j] = static_cast<T>(anchor_.score[j] - expanded.gram_offset[j] +
                              static_cast<double>(score[j]));
  }
  rows.outside_formed = false;  // its outside rows' score was not formed (an anchor reads it)
  expanded.offset = std::move(offset);
  expanded.active = true;
  ++expanded_evaluations_;
}

template <std::floating_point T>
double BatchOps<T>::expansion_loss_change(double t) const {
  RH_BRICK_SCOPE(prof_, EngineBrick::line_search, segment_.rows.size(),
                 3 * segment_.rows.size() * sizeof(double), 12 * segment_.rows.size());
  const std::size_t near = segment_.rows.size();
  double* terms = thread_rows<NearTerms, double>(near);
  near_loss_change_rows(segment_.residual.data(), segment_.projection.data(),
                        segment_.weight.data(), segment_.anchor_residual.data(), near, t,
                        anchor_.tau, terms);
  const double off = sum_in_order(terms, near);
  return -t * segment_.slope + 0.5 * t * t * segment_.curvature + off;
}

template <std::floating_point T>
double BatchOps<T>::expansion_loss() const {
  const ExpandedPoint& point = point_expansion_;
  // L0 - S0' D + D' G0 D / 2, then the near rows off their pieces.
  const std::vector<double>& offset = point_expansion_.offset;
  const std::vector<double>& gram_offset = point_expansion_.gram_offset;
  double loss = anchor_.loss;
  for (std::size_t j = 0; j < dim_; ++j) {
    loss += offset[j] * (0.5 * gram_offset[j] - anchor_.score[j]);
  }
  const std::size_t near = point.rows.size();
  double* terms = thread_rows<NearTerms, double>(near);
  near_loss_rows(point.residual.data(), point.weight.data(), point.anchor_residual.data(), near,
                 anchor_.tau, terms);
  for (std::size_t k = 0; k < near; ++k) loss += terms[k];
  return loss;
}

template <std::floating_point T>
InferenceSums BatchOps<T>::expansion_sums() const {
  const T* r0 = ws_.expansion_residual.data();
  const T tau = anchor_.tau;
  const auto tau64 = static_cast<double>(tau);
  if (!anchor_.inside_score_ready) {
    // A0 = S0 less the outside rows' score, read from X here: no pass formed it for the anchor
    // (a point evaluated by expansion whose residuals were formed later, then anchored).
    std::vector<double> outside(dim_, 0.0);
    for (std::size_t i = 0; i < X_.rows; ++i) {
      if (std::fabs(r0[i]) <= tau) continue;
      const double ws = static_cast<double>(weights_[i]) * (r0[i] > T{0} ? tau64 : -tau64);
      const T* row = X_.row(i);
      for (std::size_t j = 0; j < features_; ++j) outside[j] += ws * static_cast<double>(row[j]);
      if (intercept_) outside[features_] += ws;
    }
    anchor_.inside_score.resize(dim_);
    for (std::size_t j = 0; j < dim_; ++j) anchor_.inside_score[j] = anchor_.score[j] - outside[j];
    anchor_.inside_score_ready = true;
  }
  // sum w psi_P0(r)^2 = sum_inside w (r0 - x~ D)^2 + tau^2 sum_outside w, then the near rows.
  const std::vector<double>& offset = point_expansion_.offset;
  const std::vector<double>& gram_offset = point_expansion_.gram_offset;
  double score_sq = anchor_.inside_square + tau64 * tau64 * anchor_.outside_weight;
  for (std::size_t j = 0; j < dim_; ++j) {
    score_sq += offset[j] * (gram_offset[j] - 2.0 * anchor_.inside_score[j]);
  }
  const ExpandedPoint& point = point_expansion_;
  const std::size_t near = point.rows.size();
  double* square = thread_rows<NearTerms, double>(2 * near);
  double* change = square + near;
  near_sums_rows(point.residual.data(), point.weight.data(), point.anchor_residual.data(), near,
                 tau, square, change);
  for (std::size_t k = 0; k < near; ++k) score_sq += square[k];
  // The indicator's curvature sum (w c, c in {0, 1}): the anchor's inside weight, then the near
  // rows that changed sides.
  double curvature_sum = weight_sum_ - anchor_.outside_weight;
  for (std::size_t k = 0; k < near; ++k) curvature_sum += change[k];
  return {.score_sq_sum = score_sq,
          .curvature_sum = curvature_sum,
          .curvature_sq_sum = curvature_sum,
          .inference_weight = weight_sum_,
          .inference_batches = 1};
}

template <std::floating_point T>
void BatchOps<T>::materialize_point() {
  if (!point_expansion_.active) return;
  T* residual = ws_.point.residual.data();
  for_each_block([&](std::size_t b) {
    for_each_chunk(b, [&](std::size_t lo, std::size_t hi) {
      RH_BRICK_SCOPE(prof_, EngineBrick::residual, (hi - lo) * dim_,
                     (hi - lo) * (features_ + 2) * sizeof(T), 2 * (hi - lo) * dim_);
      residual_rows(current_.data(), lo, hi, residual);
    });
  });
  point_expansion_.active = false;
  residual_point_ = current_;
  residual_known_ = true;
  projected_count_ = 0;
}

#define RH_EXPANSION_INSTANTIATE(T)                                                             \
  template bool BatchOps<T>::expansion_usable() const;                                          \
  template bool BatchOps<T>::expansion_enabled() const;                                         \
  template void BatchOps<T>::add_outside_score(std::size_t, std::size_t, const T*, const T*,    \
                                               double*) const;                                  \
  template void BatchOps<T>::near_products(const T*, std::vector<double>&) const;               \
  template bool BatchOps<T>::anchor_at_current();                                               \
  template std::vector<double> BatchOps<T>::anchor_offset(const Vector&) const;                 \
  template std::optional<std::vector<double>> BatchOps<T>::covered_offset(const Vector&) const; \
  template bool BatchOps<T>::begin_segment(const Vector&);                                      \
  template bool BatchOps<T>::find_near_rows(double);                                            \
  template std::vector<double> BatchOps<T>::anchor_margins(PointRows<T>*);                                   \
  template void BatchOps<T>::set_anchor(const std::vector<double>&);                            \
  template float BatchOps<T>::squared_reach(double);                                            \
  template bool BatchOps<T>::anchor_if_expanding(const Vector&, double);                        \
  template void BatchOps<T>::evaluate_by_expansion(const Vector&, std::vector<double>,          \
                                                   PointRows<T>&, ExpandedPoint&);              \
  template double BatchOps<T>::expansion_loss_change(double) const;                             \
  template double BatchOps<T>::expansion_loss() const;                                          \
  template InferenceSums BatchOps<T>::expansion_sums() const;                                   \
  template void BatchOps<T>::materialize_point();
RH_EXPANSION_INSTANTIATE(float)
RH_EXPANSION_INSTANTIATE(double)
#undef RH_EXPANSION_INSTANTIATE

}  // namespace rh::cpu
