// rh_cpu.h: the engine's test hooks (native/cpu/fault_injection.hpp,
// tests/test_reliability_faults.py); disarmed unless called.

#include "capi.hpp"
#include "fault_injection.hpp"  // native/cpu
#include "rh/diagnostics.hpp"

extern "C" {

namespace fault = rh::cpu::fault;

int rh_cpu_fault_fail_allocations(int64_t after, int64_t count) {
  return rh::capi::guarded([&] { fault::fail_allocations(after, count); });
}

int rh_cpu_fault_fail_rung(int32_t rung, int64_t count) {
  return rh::capi::guarded([&] {
    switch (rung) {
      case RH_CPU_SOLVER_CHOLESKY:
        return fault::fail_rung(rh::Solver::cholesky, count);
      case RH_CPU_SOLVER_LU:
        return fault::fail_rung(rh::Solver::lu, count);
      case RH_CPU_SOLVER_SVD:
        return fault::fail_rung(rh::Solver::svd, count);
      default:
        rh::fail("rung must be RH_CPU_SOLVER_CHOLESKY, _LU or _SVD, got ", rung);
    }
  });
}

int rh_cpu_fault_clear(int64_t* pending) {
  return rh::capi::guarded([&] {
    const int64_t left = fault::clear();
    if (pending) *pending = left;
  });
}

}  // extern "C"
