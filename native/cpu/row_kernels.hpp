#pragma once
// The elementwise loops of the CPU engine's passes over rows, one job each. They are compiled
// twice on x86-64 (for x86-64-v3, i.e. AVX2, and for the baseline) and the loader picks the
// clone the CPU runs: the branch-free selects of rh/huber.hpp vectorize only with AVX2's 64-bit
// lane compares. Both clones do the same IEEE operations in the same order (no contraction into
// FMAs: -ffp-contract=off), so results never depend on the CPU.

#include <concepts>
#include <cstddef>

namespace rh::cpu {

// Per row: weighted_score = w psi(r), weighted_curvature = w c(r), loss_terms = w rho(r) in
// float64, with tau the bandwidth in T.
template <std::floating_point T>
void huber_rows(const T* residual, const T* weight, std::size_t rows, T tau, T* weighted_score,
                T* weighted_curvature, double* loss_terms);

// Per row: terms = w (rho(r - factor a) - rho(r)) in float64 (rh::huber_rho_change), a the
// projection of a step.
template <std::floating_point T>
void loss_change_rows(const T* residual, const T* projection, const T* weight, std::size_t rows,
                      T factor, double tau, double* terms);

// Whether any of n values is NaN or infinite (rh::any_non_finite, vectorized by the AVX2 clone):
// the deferred scan of X's values, a chunk at a time.
template <std::floating_point T>
bool any_non_finite_rows(const T* values, std::size_t n);

}  // namespace rh::cpu
