#pragma once
// Brick scopes of the CUDA engine (docs/cuda.md, "Profiling"): the shared table of
// rh/engine_bricks.hpp, timed by the engine's own rh::bricks::Profiler on CUDA events recorded on
// the engine's stream (CudaEventClock), read once per batch or when a report is asked for.
//
//   RH_CUDA_BRICK(prof, gram, elements, bytes, flops);
//
// opens a scope of EngineBrick::gram for the rest of the block, and, when built with NVTX, an
// NVTX range "rh.cuda.gram" in the rh.cuda domain, whether profiling is on or not (a branch
// without an attached tool). With profiling off the scope is one predictable branch.

#include "nvtx.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/engine_bricks.hpp"

#define RH_CUDA_BRICK(prof, brick, elements, bytes, flops) \
  RH_NVTX_RANGE("rh.cuda." #brick);                        \
  RH_BRICK_SCOPE(prof, ::rh::EngineBrick::brick, elements, bytes, flops)
