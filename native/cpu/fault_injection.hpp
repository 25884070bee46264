#pragma once
// Test hooks that inject the faults the engine must survive (docs/reliability.md): allocation
// failure in the workspaces, and failing rungs of the linear-solver ladder. Both are disarmed
// unless a test arms them (the Python module's _fail_allocations / _fail_rung); disarmed, a hook
// is one relaxed atomic load at a point that is about to allocate or factor a d x d matrix,
// never inside a per-row loop.

#include <atomic>
#include <cstdint>

#include "rh/diagnostics.hpp"

namespace rh::cpu::fault {

// The next `after` allocation points pass, then `count` throw std::bad_alloc.
void fail_allocations(std::int64_t after, std::int64_t count);
// The next `count` attempts of `rung` (cholesky, lu or svd) fail as if LAPACK had: the
// factorization is reported singular (cholesky, lu), the SVD not to converge (svd).
void fail_rung(Solver rung, std::int64_t count);
// Disarms every hook; returns how many injected faults were still pending.
std::int64_t clear();

namespace detail {
extern std::atomic<bool> armed;  // any hook armed: the one load on the normal path
void allocation_point_armed();
bool rung_fails_armed(Solver rung);
}  // namespace detail

// Called where the engine is about to allocate: throws std::bad_alloc when armed to.
inline void allocation_point() {
  if (detail::armed.load(std::memory_order_relaxed)) detail::allocation_point_armed();
}

// Whether this attempt of `rung` is to fail.
inline bool rung_fails(Solver rung) {
  return detail::armed.load(std::memory_order_relaxed) && detail::rung_fails_armed(rung);
}

}  // namespace rh::cpu::fault
