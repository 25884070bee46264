#pragma once
// Scalar Huber functions in float64 (docs/numerics.md): every engine's fused loops call these so
// the per-row arithmetic is the same everywhere.

#include <cmath>

namespace rh {

// rho(r) = r^2/2 if |r| <= tau, else tau|r| - tau^2/2.
inline double huber_rho(double r, double tau) {
  const double abs_r = std::fabs(r);
  return abs_r <= tau ? 0.5 * r * r : tau * abs_r - 0.5 * tau * tau;
}

// h(r, a) = rho(r - a) - rho(r), arranged to avoid cancellation when both points sit on the same
// piece of rho: the line search compares these differences, not two large objective values.
inline double huber_rho_change(double r, double a, double tau) {
  const double moved = r - a;
  const bool r_inside = std::fabs(r) <= tau;
  const bool moved_inside = std::fabs(moved) <= tau;
  if (r_inside && moved_inside) return a * (0.5 * a - r);
  if (!r_inside && !moved_inside && std::signbit(r) == std::signbit(moved)) {
    return -tau * std::copysign(1.0, r) * a;
  }
  return huber_rho(moved, tau) - huber_rho(r, tau);
}

}  // namespace rh
