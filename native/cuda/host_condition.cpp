#include "host_condition.hpp"

#include <lapacke.h>

#include <string>

#include "rh/error.hpp"

namespace rh::cuda {
namespace {

// A negative info is an argument error: a bug here, not a property of the data.
void check(lapack_int info, const char* routine) {
  if (info < 0) {
    throw Error(std::string("internal error: LAPACK ") + routine + " rejected argument " +
                std::to_string(-info));
  }
}

}  // namespace

double cholesky_rcond(std::size_t d, const float* factor, float one_norm, float* work,
                      int* iwork) {
  const auto n = static_cast<lapack_int>(d);
  float rcond = 0;
  check(LAPACKE_spocon_work(LAPACK_COL_MAJOR, 'L', n, factor, n, one_norm, &rcond, work, iwork),
        "spocon");
  return rcond;
}

double cholesky_rcond(std::size_t d, const double* factor, double one_norm, double* work,
                      int* iwork) {
  const auto n = static_cast<lapack_int>(d);
  double rcond = 0;
  check(LAPACKE_dpocon_work(LAPACK_COL_MAJOR, 'L', n, factor, n, one_norm, &rcond, work, iwork),
        "dpocon");
  return rcond;
}

double lu_rcond(std::size_t d, const float* factor, float one_norm, float* work, int* iwork) {
  const auto n = static_cast<lapack_int>(d);
  float rcond = 0;
  check(LAPACKE_sgecon_work(LAPACK_COL_MAJOR, '1', n, factor, n, one_norm, &rcond, work, iwork),
        "sgecon");
  return rcond;
}

double lu_rcond(std::size_t d, const double* factor, double one_norm, double* work, int* iwork) {
  const auto n = static_cast<lapack_int>(d);
  double rcond = 0;
  check(LAPACKE_dgecon_work(LAPACK_COL_MAJOR, '1', n, factor, n, one_norm, &rcond, work, iwork),
        "dgecon");
  return rcond;
}

}  // namespace rh::cuda
