// The host side of factorization="qr" shared by the engines (square_root_triangle.hpp).

#include "square_root_triangle.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "blas.hpp"
#include "rh/error.hpp"
#include "rh/ladder.hpp"

namespace rh::cpu {
namespace {

// The triangle of the stacked rows in equilibrated units: F = R_H S, and its rank test.
template <std::floating_point T>
struct EquilibratedFactor {
  std::size_t d;
  std::vector<T> scales;  // s: the columns were scaled by these before the QR
  std::vector<T> factor;  // F = R_H S, d x d column-major
  // A diagonal entry of F at or below eps(T) d max|diag F| (the contract's test), or trcon's
  // estimate of F's reciprocal condition at or below eps(T) d: a QR without column pivoting does
  // not reveal a rank deficiency on its diagonal (six inside rows of rank 4 stacked twice, d = 5:
  // diagonal ratio 9e-15 above the cut 1.1e-15, trcon 3e-17), and the qr rung would then step
  // along a null direction. The reference tests the same (rhuber.core.sqrt_info._full_rank).
  bool deficient;
  double rcond = 0.0;  // trcon's estimate (1-norm); 0 where the diagonal decided

  // `stacked` is the QR's n x n result of rows whose columns were scaled by `scales`.
  EquilibratedFactor(const T* stacked, std::size_t d_, std::size_t n, std::vector<T> scales_)
      : d(d_), scales(std::move(scales_)), factor(d_ * d_, T{0}) {
    double largest = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i <= j; ++i) factor[j * d + i] = stacked[j * n + i];
      largest = std::max(largest, std::fabs(static_cast<double>(factor[j * d + j])));
    }
    const double eps_d = std::numeric_limits<T>::epsilon() * static_cast<double>(d);
    deficient = !(largest > 0.0);
    for (std::size_t j = 0; j < d && !deficient; ++j) {
      deficient = std::fabs(static_cast<double>(factor[j * d + j])) <= eps_d * largest;
    }
    if (!deficient) {
      T estimate = 0;
      std::vector<T> work(3 * d);
      std::vector<blas::lapack_index> iwork(d);
      const auto ld = static_cast<blas::lapack_index>(d);
      check_lapack(blas::trcon(ld, factor.data(), ld, &estimate, work.data(), iwork.data()),
                   "trcon");
      rcond = static_cast<double>(estimate);
      deficient = !(rcond > eps_d);
    }
  }
};

// The SVD F = U diag(sigma) V^T of a rank-deficient F, singular values at most eps(T) d sigma_max
// cut: the minimum-norm solutions of the model, through its pseudo-inverse.
template <std::floating_point T>
struct FactorSvd {
  std::size_t d;
  std::vector<T> u, vt, sigma;
  std::size_t rank = 0;

  FactorSvd(const std::vector<T>& factor, std::size_t d_) : d(d_), u(d_ * d_), vt(d_ * d_), sigma(d_) {
    std::vector<T> a = factor;
    const auto n = static_cast<blas::lapack_index>(d);
    T size = 0;
    check_lapack(blas::gesvd(n, a.data(), sigma.data(), u.data(), vt.data(), &size, -1), "gesvd");
    std::vector<T> work(std::max<std::size_t>(1, static_cast<std::size_t>(size)));
    const blas::lapack_index info = blas::gesvd(n, a.data(), sigma.data(), u.data(), vt.data(),
                                                work.data(),
                                                static_cast<blas::lapack_index>(work.size()));
    check_lapack(info, "gesvd");
    if (info > 0) throw NumericalError("the SVD of the square-root Newton system did not converge");
    const double cut = std::numeric_limits<T>::epsilon() * static_cast<double>(d) *
                       static_cast<double>(sigma[0]);
    while (rank < d && static_cast<double>(sigma[rank]) > cut) ++rank;
  }
  double U(std::size_t i, std::size_t k) const { return u[k * d + i]; }
  double V(std::size_t i, std::size_t k) const { return vt[i * d + k]; }  // V = (V^T)^T
};

}  // namespace

// tpqrt's panel (level-2) work grows with nb but so does the blocked update's reuse; on a
// cache-sized chunk of rows (a few hundred) under a 91-column triangle, OpenBLAS's tpqrt ran 1.5x
// faster with nb = 8 than with 32 (docs/perf/experiments.jsonl, qr-tpqrt-block).
std::size_t reflector_block(std::size_t columns) { return std::min<std::size_t>(8, columns); }

void check_lapack(long long info, const char* routine) {
  if (info < 0) {
    throw std::logic_error(std::string("internal error: LAPACK ") + routine +
                           " rejected argument " + std::to_string(-info));
  }
}

