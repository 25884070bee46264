#pragma once
// Buffers an engine keeps across batches for one dtype. They are sized for the current feature
// count and the largest batch seen so far, so a stream of same-shaped batches allocates nothing
// after its first batch.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dense_solver.hpp"
#include "fault_injection.hpp"
#include "l1_model.hpp"
#include "rh/lamm.hpp"
#include "rh/trace.hpp"
#include "rh/weighted_stats.hpp"

namespace rh::cpu {

// What an evaluation at one point leaves behind: the per-row quantities and the per-block
// partial sums of the score and the loss. (w * psi is used only in the pass, chunk by chunk:
// it lives in a chunk-sized buffer of the thread's, not here.)
template <std::floating_point T>
struct PointRows {
  std::vector<T> residual;            // r = y - X~ beta
  std::vector<T> weighted_curvature;  // w * c(r)
  std::vector<T> score_partials;      // blocks x d: X~^T (w * psi) of each block
  std::vector<double> loss_partials;  // sum of w * rho(r) of each block
  std::vector<RowTrace> trace_partials;  // each block's row statistics, when tracing
  // blocks x d: X~^T (w psi) over the rows outside the bandwidth, formed by a pass of a batch
  // that may take steps by expansion (BatchOps, expansion.cpp), when outside_formed
  std::vector<double> outside_partials;
  bool outside_formed = false;
  // A stamp of weighted_curvature's contents, new at every write of it (BatchOps; 0: none of
  // the current batch's), so that BatchOps can tell that its kept Gram is this curvature's
  // without comparing the rows.
  std::uint64_t curvature_stamp = 0;

  void reserve_rows(std::size_t rows) {
    residual.resize(rows);
    weighted_curvature.resize(rows);
  }
  void reserve_blocks(std::size_t blocks, std::size_t dim) {
    score_partials.resize(blocks * dim);
    loss_partials.resize(blocks);
    trace_partials.resize(blocks);
    outside_partials.resize(blocks * dim);
  }
};

// The square-root mode's buffers (square_root.cpp), sized on its first use.
template <std::floating_point T>
struct SquareRootBuffers {
  // n = d + 1 columns, or d + 2 for a Newton step (its right-hand sides r and y): stacked_columns.
  std::size_t stacked_columns = 0;
  std::vector<T> block_triangles;  // blocks x n x n, column-major
  std::vector<T> reflectors;       // blocks x nb x n: tpqrt's T
  std::vector<T> work;             // blocks x nb x n: tpqrt's work
  std::vector<double> linear_partials;  // blocks x d
  std::vector<double> column_partials;  // blocks x d: the columns' sums of w c x~^2
  std::vector<T> scales;                // the columns' equilibration
  std::vector<T> stacked;  // n x n: [R_H | q (| q_y)] over its last row(s)
  // The last Newton step's factorization, kept for the information update: [R_H | q | q_y]
  // ((d+2) x (d+2), before any ridge rows), its scales, linear term and pattern.
  std::vector<T> step_stacked;
  std::vector<T> step_scales;
  std::vector<double> step_linear;
  std::vector<std::uint8_t> step_pattern;
  std::vector<std::uint8_t> pattern;  // the pattern at the point pattern_repeats() saw last
  std::vector<std::uint8_t> block_flags;  // blocks: a per-block verdict of a pass over rows
  std::vector<double> block_sums;         // blocks x 4: the information update's row sums
  std::vector<T> below_rows;  // rows stacked below the triangle: the history, the ridge rows
  std::vector<double> history_residual;  // R~ beta - z~ at the current point
};

template <std::floating_point T>
struct Workspace {
  // A size is recorded only once its buffers are all allocated: should an allocation throw
  // (std::bad_alloc, a MemoryError in Python), the next call sizes them again rather than
  // trusting buffers of the wrong size.
  void reserve(std::size_t dim, std::size_t rows, std::size_t blocks) {
    if (dim != dim_) {
      dim_ = rows_ = blocks_ = 0;  // every dim-shaped buffer below is re-sized
      fault::allocation_point();
      delta.assign(dim, T{0});
      information_delta.assign(dim, T{0});
      history_sign.assign(dim, T{0});
      score.assign(dim, T{0});
      hessian.assign(dim * dim, T{0});
      gram.assign(dim * dim, T{0});
      gram_change.assign(dim * dim, T{0});
      fault::allocation_point();  // midway: half the buffers already have the new size
      delta64.assign(dim, 0.0);
      information_delta64.assign(dim, 0.0);
      trial64.assign(dim, 0.0);
      information_trial64.assign(dim, 0.0);
      model_step.assign(dim, 0.0);
      model_product.assign(dim, 0.0);
      if constexpr (!std::same_as<T, double>) information64.assign(dim * dim, 0.0);
      solver.resize(dim);
      dim_ = dim;
    }
    if (rows > rows_) {
      fault::allocation_point();
      point.reserve_rows(rows);
      prepared.reserve_rows(rows);
      gram_curvature.resize(rows);
      rows_ = rows;
    }
    if (blocks > blocks_) {
      fault::allocation_point();
      point.reserve_blocks(blocks, dim);
      prepared.reserve_blocks(blocks, dim);
      scratch_partials.resize(blocks * phi_trials_per_pass);
      blocks_ = blocks;
    }
  }

