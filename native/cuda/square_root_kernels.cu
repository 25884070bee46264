// The square-root mode's kernels (square_root_kernels.hpp).

#include <cmath>

#include "errors.hpp"
#include "kernel_support.cuh"
#include "square_root_kernels.hpp"

namespace rh::cuda::kernels {
namespace {

template <class T>
__global__ void square_root_rows_kernel(std::size_t n, std::size_t p, std::size_t d, const T* X,
                                        const T* y, const T* w, const T* r, T tau, T two_h,
                                        bool smoothed, bool step, T* A, std::size_t lda,
                                        T* linear, double* partials) {
  double total = 0.0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const T weight = w[i];
    const T residual = r[i];
    const T magnitude = fabs(residual);
    T c = magnitude <= tau ? T{1} : T{0};
    if (smoothed) {
      const T ramp = T{0.5} + (tau - magnitude) / two_h;
      c = ramp < T{0} ? T{0} : (T{1} < ramp ? T{1} : ramp);
    }
    const T psi = residual < -tau ? -tau : (tau < residual ? tau : residual);  // std::clamp
    const T wc = weight * c;
    const T scale = wc > T{0} ? sqrt(wc) : T{0};
    const T* x = X + i * p;
    for (std::size_t j = 0; j < p; ++j) A[j * lda + i] = scale * x[j];
    if (d > p) A[p * lda + i] = scale;
    A[d * lda + i] = scale * (step ? residual : y[i]);
    if (step) A[(d + 1) * lda + i] = scale * y[i];
    const double a = static_cast<double>(weight) * static_cast<double>(psi) -
                     static_cast<double>(wc) * static_cast<double>(residual);
    linear[i] = static_cast<T>(a);
    total += a;
  }
  total = block_sum(total);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block per column: its sum of squares in a fixed order.
template <class T>
__global__ void column_squares_kernel(std::size_t m, const T* A, std::size_t lda, double* out) {
  const T* column = A + static_cast<std::size_t>(blockIdx.x) * lda;
  double sum = 0.0;
  for (std::size_t i = threadIdx.x; i < m; i += blockDim.x) {
    const auto value = static_cast<double>(column[i]);
    sum += value * value;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

template <class T>
__global__ void scale_columns_kernel(std::size_t m, std::size_t columns, const T* scales, T* A,
                                     std::size_t lda) {
  for (std::size_t k = global_index(); k < m * columns; k += grid_stride()) {
    const std::size_t j = k / m;
    const std::size_t i = k % m;
    A[j * lda + i] *= scales[j];
  }
}

template <class T>
__global__ void huber_pattern_kernel(std::size_t n, const T* r, const T* w, T tau,
                                     std::uint8_t* pattern, bool write, int* differs) {
  bool changed = false;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const T residual = r[i];
    std::uint8_t c = 0;
    if (w[i] != T{0}) c = fabs(residual) <= tau ? 1 : (residual > T{0} ? 2 : 3);
    changed = changed || pattern[i] != c;
    if (write) pattern[i] = c;
  }
  if (changed) *differs = 1;
}

template <class T>
__global__ void from_double_kernel(std::size_t count, const double* in, T* out) {
  for (std::size_t i = global_index(); i < count; i += grid_stride()) {
    out[i] = static_cast<T>(in[i]);
  }
}

}  // namespace

template <std::floating_point T>
void square_root_rows(cudaStream_t stream, std::size_t n, std::size_t p, std::size_t d,
                      const T* X, const T* y, const T* w, const T* r, T tau, T two_h,
                      bool smoothed, bool step, T* A, std::size_t lda, T* linear,
                      double* partials) {
  const auto blocks = static_cast<unsigned>(reduction_blocks(n));
  square_root_rows_kernel<<<blocks, threads, 0, stream>>>(n, p, d, X, y, w, r, tau, two_h,
                                                          smoothed, step, A, lda, linear,
                                                          partials);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void column_squares(cudaStream_t stream, std::size_t m, std::size_t columns, const T* A,
                    std::size_t lda, double* out) {
  if (columns == 0) return;
  column_squares_kernel<<<static_cast<unsigned>(columns), threads, 0, stream>>>(m, A, lda, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void scale_columns(cudaStream_t stream, std::size_t m, std::size_t columns, const T* scales, T* A,
                   std::size_t lda) {
  scale_columns_kernel<<<elementwise_blocks(m * columns), threads, 0, stream>>>(m, columns,
                                                                               scales, A, lda);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void huber_pattern(cudaStream_t stream, std::size_t n, const T* r, const T* w, T tau,
                   std::uint8_t* pattern, bool write, int* differs) {
  huber_pattern_kernel<<<elementwise_blocks(n), threads, 0, stream>>>(n, r, w, tau, pattern,
                                                                     write, differs);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void from_double(cudaStream_t stream, std::size_t count, const double* in, T* out) {
  from_double_kernel<<<elementwise_blocks(count), threads, 0, stream>>>(count, in, out);
  RH_CUDA_CHECK_LAUNCH();
}

#define RH_SQUARE_ROOT_INSTANTIATE(T)                                                            \
  template void square_root_rows<T>(cudaStream_t, std::size_t, std::size_t, std::size_t,        \
                                    const T*, const T*, const T*, const T*, T, T, bool, bool,    \
                                    T*, std::size_t, T*, double*);                               \
  template void column_squares<T>(cudaStream_t, std::size_t, std::size_t, const T*, std::size_t, \
                                  double*);                                                      \
  template void scale_columns<T>(cudaStream_t, std::size_t, std::size_t, const T*, T*,          \
                                 std::size_t);                                                   \
  template void huber_pattern<T>(cudaStream_t, std::size_t, const T*, const T*, T,              \
                                 std::uint8_t*, bool, int*);                                     \
  template void from_double<T>(cudaStream_t, std::size_t, const double*, T*);
RH_SQUARE_ROOT_INSTANTIATE(float)
RH_SQUARE_ROOT_INSTANTIATE(double)
#undef RH_SQUARE_ROOT_INSTANTIATE

}  // namespace rh::cuda::kernels
