#pragma once
// rh::SolverOps on the CPU: BLAS for the products, fused loops for the per-row work, row blocks
// on the engine's thread pool. The intercept column of X~ is never materialized: it is the last
// coefficient, handled beside the products with X.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "rh/bricks/profiler.hpp"
#include "rh/cpu/engine.hpp"
#include "rh/engine_bricks.hpp"
#include "rh/ops.hpp"
#include "rh/state.hpp"
#include "rh/trace.hpp"
#include "rh/views.hpp"
#include "block_sums.hpp"
#include "row_blocks.hpp"
#include "row_kernels.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

namespace rh::cpu {

template <std::floating_point T>
class BatchOps {
 public:
  using Scalar = T;
  using Vector = std::vector<T>;

  // Views must outlive the object; the workspace must be reserved for this batch. Bricks are
  // timed on `profiler` (an off profiler when nobody profiles: one branch per scope).
  // scan_design: X's values were validated with rh::DesignValues::deferred, and the first pass
  // over X (residuals_to_host or evaluate: the drivers start with one of them) scans them chunk
  // by chunk (by the residuals where it forms them as products: product_rows_non_finite),
  // throwing X's validation error at the end of that pass, before any of its results is used. gram and chunk_bytes (resolved, not 0) are the engine's options
  // (EngineOptions). diagonal_in_pass: the first evaluation pass also forms diagonal_mean()
  // (an L1 batch, whose LAMM solve asks for it), from cache. unit_weights: every weight is
  // exactly 1, as the validation's scan found (rh::ValueScan): no scan of them here or in the
  // scale's selections.
  BatchOps(Workspace<T>& workspace, ThreadPool& pool, const StateView<T>& previous, MatrixView<T> X,
           std::span<const T> y, std::span<const T> sample_weight, bool fit_intercept,
           rh::bricks::Profiler& profiler, bool scan_design = false,
           GramStrategy gram = GramStrategy::incremental,
           std::size_t chunk_bytes = default_chunk_bytes, bool diagonal_in_pass = false,
           bool unit_weights = false);

  // Whether a batch of this shape runs its row blocks on the pool (min_parallel_entries).
  static bool runs_on_pool(std::size_t rows, std::size_t features) {
    return rows * (features + 1) >= min_parallel_entries;
  }

  std::size_t dim() const { return dim_; }
  bool intercept() const { return intercept_; }

  Vector make_vector() const { return Vector(dim_, T{0}); }
  void assign(std::span<const T> host, Vector& out) const;
  void copy_to_host(const Vector& v, std::span<T> host) const;
  void copy(const Vector& v, Vector& out) const { out = v; }
  void scale(double factor, Vector& out) const;
  void axpy(double factor, const Vector& v, Vector& out) const;
  double dot(const Vector& a, const Vector& b) const;
  double norm_inf(const Vector& v) const;
  void soft_threshold(const Vector& z, double level, Vector& out) const;

  double weight_sum() const { return weight_sum_; }
  double diagonal_mean();
  std::span<const T> host_weights() const { return weights_; }
  // At the last evaluation's point: a copy of its residual, no pass.
  void residuals_to_host(const Vector& beta, std::span<T> out);
  // The same residuals where the engine keeps them (ws_.point.residual), not copied out.
  std::span<const T> host_residuals(const Vector& beta);
  ScaleGuess& scale_guess() { return ws_.scale_guess; }

  void evaluate(const Vector& beta, double tau) { evaluate_point(beta, tau, false); }
  void gradient(Vector& out);
  // The loss part from the current point's residuals (a pass over row vectors, not X): the
  // evaluations, which the Newton and LAMM steps need only for their scores and curvatures,
  // leave it out.
  double objective(double lambda);
  void form_hessian(double ridge);
  void hessian_diagonal(std::span<T> out) const;
  // In place on ws_.hessian: every later reader of H (the rungs) sees Ĥ until the next
  // form_hessian. The Gram and J~, from which H is formed, are untouched.
  void equilibrate_hessian(std::span<const T> scales);
  bool hessian_symmetric() const;
  SolveAttempt solve_cholesky(const Vector& rhs, Vector& out);
  SolveAttempt solve_lu(const Vector& rhs, Vector& out);
  std::size_t solve_min_norm(const Vector& rhs, double rcond, Vector& out);
  void project(const Vector& step);
  double objective_change(const Vector& step, double t);
  // The information update and the batch's inference sums at the current point
  // (rh::SolverOps): J_b, G_b and K_b from the kept Gram and, where that is not all of them, a
  // pass over X forming what it does not give (a few rows' Grams, and K's inside rows), side by
  // side, chunk by chunk from cache; the sums come from the rows' residuals and weights in the
  // same loop.
  InferenceSums information(const InformationRequest& request, InformationOutputs<T> out);

