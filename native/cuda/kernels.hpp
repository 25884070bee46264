#pragma once
// Launchers of the engine's own kernels (huber_kernels.cu): the per-row work that benefits from
// fusion, small coefficient-vector operations, and reductions. Matrix products and
// factorizations are cuBLAS and cuSOLVER calls, not kernels of ours. Every launcher queues work
// on `stream` and returns at once.
//
// The per-row arithmetic is that of the CPU engine (docs/numerics.md): arrays in the dtype T,
// reductions accumulated in float64 over a fixed grid, summed in block order.

#include <cuda_runtime.h>

#include <concepts>
#include <cstddef>

namespace rh::cuda::kernels {

// --- rows --------------------------------------------------------------------------------------

// r = y - (r + b), where r holds X beta_S on entry and b = *intercept (none when null).
template <std::floating_point T>
void finish_residual(cudaStream_t stream, std::size_t n, const T* y, const T* intercept, T* r);

// The fused Huber pass at the current point: w psi(r) and w c(r) per row, and per-block float64
// partials of sum w rho(r) (row 0 of partials) and sum w psi(r) (row 1).
template <std::floating_point T>
void huber_terms(cudaStream_t stream, std::size_t n, const T* r, const T* w, T tau, T* wpsi,
                 T* wc, double* partials);

// The information pass at the final point (contract v3): the information update's curvature c
// (smoothed: c_h = clip(1/2 + (tau - |r|) / two_h, 0, 1); else the indicator), w c and w psi^2
// per row, and per-block float64 partials of sum w psi^2, sum w c, sum w c^2 and sum w (rows 0
// to 3 of partials), as the CPU engine forms them (native/cpu/batch_ops.cpp, information).
template <std::floating_point T>
void information_terms(cudaStream_t stream, std::size_t n, const T* r, const T* w, T tau,
                       T two_h, bool smoothed, T* wc, T* wpsi2, double* partials);

// out (d x d, row-major, exactly symmetric) = the column-major lower triangle `lower` mirrored.
template <std::floating_point T>
void mirror_lower(cudaStream_t stream, std::size_t d, const T* lower, T* out);

// scaled (row-major n x d, the SYRK operand) = sqrt(w c) x~ row by row: d = p + 1 writes the
// intercept's column as sqrt(w c) itself, d = p has none.
template <std::floating_point T>
void scale_rows(cudaStream_t stream, std::size_t n, std::size_t p, std::size_t d, const T* X,
                const T* wc, T* scaled);

// out[k] = sum of the first `blocks` partials of row k, for k < count, in block order.
void sum_partials(cudaStream_t stream, const double* partials, std::size_t blocks, int count,
                  double* out);

// Per-block float64 partials (row 0) of sum_i w_i ||x_i||^2 + trace(J~): the diagonal of
// X^T diag(w) X + J~ summed (LAMM's first phi; the intercept's sum w is the caller's).
template <std::floating_point T>
void design_trace(cudaStream_t stream, std::size_t n, std::size_t p, const T* X, const T* w,
                  std::size_t d, const double* information64, double* partials);

// a[i] += *value.
template <std::floating_point T>
void add_scalar(cudaStream_t stream, std::size_t n, const T* value, T* a);

// Partials (row 0) of sum w h(r, t a), h the cancellation-free Huber difference.
template <std::floating_point T>
void huber_change(cudaStream_t stream, std::size_t n, const T* r, const T* a, const T* w,
                  T factor, double tau, double* partials);

// *first_invalid = min(*first_invalid, first index whose value is not finite, or negative when
// `nonnegative`).
template <std::floating_point T>
void check_values(cudaStream_t stream, std::size_t count, const T* values, bool nonnegative,
                  unsigned long long* first_invalid);

template <std::floating_point T>
void fill(cudaStream_t stream, std::size_t count, T value, T* out);

// --- coefficient vectors -----------------------------------------------------------------------

template <std::floating_point T>
void scale(cudaStream_t stream, std::size_t d, T factor, T* v);
template <std::floating_point T>
void axpy(cudaStream_t stream, std::size_t d, T factor, const T* x, T* y);
// out = sign(z) max(|z| - level, 0) on the first `features` entries; the intercept is copied.
template <std::floating_point T>
void soft_threshold(cudaStream_t stream, std::size_t d, std::size_t features, const T* z,
                    T level, T* out);
template <std::floating_point T>
void dot(cudaStream_t stream, std::size_t d, const T* a, const T* b, double* out);
template <std::floating_point T>
void norm_inf(cudaStream_t stream, std::size_t d, const T* v, double* out);
// sign(coef) on the slopes, 0 on the intercept.
template <std::floating_point T>
void history_sign(cudaStream_t stream, std::size_t d, std::size_t features, const T* coef,
                  T* sign);
// delta = current - previous, in T and in float64.
template <std::floating_point T>
void delta(cudaStream_t stream, std::size_t d, const T* current, const T* previous, T* delta,
           double* delta64);
// out = -score + J~ delta - history * sign.
template <std::floating_point T>
void gradient(cudaStream_t stream, std::size_t d, const T* score, const T* information_delta,
              const T* sign, T history, T* out);
// out[0..2] = delta^T J~ delta, sign^T delta, ||current_S||_1 (float64).
template <std::floating_point T>
void objective_terms(cudaStream_t stream, std::size_t d, std::size_t features,
                     const double* delta64, const double* information_delta64, const T* sign,
                     const T* current, double* out);
// trial64 = float64(factor * step), the product formed in T.
template <std::floating_point T>
void trial(cudaStream_t stream, std::size_t d, const T* step, T factor, double* trial64);
// out[0..3] = delta^T J~ s, s^T J~ delta, s^T J~ s, sign^T s (float64).
template <std::floating_point T>
void change_terms(cudaStream_t stream, std::size_t d, const double* delta64,
                  const double* information_trial64, const double* trial64,
                  const double* information_delta64, const T* sign, double* out);
template <std::floating_point T>
void to_double(cudaStream_t stream, std::size_t count, const T* in, double* out);
// *out = T(*sum): a float64 reduction entering an array (an intercept entry).
template <std::floating_point T>
void store_sum(cudaStream_t stream, const double* sum, T* out);

// --- d x d matrices ----------------------------------------------------------------------------

// hessian (column-major) = mirrored lower gram + information (row-major, as stored) + ridge I;
// *asymmetric = 1 when some H(i, j) != H(j, i).
template <std::floating_point T>
void assemble_hessian(cudaStream_t stream, std::size_t d, const T* gram, const T* information,
                      T ridge, T* hessian, int* asymmetric);
// H(i, j) *= (scales[i] * scales[j]) in place, the product formed first so that an exactly
// symmetric H stays so (the ladder's equilibration); *asymmetric = 1 when some H(i, j) != H(j, i)
// afterwards.
template <std::floating_point T>
void equilibrate_hessian(cudaStream_t stream, std::size_t d, const T* scales, T* hessian,
                         int* asymmetric);
// *out = ||H||_1, each column summed in T in row order, as LAPACK's lange does; `maxima` holds
// max_reduction_blocks per-block maxima (scratch).
template <std::floating_point T>
void one_norm(cudaStream_t stream, std::size_t d, const T* hessian, double* maxima, double* out);
// out (row-major) = mirrored lower gram + information (row-major).
template <std::floating_point T>
void add_information(cudaStream_t stream, std::size_t d, const T* gram, const T* information,
                     T* out);
// *flag = 1 when some x is not finite.
template <std::floating_point T>
void flag_nonfinite(cudaStream_t stream, std::size_t d, const T* x, int* flag);
// c[i] = c[i] / sigma[i] when sigma[i] > rcond * sigma[0], else 0 (the pseudo-inverse), as
// LAPACK's gelsd cuts; *rank = the number of singular values kept.
template <std::floating_point T>
void pseudo_inverse_scale(cudaStream_t stream, std::size_t d, const T* sigma, T rcond, T* c,
                          unsigned long long* rank);

}  // namespace rh::cuda::kernels
