#pragma once
// What one batch update reports besides the new state.

#include <cstdint>
#include <limits>
#include <string_view>

namespace rh {

// The ladder rung of the last Newton step, or the solver of a penalized batch.
// qr: the square-root information mode's Newton step (factorization="qr"), whose rank-deficient
// case is svd as in the ladder.
enum class Solver { cholesky, lu, svd, lamm, prox_newton, qr };

std::string_view to_string(Solver solver);

struct Diagnostics {
  bool converged = false;
  std::int64_t n_iter = 0;  // outer iterations over every solve of the batch
  double objective = 0.0;   // Q at the final coefficients
  double lambda = 0.0;
  double bandwidth = 0.0;  // the tau used
  Solver solver = Solver::cholesky;
  std::int64_t line_search_halvings = 0;  // Newton halvings, or LAMM doublings of phi
  // The 1-norm reciprocal condition estimate of the equilibrated Newton matrix for the last
  // step's rung (0 for SVD); NaN for a penalized batch (no Newton system).
  double rcond = std::numeric_limits<double>::quiet_NaN();
  // Contract v4, the drift test (rh/drift.hpp): T, its degrees of freedom, P(chi2_df > T); NaN
  // for the first batch, a penalized batch or history, and a batch with no residual inside tau.
  double drift_statistic = std::numeric_limits<double>::quiet_NaN();
  double drift_df = std::numeric_limits<double>::quiet_NaN();
  double drift_pvalue = std::numeric_limits<double>::quiet_NaN();
  // A penalized batch solved by LAMM: how far its last iterate is from the minimizer, in
  // coefficient units — max_j |phi s_j| / J~_jj over the coefficients of positive information,
  // s the last accepted step, J~ the new state's information (a Newton step along each
  // coefficient on the proximal gradient mapping). The contract's step rule stops LAMM when s
  // is within tol; phi is set by the largest columns, so on columns of very different scales s
  // is small long before this is (docs/numerics.md, "LAMM's step rule"). NaN otherwise.
  double stationarity_step = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace rh