  // rh::DriftOps (rh/drift.hpp), at the current point after form_hessian(): its Gram (the
  // Newton matrix less J~ and ridge) in float64, its sums of w psi^2 and w c from the residuals
  // (no pass over X), and a float64 dense solver for the test's d x d systems.
  void batch_gram_to_host(std::span<double> out) const;
  InferenceSums point_sums() const;
  // The batch score X~^T (w psi) at the current point, as the last gradient() summed it.
  void score_to_host(std::span<T> out) const { std::copy_n(ws_.score.begin(), dim_, out.begin()); }
  DenseSolver<double>& drift_solver() {
    ws_.drift_solver.resize(dim_);
    return ws_.drift_solver;
  }

  // rh::FusedTrialOps: several trial steps, or a trial step and the point after it, in one
  // pass over X: each chunk of rows is read from memory once and reused from cache.
  void objective_changes(std::span<const Vector> steps, std::span<double> changes);
  void project_and_prepare(const Vector& step, const Vector& candidate);
  // The Gram of the point formed in the evaluation's pass, from cache, when none is kept yet;
  // otherwise form_hessian brings the kept one to this point by rank-k corrections.
  // With GramStrategy::full every such evaluation forms its point's Gram.
  void evaluate_with_gram(const Vector& beta, double tau) {
    evaluate_point(beta, tau, !gram_valid_ || gram_strategy_ == GramStrategy::full);
  }

  // rh::AnchoringOps: true where the current point is expanded about an anchor already (it was
  // evaluated so, or is one); else, where steps by expansion are on and the point's rows near
  // the bandwidth for offsets up to reach_factor times this step's length are few enough to
  // expand about it, the point's Gram (the kept one brought here, or a new one) and true;
  // otherwise nothing, so a batch whose steps would take their passes pays no Gram it would not
  // have formed.
  bool anchor_if_expanding(const Vector& step, double reach_factor);

  // rh::TracingOps (docs/tracing.md): with tracing on, every evaluation pass also reduces the
  // residuals, weighted scores and quadratic-zone rows per row block (in the pass, from cache);
  // trace_point merges the current point's blocks in block order. Off: one branch per block.
  void set_tracing(bool on) { tracing_ = on; }

  // Steps by expansion (below) on or off (on by default where the batch allows them; off, every
  // step takes its pass: the tests' and benchmarks' comparison), and how many evaluations they
  // made.
  void set_expansion(bool on) { expansion_on_ = on; }
  std::size_t expanded_evaluations() const { return expanded_evaluations_; }
  void trace_point(IterationTrace& record) const;

  // rh::SquareRootOps (factorization="qr", square_root.cpp): the history is (R~, z~) when the
  // state view carries a factor. The step at the current point with the given ridge by QR of the
  // stacked rows, and the new (R~, z~) at it, each one pass over X in row chunks whose QR updates
  // a triangle per row block (LAPACK's triangular-pentagonal tpqrt), the blocks' triangles then
  // merged pairwise (a fixed tree), the history stacked under the result.
  bool square_root() const { return square_root_; }
  SquareRootStep square_root_step(double ridge, Vector& out);
  // Whether the current point's pattern (rows inside, outside rows' signs; zero weights aside)
  // is that of the point this was last called at; remembers this one. A pass over the residuals.
  bool pattern_repeats();
  InferenceSums square_root_information(const InformationRequest& request,
                                        SquareRootOutputs<T> out);

