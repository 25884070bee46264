#include "fault_injection.hpp"

#include <mutex>
#include <new>

namespace rh::cpu::fault {
namespace {

// Armed hooks take this mutex: tests are not a hot path, and it keeps the counters simple.
std::mutex counters_mutex;
std::int64_t allocations_to_pass = 0;
std::int64_t allocations_to_fail = 0;
std::int64_t rung_failures[3] = {0, 0, 0};  // cholesky, lu, svd

std::int64_t* rung_slot(Solver rung) {
  switch (rung) {
    case Solver::cholesky: return &rung_failures[0];
    case Solver::lu: return &rung_failures[1];
    case Solver::svd: return &rung_failures[2];
    default: return nullptr;
  }
}

void rearm() {  // with counters_mutex held
  const bool any = allocations_to_fail > 0 || rung_failures[0] > 0 || rung_failures[1] > 0 ||
                   rung_failures[2] > 0;
  detail::armed.store(any, std::memory_order_relaxed);
}

}  // namespace

namespace detail {

std::atomic<bool> armed{false};

void allocation_point_armed() {
  {
    std::lock_guard lock(counters_mutex);
    if (allocations_to_fail == 0) return;
    if (allocations_to_pass > 0) {
      --allocations_to_pass;
      return;
    }
    --allocations_to_fail;
    rearm();
  }
  throw std::bad_alloc();
}

bool rung_fails_armed(Solver rung) {
  std::lock_guard lock(counters_mutex);
  std::int64_t* slot = rung_slot(rung);
  if (slot == nullptr || *slot == 0) return false;
  --*slot;
  rearm();
  return true;
}

}  // namespace detail

void fail_allocations(std::int64_t after, std::int64_t count) {
  std::lock_guard lock(counters_mutex);
  allocations_to_pass = after > 0 ? after : 0;
  allocations_to_fail = count > 0 ? count : 0;
  rearm();
}

void fail_rung(Solver rung, std::int64_t count) {
  std::lock_guard lock(counters_mutex);
  if (std::int64_t* slot = rung_slot(rung)) *slot = count > 0 ? count : 0;
  rearm();
}

std::int64_t clear() {
  std::lock_guard lock(counters_mutex);
  const std::int64_t pending =
      allocations_to_fail + rung_failures[0] + rung_failures[1] + rung_failures[2];
  allocations_to_pass = allocations_to_fail = 0;
  rung_failures[0] = rung_failures[1] = rung_failures[2] = 0;
  rearm();
  return pending;
}

}  // namespace rh::cpu::fault