template <std::floating_point T>
std::vector<T> column_scales(const std::vector<double>& squares) {
  std::vector<T> scales(squares.size());
  for (std::size_t j = 0; j < squares.size(); ++j) scales[j] = static_cast<T>(squares[j]);
  equilibration_scales(std::span<T>(scales));
  return scales;
}

template <std::floating_point T>
void add_history_squares(std::span<const T> factor, std::size_t d, std::vector<double>& squares) {
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = i; j < d; ++j) {
      const auto value = static_cast<double>(factor[i * d + j]);
      squares[j] += value * value;
    }
  }
}

template <std::floating_point T>
void history_rows(std::span<const T> factor, std::span<const T> vector,
                  const double* history_residual, const T* scales, std::size_t d, std::size_t n,
                  T* rows, std::size_t ld) {
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < i; ++j) rows[j * ld + i] = T{0};
    for (std::size_t j = i; j < d; ++j) rows[j * ld + i] = factor[i * d + j] * scales[j];
    if (history_residual != nullptr) {
      rows[d * ld + i] = static_cast<T>(-history_residual[i]);
      if (n > d + 1) rows[(d + 1) * ld + i] = vector[i];
    } else {
      rows[d * ld + i] = vector[i];
    }
  }
}

template <std::floating_point T>
void stack_below(T* triangle, std::size_t n, T* rows, std::size_t m, T* reflectors, T* work) {
  const std::size_t nb = reflector_block(n);
  check_lapack(blas::tpqrt(static_cast<blas::lapack_index>(m), static_cast<blas::lapack_index>(n),
                           0, static_cast<blas::lapack_index>(nb), triangle,
                           static_cast<blas::lapack_index>(n), rows,
                           static_cast<blas::lapack_index>(m), reflectors,
                           static_cast<blas::lapack_index>(nb), work),
               "tpqrt");
}

template <std::floating_point T>
void require_finite_triangle(std::span<const T> triangle) {
  for (const T value : triangle) {
    if (!std::isfinite(value)) {
      throw NumericalError(std::string("the stacked rows of the square-root information are not "
                                       "finite in ") +
                           (sizeof(T) == 4 ? "float32" : "float64") +
                           ": rescale the columns of X, y or the sample weights");
    }
  }
}

template <std::floating_point T>
SquareRootStep triangle_step(T* stacked, std::size_t n, std::size_t d, std::vector<T> scales,
                             const std::vector<double>& linear, double ridge, T* out) {
  const T* q = stacked + d * n;
  EquilibratedFactor<T> f(stacked, d, n, std::move(scales));
  // With a ridge, as in the Cholesky mode (rh/newton.hpp), the undamped factor decides first:
  // a rank-deficient one takes its minimum-norm step undamped; otherwise the rows
  // sqrt(ridge) [I | beta] join it, one more QR of d rows.
  if (ridge > 0.0 && !f.deficient) {
    // In equilibrated units: sqrt(ridge) s_j on the diagonal; then the damped columns'
    // equilibration composed with the first.
    const auto root_ridge = static_cast<T>(std::sqrt(ridge));
    std::vector<T> rows(d * n, T{0});
    for (std::size_t j = 0; j < d; ++j) {
      rows[j * d + j] = root_ridge * f.scales[j];
      // (right-hand side sqrt(ridge) (beta - beta) = 0)
    }
    std::vector<T> reflectors(reflector_block(n) * n);
    std::vector<T> work(reflectors.size());
    stack_below(stacked, n, rows.data(), d, reflectors.data(), work.data());
    std::vector<double> squares(d, 0.0);
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i <= j; ++i) {
        const auto value = static_cast<double>(stacked[j * n + i]);
        squares[j] += value * value;
      }
    }
    const std::vector<T> damped = column_scales<T>(squares);
    std::vector<T> composed(d);
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t i = 0; i <= j; ++i) stacked[j * n + i] *= damped[j];
      composed[j] = f.scales[j] * damped[j];
    }
    f = EquilibratedFactor<T>(stacked, d, n, std::move(composed));
  }
  const auto ld = static_cast<blas::lapack_index>(d);
  std::vector<T> scaled_linear(d);
  for (std::size_t j = 0; j < d; ++j) {
    scaled_linear[j] = static_cast<T>(static_cast<double>(f.scales[j]) * linear[j]);
  }
  if (!f.deficient) {
    // The model's minimizer, as a step u: F^T v = S c, then F u = q + v; the step S u.
    std::vector<T> u = scaled_linear;
    bool solved = blas::trtrs(true, ld, f.factor.data(), ld, u.data()) == 0;
    if (solved) {
      for (std::size_t j = 0; j < d; ++j) u[j] += q[j];
      solved = blas::trtrs(false, ld, f.factor.data(), ld, u.data()) == 0;
    }
    bool finite = solved;
    for (std::size_t j = 0; j < d && finite; ++j) {
      out[j] = f.scales[j] * u[j];
      finite = std::isfinite(out[j]);
    }
    if (finite) return {.rung = Solver::qr, .rcond = f.rcond * f.rcond, .rank = d};
  }
  // The minimum-norm step of the model (as the ladder's SVD rung takes it):
  // min 1/2 ||F t - q||^2 - (S c)^T t, t = V Sigma+ (U^T q + Sigma+ V^T S c), the step S t.
  const FactorSvd<T> svd(f.factor, d);
  std::vector<double> t(d, 0.0);
  for (std::size_t k = 0; k < svd.rank; ++k) {
    double left = 0.0;
    double right = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      left += svd.U(i, k) * static_cast<double>(q[i]);
      right += svd.V(i, k) * static_cast<double>(scaled_linear[i]);
    }
    const auto sigma = static_cast<double>(svd.sigma[k]);
    const double coefficient = (left + right / sigma) / sigma;
    for (std::size_t i = 0; i < d; ++i) t[i] += svd.V(i, k) * coefficient;
  }
  for (std::size_t j = 0; j < d; ++j) out[j] = static_cast<T>(static_cast<double>(f.scales[j]) * t[j]);
  return {.rung = Solver::svd, .rcond = 0.0, .rank = svd.rank};
}