  // Steps by expansion (expansion.cpp): on a batch of at least min_expansion_entries entries
  // (Cholesky mode, no tracing) a Newton step from a point whose Gram is kept is evaluated
  // without a pass over X. Around the point where the step's run started (the anchor, with
  // residuals r0, score S0 and Gram G0) the loss of every row whose pattern (inside the
  // bandwidth, or the outside sign) is that of r0 is one quadratic in beta: the score at anchor +
  // D is S0 - G0 D plus the rows whose pattern may differ, the curvature that of r0 but for those
  // rows, the loss L0 - S0'D + D'G0D/2 plus the same rows. Which rows may differ is bounded by
  // |x~_i D| <= ||x~_i|| ||D||: the rows within that of the bandwidth are read from X, the rest
  // not at all. A step whose near rows are more than rows / max_expansion_rows_inverse takes the
  // usual pass. The residuals of such a point are formed only where a caller needs them all
  // (materialize_point).
  // rh::L1ModelOps, for the proximal Newton variant of the L1 solver.
  bool solve_l1_model(const Vector& gradient, const Vector& beta, double strength,
                      double tolerance, Vector& out);
  double l1_norm_change(const Vector& from, const Vector& to) const;

 private:
  // Below this many entries of X~ a batch runs on one thread: waking the pool's threads for each
  // of a solve's passes costs more than they save (measured on the reference machine, 2 threads
  // against 1: 4,096 x 17 took 1.46x as long, 8,192 x 33 0.89x, 16,384 x 65 0.68x).
  static constexpr std::size_t min_parallel_entries = std::size_t{1} << 17;
  // From this many entries of X~ the evaluations' score X~^T (w psi) is summed by our own
  // fixed-order kernel (row_dots.hpp, add_weighted_rows: ~3x OpenBLAS's GEMV on a chunk from
  // cache). Smaller batches keep OpenBLAS's GEMV, the reference's own (NumPy's OpenBLAS): on a
  // batch whose residuals are rounding noise (a fit that interpolates, fewer rows than
  // coefficients) both engines then round alike, and the residual MAD is the reference's exact
  // 0, where the contract's fallback scale applies, instead of a 1e-16 of another order's noise
  // (experiment steady-score-own-kernel). The choice depends on the shape only.
  static constexpr std::size_t min_own_score_entries = min_parallel_entries;
  // From this many entries of X~ a Newton step may be evaluated by expansion (expansion.cpp):
  // smaller batches keep their passes, whose results the reference's NumPy shares bit for bit
  // on the golden corpus' shapes.
  static constexpr std::size_t min_expansion_entries = min_parallel_entries;
  // A step is evaluated by expansion when at most rows / this many rows lie near the bandwidth.
  static constexpr std::size_t max_expansion_rows_inverse = 8;
  // A new near set covers this many times the step's reach (the later steps reuse it).
  static constexpr double near_radius_room = 1.25;
  // A full Gram is recomputed after this many incremental updates in a row, bounding the
  // rounding drift of chained corrections (the Gram is also fresh at the start of every batch).
  static constexpr std::uint32_t max_incremental_updates = 8;
  // The L1 model's coordinate descent (solve_l1_model) stops once a sweep moves no coordinate by
  // more than this share of the first sweep's largest move (or by the tolerance asked): an
  // inexact model step still descends (every sweep lowers the model from its value 0 at s = 0)
  // and the outer Armijo test and step criterion are unchanged, while far from the optimum,
  // where few rows are in the quadratic zone and H is ill-conditioned, sweeping to the model's
  // exact minimum took up to thousands of sweeps for a step the line search then shortened.
  static constexpr double model_relative_tolerance = 1e-2;
  // And after this many sweeps whatever they move: a model whose H is (nearly) singular (fewer
  // rows in the quadratic zone than coefficients, at a first batch's pilot) converges along its
  // flat directions at a crawl, and any sweep's point is a descending step already.
  static constexpr std::size_t max_model_sweeps = 100;
  // Coordinate descent's last sweep moving more than this share of the one before marks a
  // slowly converging model, whose step solve_l1_model then solves exactly.
  static constexpr double slow_model_sweep_ratio = 0.5;
  // An incremental update is tried only when at most rows / this many curvatures flipped, or,
  // from the batch's whole weighted Gram, (rows of the new curvature set) / max_flip_share_inverse
  // (update_gram_incrementally says why).
  static constexpr std::size_t max_flip_fraction_inverse = 8;
  static constexpr std::size_t max_flip_share_inverse = 2;

