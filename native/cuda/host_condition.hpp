#pragma once
// The reciprocal condition estimates of the ladder, on the host. cuSOLVER has no pocon/gecon, so
// the d x d factor comes back to the host (one copy per rung tried) and LAPACK estimates there:
// the same routine, on the same factor format, as the CPU engine and the reference, which is
// what makes the ladder take the same rung on every engine (docs/numerics.md).

#include <cstddef>

namespace rh::cuda {

// `factor` is column-major d x d: potrf's lower Cholesky factor, or getrf's L\U. `one_norm` is
// ||H||_1 of the matrix factored. work holds 4d entries, iwork d.
double cholesky_rcond(std::size_t d, const float* factor, float one_norm, float* work, int* iwork);
double cholesky_rcond(std::size_t d, const double* factor, double one_norm, double* work,
                      int* iwork);
double lu_rcond(std::size_t d, const float* factor, float one_norm, float* work, int* iwork);
double lu_rcond(std::size_t d, const double* factor, double one_norm, double* work, int* iwork);

}  // namespace rh::cuda
