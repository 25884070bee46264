// The engine's kernels. Launch shapes are fixed functions of the sizes, so every reduction sums
// the same values in the same order on every run.

#include <algorithm>
#include <cmath>

#include "errors.hpp"
#include "kernel_support.cuh"
#include "kernels.hpp"
#include "workspace.hpp"

namespace rh::cuda {

std::size_t reduction_blocks(std::size_t rows) {
  const std::size_t blocks = (rows + reduction_threads - 1) / reduction_threads;
  return std::clamp<std::size_t>(blocks, 1, max_reduction_blocks);
}

}  // namespace rh::cuda

namespace rh::cuda::kernels {
namespace {

// rho and the cancellation-free difference h(r, a) = rho(r - a) - rho(r), in float64: the device
// twins of rh::huber_rho and rh::huber_rho_change (rh/huber.hpp), which are host-only.
__device__ double huber_rho(double r, double tau) {
  const double abs_r = fabs(r);
  return abs_r <= tau ? 0.5 * r * r : tau * abs_r - 0.5 * tau * tau;
}

__device__ double huber_rho_change(double r, double a, double tau) {
  const double moved = r - a;
  const bool r_inside = fabs(r) <= tau;
  const bool moved_inside = fabs(moved) <= tau;
  if (r_inside && moved_inside) return a * (0.5 * a - r);
  if (!r_inside && !moved_inside && signbit(r) == signbit(moved)) return -tau * copysign(1.0, r) * a;
  return huber_rho(moved, tau) - huber_rho(r, tau);
}

template <class T>
__device__ bool is_finite(T value) {
  return isfinite(value);
}

// --- rows --------------------------------------------------------------------------------------

template <class T>
__global__ void finish_residual_kernel(std::size_t n, const T* y, const T* intercept, T* r) {
  const T offset = intercept != nullptr ? *intercept : T{0};
  for (std::size_t i = global_index(); i < n; i += grid_stride()) r[i] = y[i] - (r[i] + offset);
}

template <class T>
__global__ void huber_terms_kernel(std::size_t n, const T* r, const T* w, T tau, T* wpsi, T* wc,
                                   double* partials) {
  const double tau64 = static_cast<double>(tau);
  double loss = 0.0;
  double score = 0.0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const T residual = r[i];
    const T weight = w[i];
    const T psi = residual < -tau ? -tau : (tau < residual ? tau : residual);  // std::clamp
    const T weighted_psi = weight * psi;
    wpsi[i] = weighted_psi;
    wc[i] = fabs(residual) <= tau ? weight : T{0};
    loss += static_cast<double>(weight) * huber_rho(static_cast<double>(residual), tau64);
    score += static_cast<double>(weighted_psi);
  }
  loss = block_sum(loss);
  score = block_sum(score);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = loss;
    partials[max_reduction_blocks + blockIdx.x] = score;
  }
}

template <class T>
__global__ void information_terms_kernel(std::size_t n, const T* r, const T* w, T tau, T two_h,
                                         bool smoothed, T* wc, T* wpsi2, double* partials) {
  double score_sq = 0.0;
  double curvature = 0.0;
  double curvature_sq = 0.0;
  double weight_sum = 0.0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const T residual = r[i];
    const T weight = w[i];
    const T psi = residual < -tau ? -tau : (tau < residual ? tau : residual);  // std::clamp
    const T magnitude = fabs(residual);
    T c = magnitude <= tau ? T{1} : T{0};
    if (smoothed) {
      const T ramp = T{0.5} + (tau - magnitude) / two_h;
      c = ramp < T{0} ? T{0} : (T{1} < ramp ? T{1} : ramp);
    }
    const double w64 = static_cast<double>(weight);
    const double psi64 = static_cast<double>(psi);
    const double c64 = static_cast<double>(c);
    score_sq += w64 * psi64 * psi64;
    const double weighted_c = w64 * c64;
    curvature += weighted_c;
    curvature_sq += weighted_c * c64;
    weight_sum += w64;
    wc[i] = weight * c;
    wpsi2[i] = weight * psi * psi;
  }
  score_sq = block_sum(score_sq);
  curvature = block_sum(curvature);
  curvature_sq = block_sum(curvature_sq);
  weight_sum = block_sum(weight_sum);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = score_sq;
    partials[max_reduction_blocks + blockIdx.x] = curvature;
    partials[2 * max_reduction_blocks + blockIdx.x] = curvature_sq;
    partials[3 * max_reduction_blocks + blockIdx.x] = weight_sum;
  }
}