  // --- steps by expansion (expansion.cpp) ---
  // The point a run of steps by expansion expands around: its residuals (a copy, in
  // ws_.expansion_residual), bandwidth, score and Gram in float64, and what the information and
  // the loss at an expanded point need of it, formed when first asked.
  struct Anchor {
    bool valid = false;
    std::uint64_t id = 0;  // a new one for every anchor of the batch
    Vector point;
    T tau = 0;
    std::vector<double> score;  // S0 = X~^T (w psi(r0))
    std::vector<double> gram;   // G0 = X~^T diag(w c(r0)) X~, d x d
    double loss = 0.0;  // sum w rho(r0)
    // sum over the inside rows of w r0 x~ (A0); of w r0^2, and the outside rows' sum of w
    std::vector<double> inside_score;
    bool inside_score_ready = false;
    double inside_square = 0.0;
    double outside_weight = 0.0;
  };
  // A step from the current point (offset `from` of the anchor): the rows that may leave the
  // anchor's pattern anywhere on it, with their residuals at the current point and projections.
  struct Segment {
    bool valid = false;
    Vector from_point;  // the current point it starts at
    Vector step;
    // The near rows are those of every offset up to this long (2-norm) from the anchor of this
    // id: the segment's, and the next steps' while they stay within it.
    double radius = 0.0;
    std::uint64_t near_anchor = 0;
    std::uint64_t near_id = 0;  // a new one for every near set gathered
    std::vector<std::size_t> rows;
    std::vector<std::vector<std::size_t>> block_rows;  // each block's, as its scan lists them
    // Their rows of X (rows x features) are gathered into ws_.near_design; what the later loops
    // read of them is staged here too, in their order, so that those loops run contiguously
    // instead of gathering from the batch's arrays at random.
    std::vector<T> y;
    std::vector<T> weight;
    std::vector<T> anchor_residual;  // r0
    std::vector<double> residual;    // at the current point
    std::vector<double> projection;  // x~_i . step
    double slope = 0.0;       // (S0 - G0 from)' step
    double curvature = 0.0;   // step' G0 step
  };
  // A point evaluated by expansion: its offset from the anchor, and the rows near the
  // bandwidth with their residuals there.
  struct ExpandedPoint {
    bool active = false;
    std::vector<double> offset;
    std::vector<double> gram_offset;  // G0 offset
    std::vector<std::size_t> rows;
    std::vector<double> residual;
    std::vector<T> weight;           // the rows' weights and anchor residuals, as Segment's
    std::vector<T> anchor_residual;
    std::uint64_t near_id = 0;       // the near set (Segment::near_id) `rows` are
    // The curvature in its buffer is the anchor's (this id) but on `rows`; 0: not known.
    std::uint64_t curvature_anchor = 0;
  };
  // The record of a PointRows buffer (ws_.point's or ws_.prepared's).
  ExpandedPoint& expansion_of(const PointRows<T>& rows) {
    return &rows == &ws_.point ? point_expansion_ : prepared_expansion_;
  }
  double point_loss();  // objective()'s sum w rho(r) from the current point's residuals
  bool expansion_usable() const;
  bool expansion_enabled() const;  // expansion_usable but for the rows' norms
  // The rows' squared 2-norms of x~ (rounded up), rows [lo, hi), from cache in a pass.
  void add_row_norms(std::size_t lo, std::size_t hi) {
    row_squared_norms(X_.row(lo), hi - lo, features_, intercept_, ws_.row_norms.data() + lo);
  }
  // Adds sum (w psi) x~ over rows [lo, hi) outside the bandwidth (zero curvature) to partial;
  // scores[k] is row lo + k's w psi.
  void add_outside_score(std::size_t lo, std::size_t hi, const T* curvature, const T* scores,
                         double* partial) const;
  // Makes the current (formed) point the anchor when its Gram is the one kept; false if not.
  bool anchor_at_current();
  // The current point's rows as an anchor's (ws_.expansion_residual, ws_.expansion_margin), a
  // row pass; returns the blocks' sums, three per block, for set_anchor. With curvature_rows, the
  // anchor's indicator curvature is written into its weighted_curvature in the same pass.
  std::vector<double> anchor_margins(PointRows<T>* curvature_rows);
  // The current point, its margins formed with these sums and its Gram the one kept, as the
  // anchor.
  void set_anchor(const std::vector<double>& sums);
  // near_flags' squared radius for offsets up to `radius`: a float rounded up.
  static float squared_reach(double radius);
  // Sets segment_ for `step` from the current point; false when the step needs the usual pass.
  bool begin_segment(const Vector& step);
  // segment_'s near rows for offsets up to `radius`, gathered; false if they are too many.
  bool find_near_rows(double radius);
  // The offset of `point` from the anchor; and that offset where segment_ covers the point.
  std::vector<double> anchor_offset(const Vector& point) const;
  std::optional<std::vector<double>> covered_offset(const Vector& point) const;
  // The evaluation at `point` (covered by segment_) into `rows` and `expanded`.
  void evaluate_by_expansion(const Vector& point, std::vector<double> offset, PointRows<T>& rows,
                             ExpandedPoint& expanded);
  // objective_change's loss part along segment_'s step, t times it.
  double expansion_loss_change(double t) const;
  // The loss part of objective() and the information's sums at the current expanded point.
  double expansion_loss() const;
  InferenceSums expansion_sums() const;
  // The residuals of the current expanded point, all of them, by a pass (y - X~ beta): from
  // here it is an ordinary point.
  void materialize_point();
  // The near rows' x~ . v (v of dim_, the intercept's entry added) into out, in float64.
  void near_products(const T* v, std::vector<double>& out) const;

