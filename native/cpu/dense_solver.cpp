#include "dense_solver.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "fault_injection.hpp"
#include "rh/error.hpp"

namespace rh::cpu {
namespace {

template <class T>
bool all_finite(const T* x, std::size_t n) {
  return std::all_of(x, x + n, [](T v) { return std::isfinite(v); });
}

// A negative info is an argument error: a bug here, not a property of the data.
void check_arguments(blas::lapack_index info, const char* routine) {
  if (info < 0) {
    throw Error(std::string("internal error: LAPACK ") + routine + " rejected argument " +
                std::to_string(-info));
  }
}

}  // namespace

template <std::floating_point T>
void DenseSolver<T>::resize(std::size_t dim) {
  if (dim == dim_) return;
  dim_ = 0;  // recorded once every buffer has its size (a throw leaves it to be done again)
  fault::allocation_point();
  factor_.resize(dim * dim);
  condition_work_.resize(4 * dim);  // gecon needs 4d, pocon 3d
  condition_iwork_.resize(dim);
  pivots_.resize(dim);
  singular_values_.clear();
  svd_work_.clear();
  svd_iwork_.clear();
  dim_ = dim;
}

// ||H||_1: the largest absolute column sum, accumulated in T like LAPACK's lange.
template <std::floating_point T>
T DenseSolver<T>::one_norm(const T* H) const {
  T norm = 0;
  for (std::size_t j = 0; j < dim_; ++j) {
    T column = 0;
    for (std::size_t i = 0; i < dim_; ++i) column += std::fabs(H[i * dim_ + j]);
    norm = std::max(norm, column);
  }
  return norm;
}

template <std::floating_point T>
void DenseSolver<T>::load_column_major(const T* H) {
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = 0; j < dim_; ++j) factor_[j * dim_ + i] = H[i * dim_ + j];
  }
}

template <std::floating_point T>
SolveAttempt DenseSolver<T>::cholesky(const T* H, const T* rhs, T* x) {
  const auto n = static_cast<blas::lapack_index>(dim_);
  std::copy(H, H + dim_ * dim_, factor_.begin());  // symmetric: row- and column-major agree
  const blas::lapack_index info = blas::potrf(n, factor_.data());
  check_arguments(info, "potrf");
  if (info > 0 || fault::rung_fails(Solver::cholesky)) return {};
  T rcond = 0;
  check_arguments(blas::pocon(n, factor_.data(), one_norm(H), &rcond, condition_work_.data(),
                              condition_iwork_.data()),
                  "pocon");
  std::copy(rhs, rhs + dim_, x);
  check_arguments(blas::potrs(n, factor_.data(), x), "potrs");
  return {.factored = true, .rcond = static_cast<double>(rcond), .finite = all_finite(x, dim_)};
}

template <std::floating_point T>
SolveAttempt DenseSolver<T>::lu(const T* H, const T* rhs, T* x) {
  const auto n = static_cast<blas::lapack_index>(dim_);
  load_column_major(H);
  const blas::lapack_index info = blas::getrf(n, factor_.data(), pivots_.data());
  check_arguments(info, "getrf");
  if (info > 0 || fault::rung_fails(Solver::lu)) return {};
  T rcond = 0;
  check_arguments(blas::gecon(n, factor_.data(), one_norm(H), &rcond, condition_work_.data(),
                              condition_iwork_.data()),
                  "gecon");
  std::copy(rhs, rhs + dim_, x);
  check_arguments(blas::getrs(n, factor_.data(), pivots_.data(), x), "getrs");
  return {.factored = true, .rcond = static_cast<double>(rcond), .finite = all_finite(x, dim_)};
}

template <std::floating_point T>
void DenseSolver<T>::cholesky_again(const T* rhs, T* x, std::size_t columns) {
  std::copy(rhs, rhs + dim_ * columns, x);
  check_arguments(blas::potrs(static_cast<blas::lapack_index>(dim_), factor_.data(), x,
                              static_cast<blas::lapack_index>(columns)),
                  "potrs");
}

template <std::floating_point T>
void DenseSolver<T>::lu_again(const T* rhs, T* x, std::size_t columns) {
  std::copy(rhs, rhs + dim_ * columns, x);
  check_arguments(blas::getrs(static_cast<blas::lapack_index>(dim_), factor_.data(),
                              pivots_.data(), x, static_cast<blas::lapack_index>(columns)),
                  "getrs");
}

template <std::floating_point T>
void DenseSolver<T>::multiply_transposed(const T* A, const T* B, T* C) const {
  blas::gemm_transposed(dim_, A, B, C);
}

template <std::floating_point T>
std::size_t DenseSolver<T>::min_norm(const T* H, const T* rhs, double rcond, T* x) {
  const auto n = static_cast<blas::lapack_index>(dim_);
  load_column_major(H);
  std::copy(rhs, rhs + dim_, x);
  blas::lapack_index rank = 0;
  if (svd_work_.empty()) {
    singular_values_.resize(dim_);
    T work_size = 0;
    blas::lapack_index iwork_size = 0;
    check_arguments(blas::gelsd(n, factor_.data(), x, singular_values_.data(),
                                static_cast<T>(rcond), &rank, &work_size, -1, &iwork_size),
                    "gelsd");
    fault::allocation_point();
    // svd_work_ last: its being non-empty says every SVD buffer is sized, also after a throw.
    svd_iwork_.resize(static_cast<std::size_t>(std::max<blas::lapack_index>(iwork_size, 1)));
    svd_work_.resize(static_cast<std::size_t>(work_size));
  }
  const blas::lapack_index info = blas::gelsd(
      n, factor_.data(), x, singular_values_.data(), static_cast<T>(rcond), &rank, svd_work_.data(),
      static_cast<blas::lapack_index>(svd_work_.size()), svd_iwork_.data());
  check_arguments(info, "gelsd");
  if (info > 0 || !all_finite(x, dim_) || fault::rung_fails(Solver::svd)) {
    throw NumericalError("the minimum-norm (SVD) solve of the Newton system failed to converge");
  }
  return static_cast<std::size_t>(rank);
}

template class DenseSolver<float>;
template class DenseSolver<double>;

}  // namespace rh::cpu
