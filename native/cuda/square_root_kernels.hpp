#pragma once
// Launchers of the square-root mode's kernels (factorization="qr", square_root_kernels.cu): the
// stacked rows that cuSOLVER's geqrf reduces, their columns' equilibration, and the rows' Huber
// pattern. Every launcher queues work on `stream` and returns at once; the per-row arithmetic is
// the CPU engine's (native/cpu/square_root.cpp).

#include <cuda_runtime.h>

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace rh::cuda::kernels {

// The batch's n rows of the QR into A (column-major, leading dimension lda): sqrt(w c) [x~ | r | y]
// for a Newton step (step: columns d and d + 1; c the indicator 1{|r| <= tau}), sqrt(w c) [x~ | y]
// for the information update (column d; c its curvature: the indicator, or when smoothed
// clip(1/2 + (tau - |r|) / two_h, 0, 1)); a row with w c = 0 is zero. The intercept's column
// (d = p + 1) is sqrt(w c). linear[i] = w psi - w c r (the row's share of the linear term, 0
// inside the indicator's zone), and per-block float64 partials (row 0) of its sum.
template <std::floating_point T>
void square_root_rows(cudaStream_t stream, std::size_t n, std::size_t p, std::size_t d,
                      const T* X, const T* y, const T* w, const T* r, T tau, T two_h,
                      bool smoothed, bool step, T* A, std::size_t lda, T* linear,
                      double* partials);

// out[j] = the float64 sum of squares of column j's first m entries, for j < columns.
template <std::floating_point T>
void column_squares(cudaStream_t stream, std::size_t m, std::size_t columns, const T* A,
                    std::size_t lda, double* out);

// Column j's first m entries times scales[j], for j < columns.
template <std::floating_point T>
void scale_columns(cudaStream_t stream, std::size_t m, std::size_t columns, const T* scales, T* A,
                   std::size_t lda);

// The rows' pattern at residuals r: 0 zero weight, 1 inside tau, 2 above, 3 below. *differs = 1
// when some row's class is not pattern[i]; write: pattern[i] = the class.
template <std::floating_point T>
void huber_pattern(cudaStream_t stream, std::size_t n, const T* r, const T* w, T tau,
                   std::uint8_t* pattern, bool write, int* differs);

// out[i] = T(in[i]).
template <std::floating_point T>
void from_double(cudaStream_t stream, std::size_t count, const double* in, T* out);

}  // namespace rh::cuda::kernels
