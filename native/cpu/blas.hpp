#pragma once
// Type-generic wrappers over the CBLAS / LAPACKE routines the CPU engine uses, so the engine is
// written once for float and double. Matrices passed to BLAS are row-major; those passed to
// LAPACK are column-major (the callers transpose where it matters).

#include <cblas.h>
#include <lapacke.h>

#include <cstddef>

namespace rh::cpu::blas {

using lapack_index = lapack_int;

inline int as_int(std::size_t n) { return static_cast<int>(n); }

// y = alpha * op(A) x + beta * y, A row-major rows x cols with leading dimension lda.
inline void gemv(bool transpose, std::size_t rows, std::size_t cols, double alpha, const double* A,
                 std::size_t lda, const double* x, double beta, double* y) {
  cblas_dgemv(CblasRowMajor, transpose ? CblasTrans : CblasNoTrans, as_int(rows), as_int(cols),
              alpha, A, as_int(lda), x, 1, beta, y, 1);
}
inline void gemv(bool transpose, std::size_t rows, std::size_t cols, float alpha, const float* A,
                 std::size_t lda, const float* x, float beta, float* y) {
  cblas_sgemv(CblasRowMajor, transpose ? CblasTrans : CblasNoTrans, as_int(rows), as_int(cols),
              alpha, A, as_int(lda), x, 1, beta, y, 1);
}

// Lower triangle of C = A^T A + beta * C for row-major A (rows x cols); C is cols x cols with
// stride ldc.
inline void syrk_lower(std::size_t rows, std::size_t cols, const double* A, double beta,
                       double* C, std::size_t ldc) {
  cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, as_int(cols), as_int(rows), 1.0, A,
              as_int(cols), beta, C, as_int(ldc));
}
inline void syrk_lower(std::size_t rows, std::size_t cols, const float* A, float beta, float* C,
                       std::size_t ldc) {
  cblas_ssyrk(CblasRowMajor, CblasLower, CblasTrans, as_int(cols), as_int(rows), 1.0f, A,
              as_int(cols), beta, C, as_int(ldc));
}

// Column-major LAPACK, one right-hand side.
inline lapack_index potrf(lapack_index n, double* a) {
  return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, a, n);
}
inline lapack_index potrf(lapack_index n, float* a) {
  return LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', n, a, n);
}

inline lapack_index pocon(lapack_index n, const double* a, double anorm, double* rcond,
                          double* work, lapack_index* iwork) {
  return LAPACKE_dpocon_work(LAPACK_COL_MAJOR, 'L', n, a, n, anorm, rcond, work, iwork);
}
inline lapack_index pocon(lapack_index n, const float* a, float anorm, float* rcond, float* work,
                          lapack_index* iwork) {
  return LAPACKE_spocon_work(LAPACK_COL_MAJOR, 'L', n, a, n, anorm, rcond, work, iwork);
}

// b: n x nrhs, column-major.
inline lapack_index potrs(lapack_index n, const double* a, double* b, lapack_index nrhs = 1) {
  return LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', n, nrhs, a, n, b, n);
}
inline lapack_index potrs(lapack_index n, const float* a, float* b, lapack_index nrhs = 1) {
  return LAPACKE_spotrs_work(LAPACK_COL_MAJOR, 'L', n, nrhs, a, n, b, n);
}

inline lapack_index getrf(lapack_index n, double* a, lapack_index* pivots) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, pivots);
}
inline lapack_index getrf(lapack_index n, float* a, lapack_index* pivots) {
  return LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, pivots);
}

inline lapack_index gecon(lapack_index n, const double* a, double anorm, double* rcond,
                          double* work, lapack_index* iwork) {
  return LAPACKE_dgecon_work(LAPACK_COL_MAJOR, '1', n, a, n, anorm, rcond, work, iwork);
}
inline lapack_index gecon(lapack_index n, const float* a, float anorm, float* rcond, float* work,
                          lapack_index* iwork) {
  return LAPACKE_sgecon_work(LAPACK_COL_MAJOR, '1', n, a, n, anorm, rcond, work, iwork);
}

inline lapack_index getrs(lapack_index n, const double* a, const lapack_index* pivots, double* b,
                          lapack_index nrhs = 1) {
  return LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, 'N', n, nrhs, a, n, pivots, b, n);
}
inline lapack_index getrs(lapack_index n, const float* a, const lapack_index* pivots, float* b,
                          lapack_index nrhs = 1) {
  return LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, 'N', n, nrhs, a, n, pivots, b, n);
}