template <class T>
__global__ void mirror_lower_kernel(std::size_t d, const T* lower, T* out) {
  for (std::size_t k = global_index(); k < d * d; k += grid_stride()) {
    const std::size_t i = k / d;
    const std::size_t j = k % d;
    out[k] = i >= j ? lower[i + j * d] : lower[j + i * d];
  }
}

// One thread per element of the n x d staging buffer (element k: row k / d, column k % d), so
// consecutive threads read X and write the buffer at consecutive addresses. With an intercept
// the last column is sqrt(w c) itself: the Gram's intercept row and corner then come out of the
// same SYRK as the rest, as on the CPU (native/cpu/batch_ops.cpp, scale_row).
template <class T>
__global__ void scale_rows_kernel(std::size_t n, std::size_t p, std::size_t d, const T* X,
                                  const T* wc, T* scaled) {
  const std::size_t count = n * d;
  for (std::size_t k = global_index(); k < count; k += grid_stride()) {
    const std::size_t i = k / d;
    const std::size_t j = k - i * d;
    const T root = sqrt(wc[i]);
    scaled[k] = j < p ? root * X[i * p + j] : root;
  }
}

__global__ void sum_partials_kernel(const double* partials, std::size_t blocks, int count,
                                    double* out) {
  for (int k = 0; k < count; ++k) {
    double sum = 0.0;
    for (std::size_t b = threadIdx.x; b < blocks; b += blockDim.x) {
      sum += partials[k * max_reduction_blocks + b];
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) out[k] = sum;
  }
}

template <class T>
__global__ void design_trace_kernel(std::size_t n, std::size_t p, const T* X, const T* w,
                                    std::size_t d, const double* information64,
                                    double* partials) {
  // Entry by entry of the row-major X (coalesced reads), then J~'s diagonal, on a fixed grid.
  double sum = 0.0;
  const std::size_t entries = n * p;
  for (std::size_t e = global_index(); e < entries; e += grid_stride()) {
    const double value = static_cast<double>(X[e]);
    sum += static_cast<double>(w[e / p]) * (value * value);
  }
  for (std::size_t j = global_index(); j < d; j += grid_stride()) sum += information64[j * d + j];
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

template <class T>
__global__ void add_scalar_kernel(std::size_t n, const T* value, T* a) {
  const T v = *value;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) a[i] += v;
}

template <class T>
__global__ void huber_change_kernel(std::size_t n, const T* r, const T* a, const T* w, T factor,
                                    double tau, double* partials) {
  double change = 0.0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const T moved = factor * a[i];
    change += static_cast<double>(w[i]) *
              huber_rho_change(static_cast<double>(r[i]), static_cast<double>(moved), tau);
  }
  change = block_sum(change);
  if (threadIdx.x == 0) partials[blockIdx.x] = change;
}

template <class T>
__global__ void check_values_kernel(std::size_t count, const T* values, bool nonnegative,
                                    unsigned long long* first_invalid) {
  for (std::size_t i = global_index(); i < count; i += grid_stride()) {
    const T v = values[i];
    if (nonnegative ? v < T{0} : !is_finite(v)) {
      atomicMin(first_invalid, static_cast<unsigned long long>(i));
      return;  // later indices of this thread are larger
    }
  }
}

template <class T>
__global__ void fill_kernel(std::size_t count, T value, T* out) {
  for (std::size_t i = global_index(); i < count; i += grid_stride()) out[i] = value;
}

// --- coefficient vectors (one block: d is small) -----------------------------------------------

template <class T>
__global__ void scale_kernel(std::size_t d, T factor, T* v) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) v[j] *= factor;
}

