#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "rh/diagnostics.hpp"

namespace rh {

// What one solve of the batch problem reports to the batch driver.
struct SolveResult {
  bool converged = false;
  std::int64_t n_iter = 0;
  std::int64_t halvings = 0;  // Armijo halvings (Newton) or phi doublings (LAMM)
  Solver solver = Solver::cholesky;
  // The ladder's rcond for the last Newton step (0 for SVD); NaN when no Newton system was
  // solved by the ladder (LAMM, proximal Newton).
  double rcond = std::numeric_limits<double>::quiet_NaN();
  // LAMM: phi times its last accepted step, phi (beta_k - beta_{k-1}), in float64 — the
  // proximal gradient mapping, 0 exactly at a minimizer (stationarity_step in update.hpp); empty
  // for the other solvers and for a LAMM solve that took no step.
  std::vector<double> gradient_mapping{};
};

}  // namespace rh
