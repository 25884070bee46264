#pragma once
// Parameters of one batch update (shared/spec/method.md, "Configuration").

#include <concepts>
#include <cstdint>
#include <optional>

namespace rh {

// The solver of an L1-penalized batch: LAMM, the contract's, or proximal Newton, the opt-in variant
// method.md allows (rh/prox_newton.hpp): the same convex problem, fewer passes over the batch.
enum class L1Solver { lamm, prox_newton };

// The curvature of the information update (contract v3): the indicator 1{|r| <= tau}, or the
// paper's smoothed c_h with the batch's bandwidth h (rh/update.hpp). The Newton matrix always
// takes the indicator.
enum class Curvature { indicator, smoothed };

// How the state holds the information (contract v4): J~ itself and Newton matrices solved by the
// ladder, or the square-root information (R~, z~) and Newton steps by QR of stacked rows
// (rh/square_root.hpp), for designs whose normal equations lose every digit.
enum class Factorization { cholesky, qr };

struct Config {
  bool fit_intercept = true;
  double epsilon = 1.345;     // tau = epsilon * scale
  std::optional<double> tau;  // a fixed tau for every batch
  double alpha = 0.0;         // L1 strength per unit of weight
  double ridge = 0.0;         // damps Newton steps; does not move the minimizer
  std::int64_t max_iter = 500;
  std::optional<double> tol;  // unset: resolved_tol<T>()
  L1Solver l1_solver = L1Solver::lamm;
  // Contract v3 (shared/spec/method.md; docs/method-v3.md the reference's choices).
  std::optional<double> lambda_scale;  // lambda_b = lambda_scale tau_b sqrt(q / N_b), not alpha
  Curvature curvature = Curvature::indicator;
  double bandwidth_scale = 1.0;     // h_b = min(bandwidth_scale s / (sqrt(N_b) q), tau_b)
  bool inference_matrices = false;  // accumulate G and K besides the inference scalars
  // Contract v4: forgetting. Before a batch of weight sum_w the history is discounted by
  // gamma = 2^(-sum_w / half_life) (rh/drift.hpp); unset: off.
  std::optional<double> half_life;
  Factorization factorization = Factorization::cholesky;
};

// The convergence tolerance for computations in T: the configured one, else the dtype default.
template <std::floating_point T>
double resolved_tol(const Config& config) {
  if (config.tol) return *config.tol;
  return std::same_as<T, float> ? 1e-5 : 1e-8;
}

}  // namespace rh
