// Row dot products (row_dots.hpp): the dispatch and the portable variant, which spells out the
// order the AVX2 variant computes (compiled with -ffp-contract=off: every fused multiply-add is
// an explicit std::fma, every other operation rounds on its own).

#include "row_dots.hpp"

#include <array>
#include <cmath>

#include "gram_kernel.hpp"

namespace rh::cpu {
namespace {

template <class T>
T portable_dot(const T* x, std::size_t features, const T* v) {
  std::array<T, 8> s{};  // +0
  const std::size_t padded = (features + 7) / 8 * 8;
  for (std::size_t j = 0; j < padded; ++j) {
    const T xj = j < features ? x[j] : T{0};
    const T vj = j < features ? v[j] : T{0};
    s[j % 8] = std::fma(xj, vj, s[j % 8]);
  }
  const T v0 = s[0] + s[4];
  const T v1 = s[1] + s[5];
  const T v2 = s[2] + s[6];
  const T v3 = s[3] + s[7];
  return (v0 + v1) + (v2 + v3);
}

}  // namespace

namespace detail {
template <std::floating_point T>
void row_dots_portable(const T* X, std::size_t rows, std::size_t features, const T* v, T* out) {
  for (std::size_t i = 0; i < rows; ++i) out[i] = portable_dot(X + i * features, features, v);
}
template void row_dots_portable<float>(const float*, std::size_t, std::size_t, const float*,
                                       float*);
template void row_dots_portable<double>(const double*, std::size_t, std::size_t, const double*,
                                        double*);

template <std::floating_point T>
void row_dots_and_squares_portable(const T* X, std::size_t rows, std::size_t features, const T* v,
                                   T* out, T* squares) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T* x = X + i * features;
    out[i] = portable_dot(x, features, v);
    squares[i] = portable_dot(x, features, x);
  }
}
template void row_dots_and_squares_portable<float>(const float*, std::size_t, std::size_t,
                                                   const float*, float*, float*);
template void row_dots_and_squares_portable<double>(const double*, std::size_t, std::size_t,
                                                    const double*, double*, double*);

template <std::floating_point T>
void add_weighted_rows_portable(const T* X, std::size_t rows, std::size_t features, const T* s,
                                T* partial) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T* x = X + i * features;
    for (std::size_t j = 0; j < features; ++j) partial[j] = std::fma(x[j], s[i], partial[j]);
  }
}
template void add_weighted_rows_portable<float>(const float*, std::size_t, std::size_t,
                                                const float*, float*);
template void add_weighted_rows_portable<double>(const double*, std::size_t, std::size_t,
                                                 const double*, double*);
}  // namespace detail

template <std::floating_point T>
void row_dots(const T* X, std::size_t rows, std::size_t features, const T* v, T* out) {
#if defined(RH_GRAM_KERNEL_AVX2)
  if (gram::cpu_has_avx2_fma()) {
    detail::row_dots_avx2(X, rows, features, v, out);
    return;
  }
#endif
  detail::row_dots_portable(X, rows, features, v, out);
}

template <std::floating_point T>
void row_dots_and_squares(const T* X, std::size_t rows, std::size_t features, const T* v, T* out,
                          T* squares) {
#if defined(RH_GRAM_KERNEL_AVX2)
  if (gram::cpu_has_avx2_fma()) {
    detail::row_dots_and_squares_avx2(X, rows, features, v, out, squares);
    return;
  }
#endif
  detail::row_dots_and_squares_portable(X, rows, features, v, out, squares);
}

template <std::floating_point T>
void add_weighted_rows(const T* X, std::size_t rows, std::size_t features, const T* s,
                       T* partial) {
#if defined(RH_GRAM_KERNEL_AVX2)
  if (gram::cpu_has_avx2_fma()) {
    detail::add_weighted_rows_avx2(X, rows, features, s, partial);
    return;
  }
#endif
  detail::add_weighted_rows_portable(X, rows, features, s, partial);
}

template void row_dots<float>(const float*, std::size_t, std::size_t, const float*, float*);
template void row_dots<double>(const double*, std::size_t, std::size_t, const double*, double*);
template void row_dots_and_squares<float>(const float*, std::size_t, std::size_t, const float*,
                                          float*, float*);
template void row_dots_and_squares<double>(const double*, std::size_t, std::size_t,
                                           const double*, double*, double*);
template void add_weighted_rows<float>(const float*, std::size_t, std::size_t, const float*,
                                       float*);
template void add_weighted_rows<double>(const double*, std::size_t, std::size_t, const double*,
                                        double*);

}  // namespace rh::cpu
