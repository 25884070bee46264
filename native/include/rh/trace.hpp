#pragma once
// Solver tracing (docs/tracing.md): what each iteration of a batch's solve saw and did.
//
// The drivers (rh/newton.hpp, rh/lamm.hpp, rh/prox_newton.hpp) take a TraceSink pointer: null when
// tracing is off, so off costs one branch per iteration. When on, each iteration appends one
// IterationTrace. The tensor statistics of the per-row quantities come from the engine's own
// passes (TracingOps), reduced per row block and merged in block order, so they do not depend on
// the thread count; no tensor is kept for them.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "rh/diagnostics.hpp"

namespace rh {

// Count, extremes, mean, spread and L2 norm of a tensor's finite entries, and how many entries
// are NaN or infinite. Built chunk by chunk (of_values, two passes over a chunk that sits in
// cache) and merged (Chan, Golub & LeVeque's pairwise update of the mean and the sum of squared
// deviations), always in the same order.
struct TensorStats {
  std::int64_t count = 0;  // every entry, finite or not
  std::int64_t nan = 0;
  std::int64_t inf = 0;
  double min = std::numeric_limits<double>::infinity();    // of the finite entries
  double max = -std::numeric_limits<double>::infinity();
  double mean = 0.0;
  double squared_deviations = 0.0;  // sum over finite entries of (v - mean)^2
  double sum_squares = 0.0;         // sum over finite entries of v^2

  std::int64_t finite() const { return count - nan - inf; }
  // The population standard deviation (numpy's default, ddof = 0); NaN without finite entries.
  double std_dev() const;
  double l2() const { return std::sqrt(sum_squares); }

  void merge(const TensorStats& other);

  template <std::floating_point T>
  static TensorStats of_values(const T* values, std::size_t n);
};

// Which solve of a batch an iteration belongs to: the first batch of an adaptive stream solves
// once with the pilot bandwidth before the main solve.
enum class SolvePhase { pilot, main };

struct IterationTrace {
  SolvePhase phase = SolvePhase::main;
  std::int64_t iteration = 0;  // 1, 2, ... within the solve
  // The ladder rung of this iteration's Newton step, else lamm or prox_newton.
  Solver solver = Solver::cholesky;
  double rcond = std::numeric_limits<double>::quiet_NaN();  // NaN: no Newton system solved
  double objective = 0.0;  // Q at the iteration's starting point (with the L1 term)
  double coef_norm = 0.0;  // ||beta||_2 at the starting point
  double step_norm = 0.0;  // ||s||_2 of the direction: the Newton step, the accepted LAMM step
  double step_scale = 0.0;  // the accepted fraction t of s; 0 when no trial was accepted
  std::int64_t halvings = 0;       // Armijo halvings, or doublings of LAMM's phi
  bool search_exhausted = false;   // every trial refused: the solve stops there
  std::int64_t rows = 0;
  std::int64_t quadratic_rows = 0;  // rows of positive weight with |r| <= tau
  TensorStats residual;             // r = y - X~ beta
  TensorStats score;                // w psi(r), per row
  TensorStats hessian_diagonal;     // H_ii of the Newton matrix; count 0 when none was formed
};

// Where the drivers put their records.
class TraceSink {
 public:
  void begin_solve(SolvePhase phase) {
    phase_ = phase;
    iteration_ = 0;
  }
  // A new record of the current solve, numbered; valid until the next call.
  IterationTrace& next() {
    IterationTrace& record = records.emplace_back();
    record.phase = phase_;
    record.iteration = ++iteration_;
    return record;
  }

  std::vector<IterationTrace> records;

 private:
  SolvePhase phase_ = SolvePhase::main;
  std::int64_t iteration_ = 0;
};

// The per-row statistics of one evaluation (residual, score, quadratic zone), as an engine
// accumulates them for a row block.
struct RowTrace {
  TensorStats residual;
  TensorStats score;
  std::int64_t quadratic_rows = 0;

  void merge(const RowTrace& other) {
    residual.merge(other.residual);
    score.merge(other.score);
    quadratic_rows += other.quadratic_rows;
  }
  // Adds rows [0, n): their residuals, weighted scores and weighted curvatures (non-zero in the
  // quadratic zone for a row of positive weight).
  template <std::floating_point T>
  void add_rows(const T* residuals, const T* weighted_scores, const T* weighted_curvatures,
                std::size_t n) {
    residual.merge(TensorStats::of_values(residuals, n));
    score.merge(TensorStats::of_values(weighted_scores, n));
    std::int64_t quadratic = 0;
    for (std::size_t i = 0; i < n; ++i) quadratic += weighted_curvatures[i] != T{0};
    quadratic_rows += quadratic;
  }
};

// An engine that can fill an iteration's per-row statistics from its last evaluation.
template <class O>
concept TracingOps = requires(O& ops, IterationTrace& record) { ops.trace_point(record); };

namespace detail {

// ||v||_2 in float64 through the Ops' dot product.
template <class O, class Vector>
double norm2(O& ops, const Vector& v) {
  return std::sqrt(ops.dot(v, v));
}

// The record of an iteration that has just evaluated beta: objective, point statistics.
template <class O>
IterationTrace* open_record(TraceSink* sink, O& ops, const typename O::Vector& beta,
                            double lambda) {
  if (sink == nullptr) return nullptr;
  IterationTrace& record = sink->next();
  record.objective = ops.objective(lambda);
  record.coef_norm = norm2(ops, beta);
  if constexpr (TracingOps<O>) ops.trace_point(record);
  return &record;
}

// The statistics of the Newton matrix's diagonal, read before the ladder equilibrates it.
template <class O>
void trace_hessian_diagonal(O& ops, IterationTrace* record) {
  if (record == nullptr) return;
  std::vector<typename O::Scalar> diagonal(ops.dim());
  ops.hessian_diagonal(std::span<typename O::Scalar>(diagonal));
  record->hessian_diagonal = TensorStats::of_values(diagonal.data(), diagonal.size());
}

}  // namespace detail

extern template TensorStats TensorStats::of_values<float>(const float*, std::size_t);
extern template TensorStats TensorStats::of_values<double>(const double*, std::size_t);

}  // namespace rh