// C = A B^T, all n x n row-major.
inline void gemm_transposed(std::size_t n, const double* A, const double* B, double* C) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, as_int(n), as_int(n), as_int(n), 1.0, A,
              as_int(n), B, as_int(n), 0.0, C, as_int(n));
}
inline void gemm_transposed(std::size_t n, const float* A, const float* B, float* C) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, as_int(n), as_int(n), as_int(n), 1.0f, A,
              as_int(n), B, as_int(n), 0.0f, C, as_int(n));
}

// Minimum-norm least squares by divide-and-conquer SVD; lwork = -1 queries the workspace.
inline lapack_index gelsd(lapack_index n, double* a, double* b, double* singular_values,
                          double rcond, lapack_index* rank, double* work, lapack_index lwork,
                          lapack_index* iwork) {
  return LAPACKE_dgelsd_work(LAPACK_COL_MAJOR, n, n, 1, a, n, b, n, singular_values, rcond, rank,
                             work, lwork, iwork);
}
inline lapack_index gelsd(lapack_index n, float* a, float* b, float* singular_values, float rcond,
                          lapack_index* rank, float* work, lapack_index lwork,
                          lapack_index* iwork) {
  return LAPACKE_sgelsd_work(LAPACK_COL_MAJOR, n, n, 1, a, n, b, n, singular_values, rcond, rank,
                             work, lwork, iwork);
}

// The square-root information mode (square_root.cpp), column-major: Householder QR of a
// triangle stacked over a block of rows (triangular-pentagonal: the block's last l rows upper
// trapezoidal, l = 0 a rectangular block),
// the triangle's 1-norm condition estimate and its solves, and the SVD of its rank-deficient case.
inline lapack_index tpqrt(lapack_index m, lapack_index n, lapack_index l, lapack_index nb,
                          double* a, lapack_index lda, double* b, lapack_index ldb, double* t,
                          lapack_index ldt, double* work) {
  return LAPACKE_dtpqrt_work(LAPACK_COL_MAJOR, m, n, l, nb, a, lda, b, ldb, t, ldt, work);
}
inline lapack_index trcon(lapack_index n, const double* a, lapack_index lda, double* rcond, double* work,
                          lapack_index* iwork) {
  return LAPACKE_dtrcon_work(LAPACK_COL_MAJOR, '1', 'U', 'N', n, a, lda, rcond, work, iwork);
}
inline lapack_index trtrs(bool transpose, lapack_index n, const double* a, lapack_index lda, double* b) {
  return LAPACKE_dtrtrs_work(LAPACK_COL_MAJOR, 'U', transpose ? 'T' : 'N', 'N', n, 1, a, lda, b,
                             n);
}
// The full SVD a = U S V^T of an n x n matrix (overwritten); lwork = -1 queries the workspace.
inline lapack_index gesvd(lapack_index n, double* a, double* s, double* u, double* vt, double* work,
                          lapack_index lwork) {
  return LAPACKE_dgesvd_work(LAPACK_COL_MAJOR, 'A', 'A', n, n, a, n, s, u, n, vt, n, work, lwork);
}
inline lapack_index tpqrt(lapack_index m, lapack_index n, lapack_index l, lapack_index nb,
                          float* a, lapack_index lda, float* b, lapack_index ldb, float* t,
                          lapack_index ldt, float* work) {
  return LAPACKE_stpqrt_work(LAPACK_COL_MAJOR, m, n, l, nb, a, lda, b, ldb, t, ldt, work);
}
inline lapack_index trcon(lapack_index n, const float* a, lapack_index lda, float* rcond, float* work,
                          lapack_index* iwork) {
  return LAPACKE_strcon_work(LAPACK_COL_MAJOR, '1', 'U', 'N', n, a, lda, rcond, work, iwork);
}
inline lapack_index trtrs(bool transpose, lapack_index n, const float* a, lapack_index lda, float* b) {
  return LAPACKE_strtrs_work(LAPACK_COL_MAJOR, 'U', transpose ? 'T' : 'N', 'N', n, 1, a, lda, b,
                             n);
}
// The full SVD a = U S V^T of an n x n matrix (overwritten); lwork = -1 queries the workspace.
inline lapack_index gesvd(lapack_index n, float* a, float* s, float* u, float* vt, float* work,
                          lapack_index lwork) {
  return LAPACKE_sgesvd_work(LAPACK_COL_MAJOR, 'A', 'A', n, n, a, n, s, u, n, vt, n, work, lwork);
}

}  // namespace rh::cpu::blas
