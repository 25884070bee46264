#include "row_kernels.hpp"

#include <algorithm>
#include <cmath>

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
                              T* weighted_score, T* weighted_curvature, double* loss_terms) {
  const double tau64 = static_cast<double>(tau);
  for (std::size_t i = 0; i < rows; ++i) {
    const T r = residual[i];
    const T w = weight[i];
    weighted_score[i] = w * std::clamp(r, -tau, tau);
    weighted_curvature[i] = select(std::fabs(r) <= tau, w, T{0});
    loss_terms[i] = static_cast<double>(w) * huber_rho(static_cast<double>(r), tau64);
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

template <std::floating_point T>
RH_ROW_KERNEL bool any_non_finite_rows(const T* values, std::size_t n) {
  return any_non_finite(values, n);
}

template <std::floating_point T>
RH_ROW_KERNEL void estimated_loss_change_rows(const T* residual, const T* projection_u,
                                              const T* projection_v, double alpha, double beta,
                                              const T* weight, std::size_t rows, double tau,
                                              double& change, double& scale) {
  double sum = 0.0;
  double magnitude = 0.0;
  for (std::size_t i = 0; i < rows; ++i) {
    const double r = static_cast<double>(residual[i]);
    const double a = alpha * static_cast<double>(projection_u[i]) +
                     beta * static_cast<double>(projection_v[i]);
    const double w = static_cast<double>(weight[i]);
    const double term = w * huber_rho_change(r, a, tau);
    sum += term;
    magnitude += std::fabs(term) + w * (huber_rho(r, tau) + huber_rho(r - a, tau));
  }
  change += sum;
  scale += magnitude;
}

template <std::floating_point T>
RH_ROW_KERNEL double weighted_row_max_abs(const T* X, std::size_t rows, std::size_t cols,
                                          const T* weight, bool intercept) {
  double total = 0.0;
  for (std::size_t i = 0; i < rows; ++i) {
    T largest = intercept ? T{1} : T{0};
    for (std::size_t j = 0; j < cols; ++j) largest = std::max(largest, std::fabs(X[i * cols + j]));
    total += static_cast<double>(weight[i]) * static_cast<double>(largest);
  }
  return total;
}

template void huber_rows<float>(const float*, const float*, std::size_t, float, float*, float*,
                                double*);
template void huber_rows<double>(const double*, const double*, std::size_t, double, double*,
                                 double*, double*);
template void loss_change_rows<float>(const float*, const float*, const float*, std::size_t, float,
                                      double, double*);
template void loss_change_rows<double>(const double*, const double*, const double*, std::size_t,
                                       double, double, double*);
template void estimated_loss_change_rows<float>(const float*, const float*, const float*, double,
                                                double, const float*, std::size_t, double,
                                                double&, double&);
template void estimated_loss_change_rows<double>(const double*, const double*, const double*,
                                                 double, double, const double*, std::size_t,
                                                 double, double&, double&);
template double weighted_row_max_abs<float>(const float*, std::size_t, std::size_t, const float*,
                                            bool);
template double weighted_row_max_abs<double>(const double*, std::size_t, std::size_t,
                                             const double*, bool);
template bool any_non_finite_rows<float>(const float*, std::size_t);
template bool any_non_finite_rows<double>(const double*, std::size_t);

}  // namespace rh::cpu
