#pragma once
// cuBLAS by element type. Matrices are column-major as cuBLAS sees them; a row-major n x p
// array is the column-major p x n matrix, which is how the batch's X is read in place.

#include <cublas_v2.h>

#include <cstdint>

#include "errors.hpp"

namespace rh::cuda::blas {

// y = alpha op(A) x + beta y, A column-major m x n with leading dimension lda.
inline void gemv(cublasHandle_t h, cublasOperation_t op, std::int64_t m, std::int64_t n,
                 float alpha, const float* A, std::int64_t lda, const float* x, std::int64_t incx,
                 float beta, float* y, std::int64_t incy) {
  RH_CUBLAS_CHECK(cublasSgemv_64(h, op, m, n, &alpha, A, lda, x, incx, &beta, y, incy));
}

inline void gemv(cublasHandle_t h, cublasOperation_t op, std::int64_t m, std::int64_t n,
                 double alpha, const double* A, std::int64_t lda, const double* x,
                 std::int64_t incx, double beta, double* y, std::int64_t incy) {
  RH_CUBLAS_CHECK(cublasDgemv_64(h, op, m, n, &alpha, A, lda, x, incx, &beta, y, incy));
}

// C (lower triangle, n x n, ldc) = A A^T for A column-major n x k (lda).
inline void syrk_lower(cublasHandle_t h, std::int64_t n, std::int64_t k, const float* A,
                       std::int64_t lda, float* C, std::int64_t ldc) {
  const float one = 1.0f;
  const float zero = 0.0f;
  RH_CUBLAS_CHECK(cublasSsyrk_64(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &one, A, lda,
                                 &zero, C, ldc));
}

inline void syrk_lower(cublasHandle_t h, std::int64_t n, std::int64_t k, const double* A,
                       std::int64_t lda, double* C, std::int64_t ldc) {
  const double one = 1.0;
  const double zero = 0.0;
  RH_CUBLAS_CHECK(cublasDsyrk_64(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &one, A, lda,
                                 &zero, C, ldc));
}

}  // namespace rh::cuda::blas
