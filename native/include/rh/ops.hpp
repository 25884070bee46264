#pragma once
// The interface between the solver drivers (written once, in core) and an engine (CPU, CUDA).
//
// An Ops object is bound to one batch and the state before it. It owns the batch's buffers and
// exposes whole-vector operations only: the drivers decide, the Ops compute. Every operation
// on coefficient-sized vectors goes through Ops so that an engine may keep them on a device;
// scalars come back as float64 (docs/numerics.md: reductions accumulate in float64).

#include <concepts>
#include <cstddef>
#include <span>

#include "rh/diagnostics.hpp"
#include "rh/state.hpp"
#include "rh/weighted_stats.hpp"

namespace rh {

// What the information update asks of the batch's final point (contract v3).
struct InformationRequest {
  double bandwidth = 0.0;  // > 0: the smoothed curvature c_h with this h (in the dtype), else
                           // the indicator of the Newton matrix
  bool matrices = false;   // also G_b = X~^T diag(w) X~ and K_b = X~^T diag(w psi^2) X~
  // factorization="qr" after an L1 batch: the new history must not pull at beta_b, as the
  // Cholesky mode's quadratic does not (the next batch's historical subgradient does), so the
  // smooth gradient left there (the L1 term's share) joins the linear term.
  bool anchor = false;
};

// Where the information update writes: J~ + J_b into `information`; G_b and K_b added to what
// `gram` and `score_gram` hold (both empty unless the request asks for the matrices).
template <class T>
struct InformationOutputs {
  std::span<T> information;
  std::span<T> gram;
  std::span<T> score_gram;
};

// The outcome of one factorization rung of the linear-solver ladder.
struct SolveAttempt {
  bool factored = false;  // the factorization succeeded (no exact zero pivot, SPD for Cholesky)
  double rcond = 0.0;     // LAPACK's 1-norm reciprocal condition estimate
  bool finite = false;    // every entry of the solution is finite
};

// What the linear-solver ladder needs: the Newton matrix H of the current point, its diagonal
// equilibration (shared/spec/method.md, contract v2) and its rungs, and the host transfers of
// coefficient-sized vectors through which the ladder scales the right-hand side and the step.
template <class O>
concept LadderOps = requires(O& ops, typename O::Vector& out, const typename O::Vector& v,
                             std::span<typename O::Scalar> host_out,
                             std::span<const typename O::Scalar> host_in, double x) {
  requires std::floating_point<typename O::Scalar>;
  { ops.dim() } -> std::same_as<std::size_t>;
  ops.assign(host_in, out);
  ops.copy_to_host(v, host_out);
  ops.hessian_diagonal(host_out);    // H_ii of the last form_hessian(), i = 0 .. dim() - 1
  ops.equilibrate_hessian(host_in);  // H_ij <- H_ij * (s_i * s_j), the product formed first, so
                                     // an exactly symmetric H stays so; the calls below see it
  { ops.hessian_symmetric() } -> std::same_as<bool>;
  { ops.solve_cholesky(v, out) } -> std::same_as<SolveAttempt>;
  { ops.solve_lu(v, out) } -> std::same_as<SolveAttempt>;
  // SVD least squares, singular values below x * sigma_max treated as zero; returns the rank kept.
  { ops.solve_min_norm(v, x, out) } -> std::same_as<std::size_t>;
};

template <class O>
concept SolverOps = LadderOps<O> &&
    requires(O& ops, typename O::Vector& out, const typename O::Vector& v,
             std::span<typename O::Scalar> host_out, double x) {
  { ops.intercept() } -> std::same_as<bool>;

  // Coefficient-sized vectors.
  { ops.make_vector() } -> std::same_as<typename O::Vector>;  // zero-filled, length dim()
  ops.copy(v, out);
  ops.scale(x, out);    // out = x * out
  ops.axpy(x, v, out);  // out += x * v
  { ops.dot(v, v) } -> std::same_as<double>;
  { ops.norm_inf(v) } -> std::same_as<double>;
  ops.soft_threshold(v, x, out);  // out = prox of x * ||.||_1 on the slopes; intercept copied

  // Batch quantities.
  { ops.weight_sum() } -> std::same_as<double>;
  // The mean of the diagonal of X~^T diag(w) X~ + J~ in float64 (LAMM's first phi, contract
  // v4): a property of the batch, not of a point. An engine may form it in an evaluation pass
  // it makes anyway; asked before one, it makes its own pass.
  { ops.diagonal_mean() } -> std::same_as<double>;
  { ops.host_weights() } -> std::same_as<std::span<const typename O::Scalar>>;
  ops.residuals_to_host(v, host_out);  // y - X~ beta; evaluate() before the calls below

  // At a point: evaluate() makes beta current (residual, psi, curvature in one fused pass with
  // bandwidth tau); the calls below refer to the current point until the next evaluate().
  ops.evaluate(v, x);
  ops.gradient(out);                                       // grad f
  { ops.objective(x) } -> std::same_as<double>;            // Q with L1 strength x
  ops.form_hessian(x);                                     // H with ridge x
  ops.project(v);                                          // remembers X~ v for objective_change
  { ops.objective_change(v, x) } -> std::same_as<double>;  // dQ_smooth(x * v), v projected
  // The information update at the current point, d x d row-major, and in the same pass the
  // batch's inference sums (inference_batches = 1), with psi and c taken at that point and the
  // request's curvature.
  {
    ops.information(InformationRequest{}, InformationOutputs<typename O::Scalar>{host_out})
  } -> std::same_as<InferenceSums>;
};

// Optional, for an engine that can save passes over X~: the drivers use these when an Ops has
// them and otherwise make the same calls one at a time. Both give bit-for-bit the results of
// the calls they replace; they change the cost, not the answer.
template <class O>
concept FusedTrialOps = SolverOps<O> &&
    requires(O& ops, std::span<const typename O::Vector> steps, std::span<double> changes,
             const typename O::Vector& v, double x) {
  // changes[k] = objective_change(steps[k], 1) for every k (each step projected as by
  // project()), reading X~ once for all of them.
  ops.objective_changes(steps, changes);
  // project(step), and in the same pass the evaluation at `candidate` with the current
  // bandwidth, kept aside: a following evaluate(candidate) with that bandwidth takes it as is.
  ops.project_and_prepare(v, v);
  // evaluate(beta, tau) for a caller that forms the Newton matrix or the information next: the
  // engine may form the point's Gram in the same pass.
  ops.evaluate_with_gram(v, x);
};

// Optional, for an engine that takes steps by expansion about a point whose Gram it keeps (the
// CPU engine, docs/native.md "Steps by expansion"): told a step of a solve that forms no Newton
// matrix (LAMM's) and how far the rest of the solve is expected to go (reach_factor times the
// step's length), it may form the current point's Gram where offsets that long would be expanded
// about it, so that the later points are evaluated without a pass over X~; true where the point
// is expanded about an anchor (formed now, or one it had), false where it takes passes. The
// results are those of the passes up to the expansion's regrouped sums.
template <class O>
concept AnchoringOps =
    SolverOps<O> && requires(O& ops, const typename O::Vector& v, double reach_factor) {
      { ops.anchor_if_expanding(v, reach_factor) } -> std::same_as<bool>;
    };

// Optional, for an engine whose residuals live in host memory (the CPU engine): y - X~ beta as
// residuals_to_host forms it, read where the engine keeps it instead of copied out; the view is
// valid until the next call on ops. The scale's median reads it (a row-length copy less).
template <class O>
concept HostResidualOps =
    SolverOps<O> && requires(O& ops, const typename O::Vector& v) {
      { ops.host_residuals(v) } -> std::same_as<std::span<const typename O::Scalar>>;
    };

// Optional, for a HostResidualOps engine that keeps a stream's last residual median and MAD
// between batches (rh/weighted_stats.hpp, ScaleGuess): the scale's selections guess their
// windows from it, and leave this batch's there.
template <class O>
concept ScaleGuessOps = HostResidualOps<O> && requires(O& ops) {
  { ops.scale_guess() } -> std::same_as<ScaleGuess&>;
};

// The outputs of the square-root information update (factorization="qr"): the new R~ (d x d,
// row-major, upper triangular, diagonal >= 0) and z~ (d); G_b and K_b added as for the Cholesky
// mode's information update.
template <class T>
struct SquareRootOutputs {
  std::span<T> factor;
  std::span<T> vector;
  std::span<T> gram;
  std::span<T> score_gram;
};

// The result of a square-root Newton step (rh/square_root.hpp): the rung (qr, or svd when R_H is
// rank-deficient), trcon's estimate of R_H squared (0 for svd), the rank kept.
struct SquareRootStep {
  Solver rung = Solver::qr;
  double rcond = 0.0;
  std::size_t rank = 0;
};

// For an engine that runs factorization="qr" (contract v4): the Newton step at the current point
// by QR of the stacked rows (history [R~ | z~], the inside rows sqrt(w) [x~ | y], sqrt(ridge) I
// rows; the undamped factor decides the rank first), its linear term from the outside rows, and the new (R~, z~) at the final point with the
// information update's curvature, with the batch's inference sums as information() gives them.
template <class O>
concept SquareRootOps = SolverOps<O> &&
    requires(O& ops, typename O::Vector& out, double x,
             SquareRootOutputs<typename O::Scalar> outputs) {
  { ops.square_root() } -> std::same_as<bool>;  // the history is (R~, z~)
  { ops.square_root_step(x, out) } -> std::same_as<SquareRootStep>;  // ridge x; out = step
  // Whether the current point's pattern (which rows are inside, the outside rows' signs) is
  // that of the point this was last called at; remembers this one.
  { ops.pattern_repeats() } -> std::same_as<bool>;
  { ops.square_root_information(InformationRequest{}, outputs) } -> std::same_as<InferenceSums>;
};

// Optional, for the proximal Newton variant of the L1 solver (rh/prox_newton.hpp).
template <class O>
concept L1ModelOps = SolverOps<O> &&
    requires(O& ops, typename O::Vector& out, const typename O::Vector& v, double x, double y) {
  // out = the step s minimizing g^T s + 1/2 s^T H s + x ||(beta + s)_S||_1 with H the matrix of
  // the last form_hessian(), g = the first vector, beta = the second; inner tolerance y. False
  // when H has a non-positive diagonal entry (the model has no minimizer along it).
  { ops.solve_l1_model(v, v, x, y, out) } -> std::same_as<bool>;
  // ||to_S||_1 - ||from_S||_1 (the slopes, not the intercept), summed term by term: near the
  // minimizer the change is far below the norms' rounding.
  { ops.l1_norm_change(v, v) } -> std::same_as<double>;
};

}  // namespace rh
