#pragma once
// What the engine's kernel files share: the fixed launch shapes and the block reductions in a
// fixed tree order, so every reduction sums the same values in the same order on every run.

#include <algorithm>
#include <cstddef>

#include "workspace.hpp"

namespace rh::cuda::kernels {

inline constexpr int threads = reduction_threads;
inline constexpr std::size_t max_elementwise_blocks = 4096;

inline unsigned elementwise_blocks(std::size_t count) {
  const std::size_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, max_elementwise_blocks));
}

inline __device__ std::size_t global_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

inline __device__ std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// Sum (or maximum) over the block in a fixed tree order; every thread gets the result. The
// trailing barrier lets a caller reduce again with the same shared array.
template <bool Max>
__device__ double block_reduce(double value) {
  __shared__ double shared[threads];
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = threads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      const double other = shared[threadIdx.x + half];
      shared[threadIdx.x] = Max ? fmax(shared[threadIdx.x], other) : shared[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const double result = shared[0];
  __syncthreads();
  return result;
}

inline __device__ double block_sum(double value) { return block_reduce<false>(value); }
inline __device__ double block_max(double value) { return block_reduce<true>(value); }

}  // namespace rh::cuda::kernels
