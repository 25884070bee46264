#pragma once
// The exact minimizer of proximal Newton's L1 model from coordinate descent's approximation:
//   m(s) = g^T s + 1/2 s^T M s + c (||(beta + s)_S||_1 - ||beta_S||_1),
// M symmetric positive definite (d x d, row-major, float64), S the penalized coordinates: the
// first `penalized` ones (d, or d - 1 with the intercept last and free). Coordinate descent
// finds the model's sign pattern quickly, but its convergence within that pattern follows M's
// conditioning: on correlated raw columns (the Grunfeld data's, say) it stopped at its sweep
// budget a short way along, and proximal Newton took 500+ full steps without converging. On a
// fixed pattern the model is a quadratic, whose minimizer one Cholesky solve of the active
// block gives; an active-set loop corrects the pattern where that solve crosses zero or leaves
// an inactive coordinate's optimality condition violated. Written here because LAPACK has no
// L1-penalized quadratic solver; the factorization is LAPACK's.

#include <cstddef>
#include <vector>

#include "blas.hpp"

namespace rh::cpu {

// Buffers kept across calls (sized to d on first use).
struct L1ModelBuffers {
  std::vector<double> gradient;  // the caller's g and beta in float64
  std::vector<double> beta;
  std::vector<double> matrix;   // the active slopes' centred block, equilibrated, column-major
  std::vector<double> rhs;      // its right-hand side, then its solution
  std::vector<double> scales;   // its equilibration: 1 / sqrt of its diagonal
  std::vector<double> step;     // the minimizer of the model on a face
  std::vector<double> point;    // the active-set method's current step
  std::vector<double> product;  // M times the candidate step
  std::vector<double> condition_work;  // pocon's
  std::vector<blas::lapack_index> condition_iwork;
  std::vector<std::size_t> active;
  std::vector<signed char> sign;  // the sign each active penalized coordinate is solved for
};

// Replaces `s` by the model's exact minimizer when an active-set method started from s finds it
// (every active coordinate keeps its sign, every inactive one meets |g_j + (M s)_j| <= c) within
// 2 d + 8 faces whose factorizations (m^3 / 3 flops for m active coordinates) add up to at most
// `work`, and its model value is not above s's; returns whether it did, and otherwise leaves s
// as it was.
bool polish_l1_model_step(const double* M, std::size_t dim, std::size_t penalized,
                          const double* gradient, const double* beta, double strength,
                          double* s, L1ModelBuffers& buffers, double work);

}  // namespace rh::cpu
