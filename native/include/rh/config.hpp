#pragma once
// Parameters of one batch update (shared/spec/method.md, "Configuration").

#include <concepts>
#include <cstdint>
#include <optional>

namespace rh {

// The solver of an L1-penalized batch: LAMM, the contract's, or proximal Newton, the opt-in variant
// method.md allows (rh/prox_newton.hpp): the same convex problem, fewer passes over the batch.
enum class L1Solver { lamm, prox_newton };

struct Config {
  bool fit_intercept = true;
  double epsilon = 1.345;     // tau = epsilon * scale
  std::optional<double> tau;  // a fixed tau for every batch
  double alpha = 0.0;         // L1 strength per unit of weight
  double ridge = 0.0;         // damps Newton steps; does not move the minimizer
  std::int64_t max_iter = 500;
  std::optional<double> tol;  // unset: resolved_tol<T>()
  L1Solver l1_solver = L1Solver::lamm;
};

// The convergence tolerance for computations in T: the configured one, else the dtype default.
template <std::floating_point T>
double resolved_tol(const Config& config) {
  if (config.tol) return *config.tol;
  return std::same_as<T, float> ? 1e-5 : 1e-8;
}

}  // namespace rh