template <std::floating_point T>
void triangle_information(const T* stacked, std::size_t n, std::size_t rhs, std::size_t d,
                          std::vector<T> scales, const std::vector<double>& linear, T* factor,
                          T* vector) {
  const EquilibratedFactor<T> f(stacked, d, n, std::move(scales));
  // z~ = q + R_H^-T c, so that 1/2 ||R~ beta - z~||^2 = 1/2 ||R_H beta - q||^2 - c^T beta + const:
  // R_H^T v = c is F^T v = S c (a rank-deficient F: the minimum-norm v).
  std::vector<double> v(d, 0.0);
  bool solved = false;
  if (!f.deficient) {
    std::vector<T> solution(d);
    for (std::size_t j = 0; j < d; ++j) {
      solution[j] = static_cast<T>(static_cast<double>(f.scales[j]) * linear[j]);
    }
    const auto ld = static_cast<blas::lapack_index>(d);
    solved = blas::trtrs(true, ld, f.factor.data(), ld, solution.data()) == 0;
    for (std::size_t j = 0; j < d && solved; ++j) {
      v[j] = static_cast<double>(solution[j]);
      solved = std::isfinite(v[j]);
    }
  }
  if (!solved) {  // v = (F^T)+ S c = U Sigma+ V^T S c
    const FactorSvd<T> svd(f.factor, d);
    std::fill(v.begin(), v.end(), 0.0);
    for (std::size_t k = 0; k < svd.rank; ++k) {
      double right = 0.0;
      for (std::size_t i = 0; i < d; ++i) {
        right += svd.V(i, k) * static_cast<double>(f.scales[i]) * linear[i];
      }
      const double coefficient = right / static_cast<double>(svd.sigma[k]);
      for (std::size_t i = 0; i < d; ++i) v[i] += svd.U(i, k) * coefficient;
    }
  }
  // In the data's units (F S^-1), the rows of a negative diagonal entry negated (R~ and z~
  // together): diagonal >= 0.
  for (std::size_t i = 0; i < d; ++i) {
    const T sign = stacked[i * n + i] < T{0} ? T{-1} : T{1};
    for (std::size_t j = 0; j < i; ++j) factor[i * d + j] = T{0};
    for (std::size_t j = i; j < d; ++j) factor[i * d + j] = sign * (stacked[j * n + i] / f.scales[j]);
    vector[i] = sign * static_cast<T>(static_cast<double>(stacked[rhs * n + i]) + v[i]);
  }
}

#define RH_TRIANGLE_INSTANTIATE(T)                                                               \
  template std::vector<T> column_scales<T>(const std::vector<double>&);                         \
  template void add_history_squares<T>(std::span<const T>, std::size_t, std::vector<double>&);  \
  template void history_rows<T>(std::span<const T>, std::span<const T>, const double*,          \
                                const T*, std::size_t, std::size_t, T*, std::size_t);            \
  template void stack_below<T>(T*, std::size_t, T*, std::size_t, T*, T*);                       \
  template void require_finite_triangle<T>(std::span<const T>);                                 \
  template SquareRootStep triangle_step<T>(T*, std::size_t, std::size_t, std::vector<T>,       \
                                           const std::vector<double>&, double, T*);             \
  template void triangle_information<T>(const T*, std::size_t, std::size_t, std::size_t,       \
                                        std::vector<T>, const std::vector<double>&, T*, T*);
RH_TRIANGLE_INSTANTIATE(float)
RH_TRIANGLE_INSTANTIATE(double)
#undef RH_TRIANGLE_INSTANTIATE

}  // namespace rh::cpu