template <class T>
__global__ void axpy_kernel(std::size_t d, T factor, const T* x, T* y) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) y[j] += factor * x[j];
}

template <class T>
__global__ void soft_threshold_kernel(std::size_t d, std::size_t features, const T* z, T level,
                                      T* out) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    if (j < features) {
      const T shrunk = fmax(fabs(z[j]) - level, T{0});
      out[j] = z[j] < T{0} ? -shrunk : shrunk;
    } else {
      out[j] = z[j];  // the intercept is never penalized
    }
  }
}

template <class T>
__global__ void dot_kernel(std::size_t d, const T* a, const T* b, double* out) {
  double sum = 0.0;
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    sum += static_cast<double>(a[j]) * static_cast<double>(b[j]);
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) *out = sum;
}

template <class T>
__global__ void norm_inf_kernel(std::size_t d, const T* v, double* out) {
  double norm = 0.0;
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    norm = fmax(norm, fabs(static_cast<double>(v[j])));
  }
  norm = block_max(norm);
  if (threadIdx.x == 0) *out = norm;
}

template <class T>
__global__ void history_sign_kernel(std::size_t d, std::size_t features, const T* coef, T* sign) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    const T c = coef[j];
    sign[j] = j < features ? static_cast<T>((c > T{0}) - (c < T{0})) : T{0};
  }
}

template <class T>
__global__ void delta_kernel(std::size_t d, const T* current, const T* previous, T* delta,
                             double* delta64) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    const T difference = current[j] - previous[j];
    delta[j] = difference;
    delta64[j] = static_cast<double>(difference);
  }
}

template <class T>
__global__ void gradient_kernel(std::size_t d, const T* score, const T* information_delta,
                                const T* sign, T history, T* out) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    out[j] = -score[j] + information_delta[j] - history * sign[j];
  }
}

template <class T>
__global__ void objective_terms_kernel(std::size_t d, std::size_t features, const double* delta64,
                                       const double* information_delta64, const T* sign,
                                       const T* current, double* out) {
  double quadratic = 0.0;
  double history = 0.0;
  double l1 = 0.0;
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    quadratic += delta64[j] * information_delta64[j];
    history += static_cast<double>(sign[j]) * delta64[j];
    if (j < features) l1 += fabs(static_cast<double>(current[j]));
  }
  quadratic = block_sum(quadratic);
  history = block_sum(history);
  l1 = block_sum(l1);
  if (threadIdx.x == 0) {
    out[0] = quadratic;
    out[1] = history;
    out[2] = l1;
  }
}

template <class T>
__global__ void trial_kernel(std::size_t d, const T* step, T factor, double* trial64) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    trial64[j] = static_cast<double>(factor * step[j]);
  }
}

template <class T>
__global__ void change_terms_kernel(std::size_t d, const double* delta64,
                                    const double* information_trial64, const double* trial64,
                                    const double* information_delta64, const T* sign,
                                    double* out) {
  double delta_j_s = 0.0;
  double s_j_delta = 0.0;
  double s_j_s = 0.0;
  double history = 0.0;
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    const double s = trial64[j];
    delta_j_s += delta64[j] * information_trial64[j];
    s_j_delta += s * information_delta64[j];
    s_j_s += s * information_trial64[j];
    history += static_cast<double>(sign[j]) * s;
  }
  delta_j_s = block_sum(delta_j_s);
  s_j_delta = block_sum(s_j_delta);
  s_j_s = block_sum(s_j_s);
  history = block_sum(history);
  if (threadIdx.x == 0) {
    out[0] = delta_j_s;
    out[1] = s_j_delta;
    out[2] = s_j_s;
    out[3] = history;
  }
}

template <class T>
__global__ void to_double_kernel(std::size_t count, const T* in, double* out) {
  for (std::size_t i = global_index(); i < count; i += grid_stride()) {
    out[i] = static_cast<double>(in[i]);
  }
}

template <class T>
__global__ void store_sum_kernel(const double* sum, T* out) {
  *out = static_cast<T>(*sum);
}

