// The regime screen's start gradient (rh/screen.hpp). Written here rather than left to NumPy:
// on a stream's first batch, whose data had evicted NumPy's code and the screen's operands from
// the core's caches, the NumPy version's eight small calls took 0.27-0.31 ms (~80 us warm), as
// much as a tenth of a 3,000 x 48 first batch; one call here takes ~0.1 ms there.

#include "rh/screen.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rh/error.hpp"

namespace rh {
namespace {

// The median of `v` as NumPy's of a copy: the middle order statistic, or the mean of the two
// middle ones. Reorders `v`; v is not empty and has no NaN.
double median_of(std::vector<double>& v) {
  const std::size_t k = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  const double upper = v[k];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
  return 0.5 * (lower + upper);
}

// score[j] += Σ_i x[i, j] · psi[i] over row-major rows: the product that reads the rows. Cloned
// for AVX2 (the library is built for the baseline x86-64, and this loop is all multiply-adds),
// chosen when the library loads; an AVX-512 clone made no difference in a stream.
template <class T>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void add_score(const T* __restrict x, std::size_t rows, std::size_t cols,
               const double* __restrict psi, double* __restrict score) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T* row = x + i * cols;
    const double weight = psi[i];
    for (std::size_t j = 0; j < cols; ++j) score[j] += static_cast<double>(row[j]) * weight;
  }
}

}  // namespace

template <class T>
double start_gradient(std::span<const T> x, std::size_t rows, std::size_t cols,
                      std::span<const double> y, std::optional<double> tau, double mad_factor,
                      bool fit_intercept, std::span<double> gradient) {
  if (x.size() != rows * cols || y.size() != rows || gradient.size() != cols) {
    fail("start_gradient: x has ", x.size(), " entries, y ", y.size(), " and gradient ",
         gradient.size(), " for ", rows, " rows of ", cols);
  }
  std::fill(gradient.begin(), gradient.end(), 0.0);
  // A screen that cannot tell says so by τ = 0: no rows, or targets that are not all finite
  // (the update refuses such a batch; a selection among NaNs has no order).
  if (rows == 0 || !std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); })) {
    return 0.0;
  }
  std::vector<double> r0(y.begin(), y.end());
  std::vector<double> work(r0);  // the selections reorder this copy of y, then the deviations
  if (fit_intercept) {
    const double center = median_of(work);
    for (double& r : r0) r -= center;
  }
  double t = 0.0;
  if (tau) {
    t = *tau;
  } else {
    const double center = fit_intercept ? 0.0 : median_of(work);  // centred already with one
    for (std::size_t i = 0; i < rows; ++i) work[i] = std::abs(r0[i] - center);
    t = mad_factor * median_of(work);
  }
  if (!(std::isfinite(t) && t > 0.0)) return 0.0;
  for (double& r : r0) r = std::clamp(r, -t, t);  // ψ_τ(r₀)
  add_score(x.data(), rows, cols, r0.data(), gradient.data());
  const double n = static_cast<double>(rows);
  for (double& g : gradient) g = std::abs(g) / n;
  return t;
}

template double start_gradient<float>(std::span<const float>, std::size_t, std::size_t,
                                      std::span<const double>, std::optional<double>, double,
                                      bool, std::span<double>);
template double start_gradient<double>(std::span<const double>, std::size_t, std::size_t,
                                       std::span<const double>, std::optional<double>, double,
                                       bool, std::span<double>);

}  // namespace rh
