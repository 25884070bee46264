// The CPU engine's test hooks (native/cpu/fault_injection.hpp, tests/test_reliability_faults.py),
// bound as private functions of _rhuber_native_cpu; disarmed unless called.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "fault_injection.hpp"  // native/cpu
#include "rh/diagnostics.hpp"
#include "rh/error.hpp"

namespace rh::python {

using namespace nb::literals;

void bind_fault_hooks(nb::module_& m) {
  namespace fault = rh::cpu::fault;
  m.def("_fail_allocations", &fault::fail_allocations, "after"_a, "count"_a = 1,
        "Test hook: the next `after` workspace allocations pass, then `count` raise MemoryError.");
  m.def(
      "_fail_rung",
      [](const std::string& rung, std::int64_t count) {
        if (rung == "cholesky") return fault::fail_rung(rh::Solver::cholesky, count);
        if (rung == "lu") return fault::fail_rung(rh::Solver::lu, count);
        if (rung == "svd") return fault::fail_rung(rh::Solver::svd, count);
        throw rh::InvalidArgument("rung must be 'cholesky', 'lu' or 'svd', got '" + rung + "'");
      },
      "rung"_a, "count"_a = 1, "Test hook: the next `count` attempts of a ladder rung fail.");
  m.def("_clear_faults", &fault::clear,
        "Disarm the test hooks; returns how many injected faults were still pending.");
}

}  // namespace rh::python