// --- d x d matrices ----------------------------------------------------------------------------

// One thread per pair i >= j writes both H(i, j) and H(j, i), so the symmetry test is local.
template <class T>
__global__ void assemble_hessian_kernel(std::size_t d, const T* gram, const T* information,
                                        T ridge, T* hessian, int* asymmetric) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  const std::size_t j = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= d || j > i) return;
  const T g = gram[i + j * d];
  T lower = g + information[i * d + j];
  T upper = g + information[j * d + i];
  if (i == j) {
    lower += ridge;
    upper = lower;
  }
  hessian[i + j * d] = lower;
  hessian[j + i * d] = upper;
  if (lower != upper) *asymmetric = 1;
}

// As assemble_hessian_kernel: one thread per pair i >= j scales both halves with one factor.
template <class T>
__global__ void equilibrate_hessian_kernel(std::size_t d, const T* scales, T* hessian,
                                           int* asymmetric) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  const std::size_t j = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= d || j > i) return;
  const T factor = scales[i] * scales[j];
  const T lower = hessian[i + j * d] * factor;
  hessian[i + j * d] = lower;
  if (i == j) return;
  const T upper = hessian[j + i * d] * factor;
  hessian[j + i * d] = upper;
  if (lower != upper) *asymmetric = 1;
}

// ||H||_1 in two passes. Each block takes 32 columns at a time: its 8 warps read 32 x 32 tiles of
// the column-major H down the rows (coalesced) into shared memory, and one warp sums each
// column's entries from there, one thread per column, in T and in row order as lange does, so
// the result is the CPU engine's to the bit. The block's largest column sum goes to `maxima`;
// max_partials_kernel takes the largest of those (a maximum is exact in any order).
constexpr unsigned norm_tile = 32;

template <class T>
__global__ void column_norms_kernel(std::size_t d, const T* hessian, double* maxima) {
  __shared__ T tile[norm_tile][norm_tile + 1];  // [column][row]; the pad avoids bank conflicts
  const unsigned lane = threadIdx.x % norm_tile;
  const unsigned warp = threadIdx.x / norm_tile;
  const unsigned warps = blockDim.x / norm_tile;
  double norm = 0.0;
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * norm_tile; first < d;
       first += static_cast<std::size_t>(gridDim.x) * norm_tile) {
    T column = 0;
    for (std::size_t top = 0; top < d; top += norm_tile) {
      const std::size_t i = top + lane;
      for (unsigned c = warp; c < norm_tile; c += warps) {
        const std::size_t j = first + c;
        tile[c][lane] = i < d && j < d ? fabs(hessian[i + j * d]) : T{0};
      }
      __syncthreads();
      if (warp == 0) {
        const std::size_t rows = d - top < norm_tile ? d - top : norm_tile;
        for (std::size_t r = 0; r < rows; ++r) column += tile[lane][r];
      }
      __syncthreads();
    }
    if (warp == 0 && first + lane < d) norm = fmax(norm, static_cast<double>(column));
  }
  norm = block_max(norm);
  if (threadIdx.x == 0) maxima[blockIdx.x] = norm;
}

__global__ void max_partials_kernel(const double* maxima, std::size_t blocks, double* out) {
  double norm = 0.0;
  for (std::size_t b = threadIdx.x; b < blocks; b += blockDim.x) norm = fmax(norm, maxima[b]);
  norm = block_max(norm);
  if (threadIdx.x == 0) *out = norm;
}

template <class T>
__global__ void add_information_kernel(std::size_t d, const T* gram, const T* information,
                                       T* out) {
  for (std::size_t k = global_index(); k < d * d; k += grid_stride()) {
    const std::size_t i = k / d;
    const std::size_t j = k % d;
    const T g = i >= j ? gram[i + j * d] : gram[j + i * d];
    out[k] = g + information[k];
  }
}

template <class T>
__global__ void flag_nonfinite_kernel(std::size_t d, const T* x, int* flag) {
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    if (!is_finite(x[j])) *flag = 1;
  }
}

