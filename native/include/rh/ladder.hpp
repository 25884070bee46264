#pragma once
// The linear-solver ladder (shared/spec/method.md, contract v2; docs/numerics.md). The Newton
// system H x = rhs is first equilibrated by H's diagonal, s_i = 1/sqrt(H_ii), so that the rungs
// see Ĥ = D^-1 H D^-1 whose conditioning no longer depends on the units of the columns. Then:
// Cholesky when Ĥ is exactly symmetric, LU, and the minimum-norm SVD solution. A rung is
// accepted only when it factored, its reciprocal condition estimate is at least d * eps(dtype),
// and the solution is finite. The step is x_i = s_i z_i with Ĥ z = s ∘ rhs.

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "rh/diagnostics.hpp"
#include "rh/error.hpp"
#include "rh/ops.hpp"

namespace rh {

// What the ladder did for one Newton system.
struct LadderResult {
  Solver rung = Solver::cholesky;
  double rcond = 0.0;     // 1-norm reciprocal condition estimate of Ĥ for the accepted rung; 0 for SVD
  std::size_t rank = 0;   // dim() unless the SVD rung cut singular values
};

// Host scratch for the equilibration, kept by the caller across the iterations of a solve.
template <std::floating_point T>
struct LadderScratch {
  std::vector<T> scales;
  std::vector<T> values;
};

// The equilibration factors in place of H's diagonal: s_i = 1/sqrt(H_ii), 1 where H_ii is not a
// finite positive normal number (a zero column, say: nothing to scale by). Normal: for a
// subnormal H_ii, s_i * s_j overflows and the equilibrated matrix would hold inf or NaN, on
// which LAPACK's SVD can loop forever (float32 data near 1e-22; tests/test_reliability_numbers.py). Written here rather than
// with LAPACK's ?poequ/?laqsy: ?poequ stops at the first non-positive diagonal entry and ?laqsy
// scales only when it judges it worthwhile (scond < 0.1), while the contract scales always and
// keeps 1 for such entries, the same on every engine.
template <std::floating_point T>
void equilibration_scales(std::span<T> diagonal_to_scales) {
  for (T& value : diagonal_to_scales) {
    value = (std::isnormal(value) && value > T{0}) ? T{1} / std::sqrt(value) : T{1};
  }
}

namespace detail {

// v <- s ∘ v, through the host (d values: negligible next to the d^3 / 3 of a factorization).
template <LadderOps O>
void scale_by(O& ops, std::span<const typename O::Scalar> scales,
              std::vector<typename O::Scalar>& values, typename O::Vector& v) {
  ops.copy_to_host(v, std::span<typename O::Scalar>(values));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] *= scales[i];
  ops.assign(std::span<const typename O::Scalar>(values), v);
}

// A Newton system with a non-finite entry has no usable step, and LAPACK must not see it: its
// SVD can loop forever on one (OpenBLAS's ?bdsqr on float32 data whose squares overflow; found
// by tests/test_reliability_numbers.py). Both the diagonal (Σ w x², which overflows first) and
// the right-hand side are checked; d values each.
template <std::floating_point T>
void require_finite_system(std::span<const T> values, const char* what) {
  for (const T v : values) {
    if (!std::isfinite(v)) {
      throw NumericalError(std::string("the Newton system's ") + what + " is not finite: the " +
                           "data's squares or products overflow " +
                           (sizeof(T) == 4 ? "float32" : "float64") +
                           "; rescale the columns of X, y or the sample weights");
    }
  }
}

}  // namespace detail

// Solves H x = rhs for the H of the last form_hessian(). rhs is scratch: it is overwritten by
// the equilibrated right-hand side, and H by Ĥ.
template <LadderOps O>
LadderResult solve_ladder(O& ops, typename O::Vector& rhs, typename O::Vector& solution,
                          LadderScratch<typename O::Scalar>& scratch) {
  using T = typename O::Scalar;
  const std::size_t d = ops.dim();
  scratch.scales.resize(d);
  scratch.values.resize(d);
  const std::span<T> scales(scratch.scales);
  ops.hessian_diagonal(scales);
  detail::require_finite_system(std::span<const T>(scales), "matrix");
  equilibration_scales(scales);
  ops.equilibrate_hessian(std::span<const T>(scales));
  detail::scale_by(ops, std::span<const T>(scales), scratch.values, rhs);
  detail::require_finite_system(std::span<const T>(scratch.values), "right-hand side");

  const double rcond_min = static_cast<double>(d) * std::numeric_limits<T>::epsilon();
  const auto accepted = [rcond_min](const SolveAttempt& attempt) {
    return attempt.factored && attempt.rcond >= rcond_min && attempt.finite;
  };
  LadderResult result{.rung = Solver::cholesky, .rcond = 0.0, .rank = d};
  SolveAttempt attempt;
  if (ops.hessian_symmetric() && accepted(attempt = ops.solve_cholesky(rhs, solution))) {
    result.rcond = attempt.rcond;
  } else if (accepted(attempt = ops.solve_lu(rhs, solution))) {
    result = {.rung = Solver::lu, .rcond = attempt.rcond, .rank = d};
  } else {
    const std::size_t rank = ops.solve_min_norm(rhs, rcond_min, solution);
    result = {.rung = Solver::svd, .rcond = 0.0, .rank = rank};
  }
  detail::scale_by(ops, std::span<const T>(scales), scratch.values, solution);
  return result;
}

// The same, with scratch of its own (tests and one-off solves).
template <LadderOps O>
LadderResult solve_ladder(O& ops, typename O::Vector& rhs, typename O::Vector& solution) {
  LadderScratch<typename O::Scalar> scratch;
  return solve_ladder(ops, rhs, solution, scratch);
}

}  // namespace rh
