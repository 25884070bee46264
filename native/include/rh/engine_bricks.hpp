#pragma once
// The bricks of one batch update (shared/spec/bricks-and-tuner.md), the same table for every
// engine so that profiles compare brick by brick. Only engines built with rh::bricks include this;
// the solver drivers stay unaware of the profiler.

#include <cstddef>

#include "rh/bricks/brick_table.hpp"

namespace rh {

enum class EngineBrick : rh::bricks::BrickId {
  validate,     // input checks: n*p elements
  stage,        // layout, intercept column, host->device: bytes moved
  residual,     // r = y - X~ beta: 2*n*d flops, n*d*size bytes
  huber,        // psi, curvature, loss (fused): n elements
  score,        // X~^T (w psi): 2*n*d flops
  gram,         // X~^T diag(w c) X~: n*d^2 flops
  solve,        // factorization and substitution: d^3/3 flops
  line_search,  // objective along the step: n elements per trial
  prox,         // soft threshold: d elements
  info_update,  // J_b accumulation: n*d^2 flops
  transfer,     // state and diagnostics back to the caller: bytes moved
  predict,      // X beta: 2*n*p flops
  count_,
};

inline constexpr std::size_t engine_brick_count = static_cast<std::size_t>(EngineBrick::count_);

// Room for bricks interned by name on top of the known ones.
inline rh::bricks::BrickTable engine_brick_table(std::size_t capacity = 64) {
  using rh::bricks::Category;
  return rh::bricks::BrickTable({{0, "validate", Category::data},
                                 {1, "stage", Category::data},
                                 {2, "residual", Category::blas2},
                                 {3, "huber", Category::elementwise},
                                 {4, "score", Category::blas2},
                                 {5, "gram", Category::blas3},
                                 {6, "solve", Category::factor},
                                 {7, "line_search", Category::elementwise},
                                 {8, "prox", Category::elementwise},
                                 {9, "info_update", Category::blas3},
                                 {10, "transfer", Category::data},
                                 {11, "predict", Category::blas2}},
                                capacity);
}

}  // namespace rh
