#include "row_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "rh/huber.hpp"
#include "rh/validation.hpp"

// Function multiversioning is a GCC/Clang feature on x86-64; elsewhere one plain build. Not
// under ThreadSanitizer: its ifunc resolvers run before the sanitizer's runtime is up and crash.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_THREAD__)
#define RH_ROW_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define RH_ROW_KERNEL
#endif

namespace rh::cpu {

template <std::floating_point T>
RH_ROW_KERNEL void huber_rows(const T* residual, const T* weight, std::size_t rows, T tau,
                              T* weighted_score, T* weighted_curvature) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T r = residual[i];
    const T w = weight[i];
    weighted_score[i] = w * std::clamp(r, -tau, tau);
    weighted_curvature[i] = select(std::fabs(r) <= tau, w, T{0});
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void loss_rows(const T* residual, const T* weight, std::size_t rows, double tau,
                             double* loss_terms) {
  for (std::size_t i = 0; i < rows; ++i) {
    loss_terms[i] = static_cast<double>(weight[i]) * huber_rho(static_cast<double>(residual[i]), tau);
  }
}

template <std::floating_point T>
RH_ROW_KERNEL void loss_change_rows(const T* residual, const T* projection, const T* weight,
                                    std::size_t rows, T factor, double tau, double* terms) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T a = factor * projection[i];
    terms[i] = static_cast<double>(weight[i]) *
               huber_rho_change(static_cast<double>(residual[i]), static_cast<double>(a), tau);
  }
}

namespace {

// std::clamp(v, lo, hi) exactly (v < lo ? lo : hi < v ? hi : v, signed zeros and all), as
// selects: std::clamp's branches kept the loops below scalar.
template <std::floating_point T>
inline T clamp_select(T v, T lo, T hi) {
  return select(v < lo, lo, select(hi < v, hi, v));
}

}  // namespace

template <std::floating_point T>
RH_ROW_KERNEL void information_rows(const T* residual, const T* weight, const T* kept,
                                    std::size_t rows, T tau, T two_h, bool smoothed,
                                    double* score_sq, double* curvature, double* curvature_sq,
                                    T* band_added, T* band_removed, T* outlier_weights,
                                    T* score_sq_weights) {
  // One loop per output group, each branch-free over rows, so that each vectorizes.
  for (std::size_t i = 0; i < rows; ++i) {
    const T r = residual[i];
    const T magnitude = std::fabs(r);
    const T c = smoothed ? clamp_select(T{0.5} + (tau - magnitude) / two_h, T{0}, T{1})
                         : select(magnitude <= tau, T{1}, T{0});
    const auto w64 = static_cast<double>(weight[i]);
    const auto psi64 = static_cast<double>(clamp_select(r, -tau, tau));
    const auto c64 = static_cast<double>(c);
    score_sq[i] = w64 * psi64 * psi64;
    const double wc = w64 * c64;
    curvature[i] = wc;
    curvature_sq[i] = wc * c64;
  }
  if (band_added != nullptr) {
    for (std::size_t i = 0; i < rows; ++i) {
      const T w = weight[i];
      const T c = clamp_select(T{0.5} + (tau - std::fabs(residual[i])) / two_h, T{0}, T{1});
      const bool in_q = kept[i] != T{0};
      band_added[i] = select(in_q, T{0}, w * c);
      band_removed[i] = select(in_q, w - w * c, T{0});
    }
  }
  if (outlier_weights != nullptr) {
    for (std::size_t i = 0; i < rows; ++i) {
      const T w = weight[i];
      const T psi = clamp_select(residual[i], -tau, tau);
      const bool in_q = kept[i] != T{0};
      outlier_weights[i] = select(in_q, T{0}, w);
      score_sq_weights[i] = select(in_q, w * psi * psi, T{0});
    }
  }
}

// Counted in 64-bit lanes from branch-free compares: the flipped rows fall at random, and a
// branch per row (or a compiler keeping the NaN-aware scalar compares) cost 3 ns a row.
template <std::floating_point T>
RH_ROW_KERNEL FlipCounts count_flips(const T* now, const T* kept, const T* weight,
                                     std::size_t rows) {
  std::uint64_t flipped = 0;
  std::uint64_t in_set = 0;
  std::uint64_t leaving = 0;
  std::uint64_t whole = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint64_t moved = now[i] != kept[i];
    const std::uint64_t inside = now[i] != T{0};
    flipped += moved;
    in_set += inside;
    leaving += moved & (kept[i] != T{0}) & (inside ^ 1u);
    whole += kept[i] == weight[i];
  }
  return {.flipped = flipped, .in_set = in_set, .leaving = leaving, .whole = whole};
}

template <std::floating_point T>
RH_ROW_KERNEL bool any_non_finite_rows(const T* values, std::size_t n) {
  return any_non_finite(values, n);
}

template void huber_rows<float>(const float*, const float*, std::size_t, float, float*, float*);
template void huber_rows<double>(const double*, const double*, std::size_t, double, double*,
                                 double*);
template void loss_rows<float>(const float*, const float*, std::size_t, double, double*);
template void loss_rows<double>(const double*, const double*, std::size_t, double, double*);
template void loss_change_rows<float>(const float*, const float*, const float*, std::size_t, float,
                                      double, double*);
template void loss_change_rows<double>(const double*, const double*, const double*, std::size_t,
                                       double, double, double*);
template void information_rows<float>(const float*, const float*, const float*, std::size_t,
                                      float, float, bool, double*, double*, double*, float*,
                                      float*, float*, float*);
template void information_rows<double>(const double*, const double*, const double*, std::size_t,
                                       double, double, bool, double*, double*, double*, double*,
                                       double*, double*, double*);
template FlipCounts count_flips<float>(const float*, const float*, const float*, std::size_t);
template FlipCounts count_flips<double>(const double*, const double*, const double*, std::size_t);
template bool any_non_finite_rows<float>(const float*, std::size_t);
template bool any_non_finite_rows<double>(const double*, std::size_t);

}  // namespace rh::cpu
