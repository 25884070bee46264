#include "l1_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "blas.hpp"

namespace rh::cpu {

namespace {

// A coordinate's place in the pattern: at zero (inactive), solved for with a sign, or free (the
// unpenalized intercept).
constexpr signed char at_zero = 0;
constexpr signed char free_coordinate = 2;

// Below this reciprocal condition of the (centred, equilibrated) active block, its solve is
// left to coordinate descent, which moves each coordinate by its own curvature and so never
// puts rounding at 1 / (the smallest eigenvalue) into the directions no row determines. Measured
// on either side: a rank-deficient batch with a ridge of 1e-6 and below, 1.2e-8 and below
// (tests/test_user_expectations.py: weights against repeated rows to 1e-12); statsmodels'
// datasets as they come, once centred, 8.8e-7 and above (median 9e-4).
constexpr double min_polish_rcond = 1e-7;

bool signed_coordinate(signed char sign) { return sign == 1 || sign == -1; }

void multiply(const double* M, std::size_t dim, const double* s, double* product) {
  for (std::size_t i = 0; i < dim; ++i) {
    double sum = 0.0;
    for (std::size_t k = 0; k < dim; ++k) sum += M[i * dim + k] * s[k];
    product[i] = sum;
  }
}

// The minimizer of the model on the pattern's face (the active coordinates keep their signs,
// the inactive ones stay at zero: s_k = -beta_k) into b.step: M_AA s_A = -(g_A + c sign_A) -
// M_AI s_I. The free intercept (last) is eliminated first: for any slopes its best step is
// (r_q - M_qP s_P) / M_qq, which leaves the slopes the Schur complement M_PP - M_Pq M_qP / M_qq,
// the Gram of the centred columns. Raw columns far from centred make M_AA itself nearly
// singular (their correlation with the intercept near 1), the centred block not. That block is
// equilibrated by its diagonal as the ladder does, factorized by Cholesky, its condition
// estimated. False where it is not numerically positive definite, is conditioned below
// min_polish_rcond, or gives a step that is not finite.
bool face_minimizer(const double* M, std::size_t dim, const double* gradient, const double* beta,
                    double strength, L1ModelBuffers& b) {
  std::size_t m = 0;  // the active slopes (the free coordinate is eliminated, below)
  bool free_last = false;
  for (std::size_t j = 0; j < dim; ++j) {
    if (b.sign[j] == free_coordinate) {
      free_last = true;
    } else if (b.sign[j] != at_zero) {
      b.active[m++] = j;
    }
  }
  const std::size_t q = dim - 1;  // the free coordinate, when free_last
  for (std::size_t k = 0; k < dim; ++k) b.step[k] = b.sign[k] == at_zero ? -beta[k] : 0.0;
  const auto right_side = [&](std::size_t j) {
    double rhs = -gradient[j] - (signed_coordinate(b.sign[j]) ? strength * b.sign[j] : 0.0);
    for (std::size_t k = 0; k < dim; ++k) {
      if (b.sign[k] == at_zero) rhs -= M[j * dim + k] * b.step[k];
    }
    return rhs;
  };
  const double free_rhs = free_last ? right_side(q) : 0.0;
  const double free_curvature = free_last ? M[q * dim + q] : 1.0;
  const auto reduced = [&](std::size_t i, std::size_t j) {  // the Schur complement's entry
    return free_last ? M[i * dim + j] - M[i * dim + q] * M[q * dim + j] / free_curvature
                     : M[i * dim + j];
  };
  for (std::size_t a = 0; a < m; ++a) {
    const std::size_t j = b.active[a];
    const double curvature = reduced(j, j);
    if (!(curvature > 0.0)) return false;
    b.scales[a] = 1.0 / std::sqrt(curvature);
    const double rhs = right_side(j) -
                       (free_last ? M[j * dim + q] * free_rhs / free_curvature : 0.0);
    b.rhs[a] = b.scales[a] * rhs;
  }
  for (std::size_t c = 0; c < m; ++c) {
    for (std::size_t a = 0; a < m; ++a) {
      b.matrix[c * m + a] = (b.scales[a] * b.scales[c]) * reduced(b.active[a], b.active[c]);
    }
  }
  if (m > 0) {
    double norm = 0.0;  // the block's 1-norm, for its condition estimate
    for (std::size_t c = 0; c < m; ++c) {
      double column = 0.0;
      for (std::size_t a = 0; a < m; ++a) column += std::fabs(b.matrix[c * m + a]);
      norm = std::max(norm, column);
    }
    const auto n = static_cast<blas::lapack_index>(m);
    double rcond = 0.0;
    if (blas::potrf(n, b.matrix.data()) != 0 ||
        blas::pocon(n, b.matrix.data(), norm, &rcond, b.condition_work.data(),
                    b.condition_iwork.data()) != 0) {
      return false;
    }
    if (!(rcond >= min_polish_rcond) || blas::potrs(n, b.matrix.data(), b.rhs.data()) != 0) {
      return false;
    }
  }
  for (std::size_t a = 0; a < m; ++a) {
    const double value = b.scales[a] * b.rhs[a];
    if (!std::isfinite(value)) return false;
    b.step[b.active[a]] = value;
  }
  if (free_last) {
    double value = free_rhs;
    for (std::size_t a = 0; a < m; ++a) value -= M[q * dim + b.active[a]] * b.step[b.active[a]];
    value /= free_curvature;
    if (!std::isfinite(value)) return false;
    b.step[q] = value;
  }
  return true;
}

// The model's value m(s) (the constant c ||beta_S||_1 left out); M s into `product`.
double l1_model_value(const double* M, std::size_t dim, std::size_t penalized,
                      const double* gradient, const double* beta, double strength,
                      const double* s, double* product) {
  multiply(M, dim, s, product);
  double value = 0.0;
  for (std::size_t j = 0; j < dim; ++j) value += gradient[j] * s[j] + 0.5 * s[j] * product[j];
  for (std::size_t j = 0; j < penalized; ++j) value += strength * std::fabs(beta[j] + s[j]);
  return value;
}

}  // namespace


// A primal active-set method (as Lawson and Hanson's NNLS is one): from a point on a face of the
// model (a sign pattern), move towards the face's minimizer; where a coordinate would cross zero
// on the way, stop there and drop it; at the face's minimizer, add the inactive coordinates whose
// optimality condition fails, or stop where none does. All of them are added at once (a first
// batch's nearly flat model can need a hundred: one at a time took 216 faces of 257 x 257, 130
// ms, at a 4,096 x 256 pilot); once an added coordinate blocks at once (its face minimizer on
// the other side), one at a time, the largest failure first, as NNLS does, so that the model
// never rises and no face repeats but for ties. The faces are capped at 2 d + 8 and their
// factorizations at `work` flops all the same.
bool polish_l1_model_step(const double* M, std::size_t dim, std::size_t penalized,
                          const double* gradient, const double* beta, double strength,
                          double* s, L1ModelBuffers& b, double work) {
  if (dim - penalized > 1 || penalized > dim) return false;  // at most one free coordinate, last
  b.matrix.resize(dim * dim);
  b.rhs.resize(dim);
  b.scales.resize(dim);
  b.step.resize(dim);
  b.point.resize(dim);
  b.product.resize(dim);
  b.active.resize(dim);
  b.sign.resize(dim);
  b.condition_work.resize(3 * dim);
  b.condition_iwork.resize(dim);
  // The start: coordinate descent's step, its zeros exactly at zero.
  for (std::size_t j = 0; j < dim; ++j) {
    const double value = beta[j] + s[j];
    b.sign[j] = j >= penalized ? free_coordinate
                : value > 0.0  ? 1
                : value < 0.0  ? -1
                               : at_zero;
    b.point[j] = b.sign[j] == at_zero ? -beta[j] : s[j];
  }
  constexpr double eps = std::numeric_limits<double>::epsilon();
  const std::size_t max_rounds = 2 * dim + 8;
  bool add_all = true;
  for (std::size_t round = 0; round < max_rounds; ++round) {
    std::size_t m = 0;
    for (std::size_t j = 0; j < dim; ++j) m += b.sign[j] != at_zero ? 1 : 0;
    work -= static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(m) / 3.0;
    if (work < 0.0 || !face_minimizer(M, dim, gradient, beta, strength, b)) return false;
    // The first active coordinate to reach zero on the way from the point to the face's
    // minimizer, and how far along that is.
    double reach = 1.0;
    std::size_t blocking = dim;
    for (std::size_t j = 0; j < penalized; ++j) {
      if (!signed_coordinate(b.sign[j])) continue;
      const double now = beta[j] + b.point[j];
      const double next = beta[j] + b.step[j];
      if (next * b.sign[j] > 0.0) continue;
      const double along = now / (now - next);
      if (along < reach) reach = along, blocking = j;
    }
    if (blocking < dim) {
      if (!(reach > 0.0)) add_all = false;  // an added coordinate blocked where it joined
      for (std::size_t j = 0; j < dim; ++j) b.point[j] += reach * (b.step[j] - b.point[j]);
      // The blocking one leaves, and any other at or past zero whose face minimizer is past it
      // too (rounding, or another just added on the wrong side); one just added whose minimizer
      // is on its side stays, at zero until the point moves.
      for (std::size_t j = 0; j < penalized; ++j) {
        if (!signed_coordinate(b.sign[j])) continue;
        const bool past = !((beta[j] + b.point[j]) * b.sign[j] > 0.0) &&
                          !((beta[j] + b.step[j]) * b.sign[j] > 0.0);
        if (j == blocking || past) {
          b.sign[j] = at_zero;
          b.point[j] = -beta[j];
        }
      }
      continue;
    }
    std::copy_n(b.step.data(), dim, b.point.data());
    // At the face's minimizer: the inactive coordinates whose optimality condition
    // |g_k + (M s)_k| <= c fails (past the product's rounding and a relative margin on c) join,
    // each on the side its slope descends to.
    multiply(M, dim, b.point.data(), b.product.data());
    std::size_t worst = dim;
    double worst_excess = 0.0;
    for (std::size_t k = 0; k < penalized; ++k) {
      if (b.sign[k] != at_zero) continue;
      double magnitude = std::fabs(gradient[k]);
      for (std::size_t j = 0; j < dim; ++j) magnitude += std::fabs(M[k * dim + j] * b.point[j]);
      const double excess = std::fabs(gradient[k] + b.product[k]) - strength * (1.0 + 1e-9) -
                            64.0 * eps * magnitude;
      if (!(excess > 0.0)) continue;
      if (add_all) b.sign[k] = gradient[k] + b.product[k] > 0.0 ? -1 : 1;
      if (excess > worst_excess) worst = k, worst_excess = excess;
    }
    if (worst < dim) {
      b.sign[worst] = gradient[worst] + b.product[worst] > 0.0 ? -1 : 1;
      continue;
    }
    const double polished = l1_model_value(M, dim, penalized, gradient, beta, strength,
                                           b.point.data(), b.product.data());
    const double descended = l1_model_value(M, dim, penalized, gradient, beta, strength, s,
                                            b.product.data());
    if (!(polished <= descended + 1e-12 * std::fabs(descended))) return false;
    std::copy_n(b.point.data(), dim, s);
    return true;
  }
  return false;
}

}  // namespace rh::cpu