  PointRows<T> point;     // the current point of the batch's solve
  PointRows<T> prepared;  // a point evaluated ahead of time (BatchOps::project_and_prepare)

  // One entry per row.
  std::vector<T> projections;         // X~ s of each step s being tried, slot k at k * rows;
                                      // grown to the slots a pass uses (BatchOps)
  std::vector<T> gram_curvature;      // w * c of the point the maintained Gram belongs to
  // Per row block: the rows whose w * c differs from gram_curvature (the incremental Gram's
  // corrections), listed by the block's scan.
  std::vector<std::vector<std::size_t>> flipped_rows;
  // The information pass (BatchOps::information), sized on first use.
  std::vector<T> band_added_weights;    // w * c_h on the rows outside the quadratic zone
  std::vector<T> band_removed_weights;  // w * (1 - c_h) on the rows inside it
  std::vector<T> outlier_weights;       // w on the rows outside the quadratic zone, else 0
  std::vector<T> score_sq_weights;      // w * psi^2 on the rows inside it, else 0
  // Steps by expansion (BatchOps, expansion.cpp), sized on first use by the batches that take
  // them: the rows' squared norms of x~ and the anchor's residuals.
  std::vector<float> row_norms;  // squared, rounded up
  std::vector<T> expansion_residual;
  std::vector<float> expansion_margin;  // each row's distance from the bandwidth's edge
                                        // (row_kernels.hpp, anchor_rows)
  std::vector<T> near_design;  // the near rows of X, gathered (grown, never shrunk: a batch
                               // gathers ~1 MB, which would be allocated and zeroed anew)

  // One slot per row block, combined in block order.
  std::vector<double> scratch_partials;  // blocks x (steps tried in one pass)
  // The per-block Grams of a pass on their way into its totals (BlockSums: a few blocks' at a
  // time, each up to the information pass's four d x d), grown on first use.
  std::vector<T> gram_partials;
  std::vector<T> inference_grams;          // 4 x d x d: the information pass's Grams' sums
  std::vector<double> inference_partials;  // blocks x 4: the inference sums of each block
  std::vector<double> diagonal_partials;   // blocks x p: sum w x^2 per column (LAMM's first
                                           // phi), sized on first use

  // Coefficient-sized.
  std::vector<T> delta;              // beta - beta~
  std::vector<T> information_delta;  // J~ delta
  std::vector<T> history_sign;       // s~ = sign(beta~) on the slopes
  std::vector<T> score;              // X~^T (w * psi)
  std::vector<T> hessian;            // d x d, row-major
  std::vector<T> gram;               // the maintained X~^T diag(w c) X~, exactly symmetric
  std::vector<T> gram_change;        // the flipped rows' corrections to the Gram, summed
  // The objective's quadratic terms are evaluated in float64 (docs/numerics.md).
  std::vector<double> delta64;
  std::vector<double> information_delta64;  // J~ delta in float64
  std::vector<double> trial64;              // the step s being tried
  std::vector<double> information_trial64;  // J~ s in float64
  std::vector<double> information64;        // J~ in float64, for a float32 batch only
  std::vector<double> model_step;           // the L1 model's step s, being solved for
  std::vector<double> model_product;        // H s, kept up to date by coordinate descent
  std::vector<double> model_matrix;         // the symmetric part of H in float64 (sized on
                                            // first use, by proximal Newton)
  std::vector<std::size_t> model_working_set;  // the coordinates its sweeps visit
  L1ModelBuffers model_polish;                 // its active-set solve's (l1_model.hpp)
  DenseSolver<T> solver;
  SquareRootBuffers<T> root;
  DenseSolver<double> drift_solver;  // the drift test's float64 host ladder (rh/drift.hpp)
  ScaleGuess scale_guess;  // the last residual scale's median and MAD (BatchOps::scale_guess)

 private:
  std::size_t dim_ = 0;  // no batch has d = 0
  std::size_t rows_ = 0;
  std::size_t blocks_ = 0;
};

}  // namespace rh::cpu
