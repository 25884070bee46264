#pragma once
// Scalar Huber functions in float64 (docs/numerics.md): every engine's fused loops call these so
// the per-row arithmetic is the same everywhere.

#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace rh {

// x where take, else y, by bit masks instead of a branch: rows fall on either piece of rho at
// random, so a branch per row mispredicts often, and loops of selects vectorize (the compiler
// keeps a plain ?: on doubles as a branch under its default floating-point semantics).
template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
inline T select(bool take, T x, T y) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  const Bits mask = Bits{0} - static_cast<Bits>(take);
  return std::bit_cast<T>((std::bit_cast<Bits>(x) & mask) | (std::bit_cast<Bits>(y) & ~mask));
}

// rho(r) = r^2/2 if |r| <= tau, else tau|r| - tau^2/2 (both pieces computed, one selected).
inline double huber_rho(double r, double tau) {
  const double abs_r = std::fabs(r);
  return select(abs_r <= tau, 0.5 * r * r, tau * abs_r - 0.5 * tau * tau);
}

// h(r, a) = rho(r - a) - rho(r), arranged to avoid cancellation when both points sit on the same
// piece of rho: the line search compares these differences, not two large objective values.
inline double huber_rho_change(double r, double a, double tau) {
  const double moved = r - a;
  const bool r_inside = std::fabs(r) <= tau;
  const bool moved_inside = std::fabs(moved) <= tau;
  // Both outside on one side (r and moved are then non-zero).
  const bool same_outside = !r_inside & !moved_inside & ((r > 0.0) == (moved > 0.0));
  const double both_inside = a * (0.5 * a - r);
  const double both_outside = -tau * std::copysign(1.0, r) * a;
  const double across = huber_rho(moved, tau) - huber_rho(r, tau);
  return select(r_inside & moved_inside, both_inside, select(same_outside, both_outside, across));
}

}  // namespace rh