template <class T>
__global__ void pseudo_inverse_scale_kernel(std::size_t d, const T* sigma, T rcond, T* c,
                                            unsigned long long* rank) {
  const T cutoff = rcond * sigma[0];  // gesvd orders singular values decreasingly
  double kept = 0.0;                  // a count: exact in float64
  for (std::size_t j = threadIdx.x; j < d; j += blockDim.x) {
    const bool keep = sigma[j] > cutoff;
    c[j] = keep ? c[j] / sigma[j] : T{0};
    kept += keep ? 1.0 : 0.0;
  }
  kept = block_sum(kept);
  if (threadIdx.x == 0) *rank = static_cast<unsigned long long>(kept);
}

}  // namespace

// --- launchers ---------------------------------------------------------------------------------

template <std::floating_point T>
void finish_residual(cudaStream_t stream, std::size_t n, const T* y, const T* intercept, T* r) {
  finish_residual_kernel<<<elementwise_blocks(n), threads, 0, stream>>>(n, y, intercept, r);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void huber_terms(cudaStream_t stream, std::size_t n, const T* r, const T* w, T tau, T* wpsi,
                 T* wc, double* partials) {
  const auto blocks = static_cast<unsigned>(reduction_blocks(n));
  huber_terms_kernel<<<blocks, threads, 0, stream>>>(n, r, w, tau, wpsi, wc, partials);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void information_terms(cudaStream_t stream, std::size_t n, const T* r, const T* w, T tau,
                       T two_h, bool smoothed, T* wc, T* wpsi2, double* partials) {
  const auto blocks = static_cast<unsigned>(reduction_blocks(n));
  information_terms_kernel<<<blocks, threads, 0, stream>>>(n, r, w, tau, two_h, smoothed, wc,
                                                           wpsi2, partials);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void mirror_lower(cudaStream_t stream, std::size_t d, const T* lower, T* out) {
  mirror_lower_kernel<<<elementwise_blocks(d * d), threads, 0, stream>>>(d, lower, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void scale_rows(cudaStream_t stream, std::size_t n, std::size_t p, std::size_t d, const T* X,
                const T* wc, T* scaled) {
  scale_rows_kernel<<<elementwise_blocks(n * d), threads, 0, stream>>>(n, p, d, X, wc, scaled);
  RH_CUDA_CHECK_LAUNCH();
}

void sum_partials(cudaStream_t stream, const double* partials, std::size_t blocks, int count,
                  double* out) {
  sum_partials_kernel<<<1, threads, 0, stream>>>(partials, blocks, count, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void design_trace(cudaStream_t stream, std::size_t n, std::size_t p, const T* X, const T* w,
                  std::size_t d, const double* information64, double* partials) {
  const auto blocks = static_cast<unsigned>(reduction_blocks(n));
  design_trace_kernel<<<blocks, threads, 0, stream>>>(n, p, X, w, d, information64, partials);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void add_scalar(cudaStream_t stream, std::size_t n, const T* value, T* a) {
  add_scalar_kernel<<<elementwise_blocks(n), threads, 0, stream>>>(n, value, a);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void huber_change(cudaStream_t stream, std::size_t n, const T* r, const T* a, const T* w,
                  T factor, double tau, double* partials) {
  const auto blocks = static_cast<unsigned>(reduction_blocks(n));
  huber_change_kernel<<<blocks, threads, 0, stream>>>(n, r, a, w, factor, tau, partials);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void check_values(cudaStream_t stream, std::size_t count, const T* values, bool nonnegative,
                  unsigned long long* first_invalid) {
  check_values_kernel<<<elementwise_blocks(count), threads, 0, stream>>>(count, values,
                                                                         nonnegative,
                                                                         first_invalid);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void fill(cudaStream_t stream, std::size_t count, T value, T* out) {
  fill_kernel<<<elementwise_blocks(count), threads, 0, stream>>>(count, value, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void scale(cudaStream_t stream, std::size_t d, T factor, T* v) {
  scale_kernel<<<1, threads, 0, stream>>>(d, factor, v);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void axpy(cudaStream_t stream, std::size_t d, T factor, const T* x, T* y) {
  axpy_kernel<<<1, threads, 0, stream>>>(d, factor, x, y);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void soft_threshold(cudaStream_t stream, std::size_t d, std::size_t features, const T* z,
                    T level, T* out) {
  soft_threshold_kernel<<<1, threads, 0, stream>>>(d, features, z, level, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void dot(cudaStream_t stream, std::size_t d, const T* a, const T* b, double* out) {
  dot_kernel<<<1, threads, 0, stream>>>(d, a, b, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void norm_inf(cudaStream_t stream, std::size_t d, const T* v, double* out) {
  norm_inf_kernel<<<1, threads, 0, stream>>>(d, v, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void history_sign(cudaStream_t stream, std::size_t d, std::size_t features, const T* coef,
                  T* sign) {
  history_sign_kernel<<<1, threads, 0, stream>>>(d, features, coef, sign);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void delta(cudaStream_t stream, std::size_t d, const T* current, const T* previous, T* delta,
           double* delta64) {
  delta_kernel<<<1, threads, 0, stream>>>(d, current, previous, delta, delta64);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void gradient(cudaStream_t stream, std::size_t d, const T* score, const T* information_delta,
              const T* sign, T history, T* out) {
  gradient_kernel<<<1, threads, 0, stream>>>(d, score, information_delta, sign, history, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void objective_terms(cudaStream_t stream, std::size_t d, std::size_t features,
                     const double* delta64, const double* information_delta64, const T* sign,
                     const T* current, double* out) {
  objective_terms_kernel<<<1, threads, 0, stream>>>(d, features, delta64, information_delta64,
                                                    sign, current, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void trial(cudaStream_t stream, std::size_t d, const T* step, T factor, double* trial64) {
  trial_kernel<<<1, threads, 0, stream>>>(d, step, factor, trial64);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void change_terms(cudaStream_t stream, std::size_t d, const double* delta64,
                  const double* information_trial64, const double* trial64,
                  const double* information_delta64, const T* sign, double* out) {
  change_terms_kernel<<<1, threads, 0, stream>>>(d, delta64, information_trial64, trial64,
                                                 information_delta64, sign, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void to_double(cudaStream_t stream, std::size_t count, const T* in, double* out) {
  to_double_kernel<<<elementwise_blocks(count), threads, 0, stream>>>(count, in, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void store_sum(cudaStream_t stream, const double* sum, T* out) {
  store_sum_kernel<<<1, 1, 0, stream>>>(sum, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void assemble_hessian(cudaStream_t stream, std::size_t d, const T* gram, const T* information,
                      T ridge, T* hessian, int* asymmetric) {
  constexpr unsigned tile = 16;
  const auto tiles = static_cast<unsigned>((d + tile - 1) / tile);
  assemble_hessian_kernel<<<dim3(tiles, tiles), dim3(tile, tile), 0, stream>>>(
      d, gram, information, ridge, hessian, asymmetric);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void equilibrate_hessian(cudaStream_t stream, std::size_t d, const T* scales, T* hessian,
                         int* asymmetric) {
  constexpr unsigned tile = 16;
  const auto tiles = static_cast<unsigned>((d + tile - 1) / tile);
  equilibrate_hessian_kernel<<<dim3(tiles, tiles), dim3(tile, tile), 0, stream>>>(
      d, scales, hessian, asymmetric);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void one_norm(cudaStream_t stream, std::size_t d, const T* hessian, double* maxima, double* out) {
  const std::size_t tiles = (d + norm_tile - 1) / norm_tile;
  const auto blocks =
      static_cast<unsigned>(std::clamp<std::size_t>(tiles, 1, max_reduction_blocks));
  column_norms_kernel<<<blocks, threads, 0, stream>>>(d, hessian, maxima);
  RH_CUDA_CHECK_LAUNCH();
  max_partials_kernel<<<1, threads, 0, stream>>>(maxima, blocks, out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void add_information(cudaStream_t stream, std::size_t d, const T* gram, const T* information,
                     T* out) {
  add_information_kernel<<<elementwise_blocks(d * d), threads, 0, stream>>>(d, gram, information,
                                                                           out);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void flag_nonfinite(cudaStream_t stream, std::size_t d, const T* x, int* flag) {
  flag_nonfinite_kernel<<<1, threads, 0, stream>>>(d, x, flag);
  RH_CUDA_CHECK_LAUNCH();
}

template <std::floating_point T>
void pseudo_inverse_scale(cudaStream_t stream, std::size_t d, const T* sigma, T rcond, T* c,
                          unsigned long long* rank) {
  pseudo_inverse_scale_kernel<<<1, threads, 0, stream>>>(d, sigma, rcond, c, rank);
  RH_CUDA_CHECK_LAUNCH();
}

#define RH_INSTANTIATE(T)                                                                        \
  template void finish_residual<T>(cudaStream_t, std::size_t, const T*, const T*, T*);           \
  template void huber_terms<T>(cudaStream_t, std::size_t, const T*, const T*, T, T*, T*,         \
                               double*);                                                         \
  template void scale_rows<T>(cudaStream_t, std::size_t, std::size_t, std::size_t, const T*,     \
                              const T*, T*);                                                     \
  template void information_terms<T>(cudaStream_t, std::size_t, const T*, const T*, T, T, bool,  \
                                     T*, T*, double*);                                           \
  template void mirror_lower<T>(cudaStream_t, std::size_t, const T*, T*);                        \
  template void add_scalar<T>(cudaStream_t, std::size_t, const T*, T*);                          \
  template void design_trace<T>(cudaStream_t, std::size_t, std::size_t, const T*, const T*,      \
                                std::size_t, const double*, double*);                            \
  template void huber_change<T>(cudaStream_t, std::size_t, const T*, const T*, const T*, T,      \
                                double, double*);                                                \
  template void check_values<T>(cudaStream_t, std::size_t, const T*, bool,                      \
                                unsigned long long*);                                            \
  template void fill<T>(cudaStream_t, std::size_t, T, T*);                                       \
  template void scale<T>(cudaStream_t, std::size_t, T, T*);                                      \
  template void axpy<T>(cudaStream_t, std::size_t, T, const T*, T*);                             \
  template void soft_threshold<T>(cudaStream_t, std::size_t, std::size_t, const T*, T, T*);     \
  template void dot<T>(cudaStream_t, std::size_t, const T*, const T*, double*);                  \
  template void norm_inf<T>(cudaStream_t, std::size_t, const T*, double*);                       \
  template void history_sign<T>(cudaStream_t, std::size_t, std::size_t, const T*, T*);          \
  template void delta<T>(cudaStream_t, std::size_t, const T*, const T*, T*, double*);            \
  template void gradient<T>(cudaStream_t, std::size_t, const T*, const T*, const T*, T, T*);     \
  template void objective_terms<T>(cudaStream_t, std::size_t, std::size_t, const double*,       \
                                   const double*, const T*, const T*, double*);                  \
  template void trial<T>(cudaStream_t, std::size_t, const T*, T, double*);                       \
  template void change_terms<T>(cudaStream_t, std::size_t, const double*, const double*,        \
                                const double*, const double*, const T*, double*);                \
  template void to_double<T>(cudaStream_t, std::size_t, const T*, double*);                      \
  template void store_sum<T>(cudaStream_t, const double*, T*);                                   \
  template void assemble_hessian<T>(cudaStream_t, std::size_t, const T*, const T*, T, T*, int*); \
  template void equilibrate_hessian<T>(cudaStream_t, std::size_t, const T*, T*, int*);           \
  template void one_norm<T>(cudaStream_t, std::size_t, const T*, double*, double*);              \
  template void add_information<T>(cudaStream_t, std::size_t, const T*, const T*, T*);           \
  template void flag_nonfinite<T>(cudaStream_t, std::size_t, const T*, int*);                    \
  template void pseudo_inverse_scale<T>(cudaStream_t, std::size_t, const T*, T, T*,              \
                                        unsigned long long*);

RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda::kernels