  // The deferred scan of X (scan_design): whether rows [lo, hi) hold a non-finite value (timed
  // as the validate brick), and the end of the scan after the first pass: throws X's validation
  // error if one was found.
  bool scan_design_rows(std::size_t lo, std::size_t hi) const;
  // The same from rows [lo, hi)'s residuals, just formed as products with X~ at a finite point:
  // only a chunk with a non-finite residual is scanned.
  bool product_rows_non_finite(std::size_t lo, std::size_t hi, const T* residual) const;
  void finish_design_scan(bool found);
  // For the passes that never come first: throws std::logic_error if X is still unscanned.
  void require_design_scanned() const;
  // residuals_to_host, copying into out unless it is null (host_residuals).
  void form_residuals(const Vector& beta, T* out);
  // out[begin, end) = y - X~ beta on those rows (untimed: callers time it as a residual brick);
  // with_norms: the rows' squared norms into ws_.row_norms from the same read.
  void residual_rows(const T* beta, std::size_t begin, std::size_t end, T* out,
                     bool with_norms = false) const;
  // The residuals at beta = (the evaluated point) + a projected step, from the evaluated point's
  // (rows where that would cancel take the product).
  void stepped_residual_rows(const T* beta, const T* projection, std::size_t lo, std::size_t hi,
                             T* residual) const;
  // Where an evaluation takes the residual of its point from. Every way gives the same bits in
  // the fused and the one-call-at-a-time paths, as both choose it by the same rule.
  struct ResidualSource {
    enum Kind {
      product,  // y - X~ beta, a product with X~
      known,    // already in ws_.point.residual (the point of residuals_to_host or the last one)
      step,     // ws_.point.residual - X~ s, s a step just projected that leads to the point
    } kind = product;
    const T* projection = nullptr;  // step: X~ s
  };
  ResidualSource residual_source(const Vector& point, bool into_current) const;
  // The slot of a projected step s with residual_point_ + s == point in every entry (as
  // beta + s rounds in T), or -1.
  int slot_reaching(const Vector& point) const;
  T* projection(std::size_t slot) { return ws_.projections.data() + slot * X_.rows; }
  const T* projection(std::size_t slot) const { return ws_.projections.data() + slot * X_.rows; }
  // The evaluation at beta of rows [lo, hi) of a block into `point`, their w * psi into
  // scores[0, hi - lo) (a chunk's buffer); adds the rows' score to the block's partial (a
  // d-vector) and their intercept score to score_sum.
  void evaluate_rows(const T* beta, const ResidualSource& source, std::size_t lo, std::size_t hi,
                     PointRows<T>& point, T* scores, T* partial, LaneSum& score_sum) const;
  // Adds sum_i w_i x_ij^2 of rows [lo, hi) to columns[j], j < features (the diagonal of
  // X^T diag(w) X; untimed: callers time it).
  void add_weighted_squares(std::size_t lo, std::size_t hi, double* columns) const;
  // diagonal_mean() from the blocks' column sums in ws_.diagonal_partials (blocks x features).
  double finish_diagonal_mean() const;
  // evaluate() and evaluate_with_gram(): with_gram forms the point's Gram in the pass.
  void evaluate_point(const Vector& beta, double tau, bool with_gram);
  // A whole evaluation pass at beta into `point`; project_step, if given, is projected into
  // slot 0 in the same pass (before each chunk's evaluation); with_gram: the point's full Gram
  // is formed too.
  void evaluate_pass(const T* beta, const ResidualSource& source, PointRows<T>& point,
                     const T* project_step, bool with_gram);
  // Room for this many projection slots: Newton uses one, LAMM's fused trials up to
  // phi_trials_per_pass, so the buffer grows to what a solve needs (and then stays).
  void reserve_projection_slots(std::size_t slots);
  // Remembers steps as the projected ones (slots 0, 1, ...) for residual_source, with room for
  // their projections.
  void remember_projected(std::span<const Vector> steps);
  // Slot `slot` of the projections, rows [lo, hi) = X~ step on those rows.
  void project_rows(const T* step, std::size_t slot, std::size_t lo, std::size_t hi);
  // Adds w * (rho(r - t a) - rho(r)) of rows [lo, hi) to sum, a = the slot's projection: a
  // block's sum is the same bit for bit whether its rows come in one call or chunk by chunk.
  void add_loss_change(LaneSum& sum, std::size_t slot, std::size_t lo, std::size_t hi,
                       T factor) const;
  // dQ_smooth(t * step) from the loss part of the change: adds the history terms.
  double smooth_change(const Vector& step, T factor, double loss_change);
  // The history terms of dQ_smooth(t * step), in the order smooth_change adds them to the loss
  // part: loss + quadratic - linear.
  struct HistoryChange {
    double quadratic;
    double linear;
  };
  HistoryChange history_change(const Vector& step, T factor);
  // Runs fn(b) for every row block: on the pool when the batch repays waking its threads, else
  // in block order on this thread. The blocks are the same either way, and so are the results.
  template <class Fn>
  void for_each_block(Fn&& fn) {
    if (parallel_) {
      pool_.run(blocks_.count(), fn);
    } else {
      for (std::size_t b = 0; b < blocks_.count(); ++b) fn(b);
    }
  }
  // Calls fn(lo, hi) for the cache-sized chunks of block b, in order. Every pass over rows goes
  // through here, so all of them cut X the same way and agree bit for bit.
  template <class Fn>
  void for_each_chunk(std::size_t b, Fn&& fn) const {
    const std::size_t end = blocks_.end(b);
    for (std::size_t lo = blocks_.begin(b); lo < end; lo += chunk_) fn(lo, std::min(end, lo + chunk_));
  }
  // out = sqrt(weight) * x~ of one row, the intercept's entry sqrt(weight).
  void scale_row(std::size_t row, T weight, T* out) const;
  // One block's share of a full Gram: its rows of non-zero curvature, in row order, either
  // (thin_gram_) added by the thin-Gram kernel (gram_kernel.hpp) into its partial chunk by chunk,
  // the chunk's rows listed in a buffer of the thread's, or scaled into a staging buffer of the
  // thread's and multiplied by SYRK into its partial every stage_rows. Rows come chunk by chunk,
  // from full_gram or from an evaluation pass; either way the result depends on the rows only,
  // so both give the same bits.
  struct BlockGram {
    T* scaled;            // the SYRK's staging
    std::size_t* rows;    // the kernel's row list (one slice long: slice_rows)
    T* partial;
    std::size_t used = 0;    // rows of the block with non-zero curvature
    std::size_t staged = 0;  // of those, scaled and not yet multiplied
  };
  // Block b's Gram into its buffer of gram_sums_ (started by start_gram_sums), staging slot 0.
  BlockGram block_gram(std::size_t b);
  // Before a pass that forms per-block Grams: parts sums, folded into totals as blocks finish.
  void start_gram_sums(std::size_t parts, const typename BlockSums<T>::Totals& totals);
  static constexpr std::size_t gram_sums_budget_bytes = std::size_t{4} << 20;
  // After finish_block_gram: block b's partial(s) folded in once the blocks before it are.
  void fold_block_gram(std::size_t b, EngineBrick brick);
  // The totals' lower triangles mirrored: exactly symmetric.
  void mirror_lower(T* out) const;
  // Grams formed side by side in one pass (the information pass's four).
  static constexpr std::size_t max_grams_per_pass = 4;
  BlockGram block_gram_into(T* partial, std::size_t slot) const;
  std::size_t gram_stage_rows() const { return std::max(chunk_, 4 * dim_); }  // amortizes C's traffic
  void add_gram_rows(BlockGram& gram, std::size_t lo, std::size_t hi, const T* curvature,
                     EngineBrick brick) const;
  void multiply_staged(BlockGram& gram, EngineBrick brick) const;
  void finish_block_gram(BlockGram& gram, EngineBrick brick) const;
  // Whether the kept Gram is at ws_.point's curvature by their stamps (false: not known).
  bool gram_kept_at_point() const {
    return gram_valid_ && gram_curvature_stamp_ != 0 &&
           gram_curvature_stamp_ == ws_.point.curvature_stamp;
  }
  // ws_.gram, its blocks folded in (start_gram_sums into it), mirrored and kept as the Gram at
  // `point`'s curvature.
  void reduce_gram(const PointRows<T>& point);
  // Brings ws_.gram to X~^T diag(w * c) X~ at the current point, exactly symmetric: from the
  // Gram of an earlier point of this batch by rank-k corrections for the rows whose curvature
  // flipped (GramStrategy::incremental), or afresh; kept as it is when no curvature changed.
  // Timed as `brick` (gram or info_update).
  void weighted_gram(EngineBrick brick);
  bool gram_at_current_curvature(EngineBrick brick) const;
  void full_gram(EngineBrick brick);
  bool update_gram_incrementally(EngineBrick brick);  // false: too many flips, nothing changed
  // The square-root mode's pass: the QR of the rows sqrt(w c) [x~ | y] (c = curvature(r)), then
  // of the history [R~ | z~] stacked below them; the linear term sum (w psi - w c r) x~ in
  // float64. ws_.root.stacked holds [R_H | q] ((d+1) x (d+1), column-major), the columns
  // equilibrated by ws_.root.scales. residual_rhs: the same model for the step from the current
  // point, [sqrt(w c) x~ | sqrt(w c) r] and [R~ | z~ - R~ beta]: the right-hand sides are then the
  // residuals, so a next step refines this one as iterative refinement does.
  // A Newton step's pass (residual_rhs) also carries the update's right-hand side
  // [sqrt(w c) y; z~] as column d + 1, so that the information update at a final point of the
  // same pattern is this factorization (square_root_information).
  template <class Curvature>
  void stack_rows(Curvature&& curvature, bool residual_rhs, std::vector<double>& linear);
  // ws_.root.stacked <- the triangle of it over m more rows (m x n, column-major).
  void stack_below(T* rows, std::size_t m);
  // The pattern class of row i at the current point: 0 zero weight, 1 inside, 2 above, 3 below.
  std::uint8_t pattern_class(std::size_t i) const;
  // Keeps the Newton step's factorization just made (ws_.root.stacked, before any ridge rows)
  // with its linear term, and the point's pattern and bandwidth, for the information update.
  void keep_step_factorization(const std::vector<double>& linear);
  // Whether the current point has the kept step factorization's pattern and bandwidth.
  bool at_step_pattern();
  // The history terms at the current point: R~ beta - z~ (float64), and R~^T of it into
  // information_delta(64) (what J~ (beta - beta~) is in the Cholesky mode).
  void square_root_history();
  // J~ v into out, J~ as stored (row-major, never symmetrized); in T and in float64.
  void apply_information(const T* v, T* out) const;
  void apply_information64(const double* v, double* out) const;

  Workspace<T>& ws_;
  ThreadPool& pool_;
  BlockSums<T> gram_sums_;  // the per-block Grams of a pass on their way into its totals
  rh::bricks::Profiler& prof_;
  std::uint32_t evaluations_ = 0;  // evaluate() calls: the profiler's iteration index
  MatrixView<T> X_;
  std::span<const T> y_;
  std::span<const T> weights_;
  std::span<const T> previous_coef_;
  std::span<const T> previous_information_;
  std::span<const T> factor_;  // R~ and z~ (factorization="qr"), else empty
  std::span<const T> vector_;
  bool square_root_;
  bool intercept_;
  bool scan_design_;  // X's values are still to be scanned (rh::DesignValues::deferred)
  std::size_t features_;
  std::size_t dim_;
  RowBlocks blocks_;
  bool parallel_;  // the row blocks run on the pool (min_parallel_entries)
  bool own_score_;  // the score by add_weighted_rows, else OpenBLAS's GEMV (min_own_score_entries)
  GramStrategy gram_strategy_;
  bool thin_gram_;  // Grams by the thin-Gram kernel, else by SYRK (gram::use_kernel: d and T only)
  std::size_t chunk_;                    // rows per cache-sized chunk of a fused pass
  bool gram_valid_ = false;              // ws_.gram belongs to an earlier point of this batch
  std::uint64_t curvature_stamps_ = 0;   // the last PointRows::curvature_stamp given
  std::uint64_t gram_curvature_stamp_ = 0;  // the stamp of the curvature ws_.gram is at
  std::uint32_t incremental_updates_ = 0;  // since the last full Gram
  double weight_sum_ = 0.0;
  bool diagonal_in_pass_;                   // the next evaluation pass forms diagonal_mean_
  std::optional<double> diagonal_mean_;     // diagonal_mean(), once formed
  const double* information64_;  // J~ in float64: the state's own array for a float64 batch
  double effective_weight_;      // W before this batch
  double history_weight_;        // W * previous lambda in T: the subgradient's scale
  Vector current_;               // the point of the last evaluate()
  T tau_ = 0;
  // ws_.point holds the evaluation at current_ with tau_ (cleared by residuals_to_host, which
  // writes ws_.point.residual): evaluate_point at that point and bandwidth skips its pass.
  bool point_valid_ = false;
  // ws_.point.residual = y - X~ residual_point_ (the last evaluation's point, or that of
  // residuals_to_host), when residual_known_.
  Vector residual_point_;
  bool residual_known_ = false;
  // Slots 0 .. projected_count_ - 1 hold X~ of these steps, projected since residual_point_ was
  // set (residual_source: the point a step leads to has the known residual minus its projection).
  std::vector<Vector> projected_steps_;
  std::size_t projected_count_ = 0;
  Vector prepared_point_;        // the point ws_.prepared holds, when prepared_valid_
  T prepared_tau_ = 0;
  bool prepared_valid_ = false;
  bool tracing_ = false;  // evaluation passes fill PointRows::trace_partials
  const bool expansion_allowed_;  // min_expansion_entries, the Cholesky mode
  bool expansion_on_ = true;      // set_expansion
  std::size_t expanded_evaluations_ = 0;
  bool row_norms_ready_ = false;  // ws_.row_norms holds this batch's
  mutable Anchor anchor_;         // its sums are formed when first read
  Segment segment_;
  ExpandedPoint point_expansion_;     // ws_.point's, when it was evaluated by expansion
  ExpandedPoint prepared_expansion_;  // ws_.prepared's
  bool pattern_known_ = false;  // ws_.root.pattern belongs to a point of this batch
  bool step_kept_ = false;      // ws_.root.step_* hold a Newton step of this batch
  T step_tau_ = 0;              // its bandwidth
};

extern template class BatchOps<float>;
extern template class BatchOps<double>;

}  // namespace rh::cpu
