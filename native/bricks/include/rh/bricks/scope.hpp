// RAII scopes and the one-line macros that open them, in the manner of NVTX3 and Tracy:
//
//   void gram(...) {
//     RH_BRICK_SCOPE(profiler, Brick::gram, n, n * d * sizeof(double), n * d * d);
//     ...
//   }
//
// Each macro declares a static per-call-site CallSite (file, line, function) and a Scope. With
// RH_BRICKS_ENABLED=0 every macro compiles to nothing and its arguments are not evaluated; at run
// time SyncMode::off makes a scope one predictable branch.
#pragma once

#include <source_location>
#include <string_view>

#include "rh/bricks/profiler.hpp"

#ifndef RH_BRICKS_ENABLED
#define RH_BRICKS_ENABLED 1
#endif

namespace rh::bricks {

class Scope {
 public:
  Scope(Profiler& p, BrickId brick, const CallSite* site, std::uint64_t elements = 0,
        std::uint64_t bytes = 0, std::uint64_t flops = 0) noexcept
      : p_(p) {
    s_.ts = nullptr;
    if (p.recording()) [[likely]] p.start(s_, brick, site, elements, bytes, flops);
  }
  // A transfer of `bytes` in `direction`, counted for `brick`.
  Scope(Profiler& p, BrickId brick, Direction direction, std::uint64_t bytes,
        const CallSite* site) noexcept
      : p_(p) {
    s_.ts = nullptr;
    if (p.recording()) [[likely]] p.start(s_, brick, site, 0, bytes, 0, EventKind::transfer, direction);
  }
  // A kernel named by site->label, inside the current brick. Traced only: the enclosing brick
  // already counts its time.
  Scope(Profiler& p, const CallSite* site) noexcept : p_(p) {
    s_.ts = nullptr;
    if (p.recording() && p.tracing()) p.start(s_, kNoBrick, site, 0, 0, 0, EventKind::kernel);
  }
  // The slow path for bricks outside the known table: a locked string lookup per scope.
  Scope(Profiler& p, std::string_view name, Category category, const CallSite* site,
        std::uint64_t elements = 0, std::uint64_t bytes = 0, std::uint64_t flops = 0)
      : p_(p) {
    s_.ts = nullptr;
    if (p.recording()) p.start(s_, p.intern(name, category), site, elements, bytes, flops);
  }
  ~Scope() {
    if (s_.ts) p_.stop(s_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Profiler& p_;
  detail::OpenScope s_;
};

// Back-to-back phases of one stretch of work, in the manner of a lap timer: next() ends the open
// phase and opens the following one at the same clock reading, so a run of k phases reads the
// clock k + 1 times instead of 2k. Each phase is recorded, counted and traced exactly like a
// scope of its brick (phases are siblings; scopes may nest inside a phase). The profiler's state
// is read at the first phase: turning it off mid-run takes effect at the next run.
class Phases {
 public:
  explicit Phases(Profiler& p) noexcept : p_(p) { s_.ts = nullptr; }
  ~Phases() { end(); }
  Phases(const Phases&) = delete;
  Phases& operator=(const Phases&) = delete;

  void next(BrickId brick, const CallSite* site, std::uint64_t elements = 0,
            std::uint64_t bytes = 0, std::uint64_t flops = 0) noexcept {
    if (s_.ts) {
      p_.chain(s_, brick, site, elements, bytes, flops);
    } else if (p_.recording()) [[likely]] {
      p_.start(s_, brick, site, elements, bytes, flops);
    }
  }
  // Ends the open phase (the destructor does too).
  void end() noexcept {
    if (s_.ts) p_.stop(s_);
    s_.ts = nullptr;
  }

 private:
  Profiler& p_;
  detail::OpenScope s_;
};

}  // namespace rh::bricks

#define RH_BRICKS_CONCAT_(a, b) a##b
#define RH_BRICKS_CONCAT(a, b) RH_BRICKS_CONCAT_(a, b)

#if RH_BRICKS_ENABLED

#define RH_BRICKS_SITE_(n, label)                                                 \
  static constexpr ::rh::bricks::CallSite RH_BRICKS_CONCAT(rh_bricks_site_, n) { \
    std::source_location::current(), label                                       \
  }
#define RH_BRICK_SCOPE_(n, prof, brick, elements, bytes, flops)                                \
  RH_BRICKS_SITE_(n, nullptr);                                                                 \
  ::rh::bricks::Scope RH_BRICKS_CONCAT(rh_bricks_scope_, n) {                                  \
    (prof), static_cast<::rh::bricks::BrickId>(brick), &RH_BRICKS_CONCAT(rh_bricks_site_, n),  \
        static_cast<std::uint64_t>(elements), static_cast<std::uint64_t>(bytes),               \
        static_cast<std::uint64_t>(flops)                                                      \
  }
#define RH_BRICK_TRANSFER_(n, prof, brick, direction, bytes)                                    \
  RH_BRICKS_SITE_(n, nullptr);                                                                  \
  ::rh::bricks::Scope RH_BRICKS_CONCAT(rh_bricks_scope_, n) {                                   \
    (prof), static_cast<::rh::bricks::BrickId>(brick), (direction),                             \
        static_cast<std::uint64_t>(bytes), &RH_BRICKS_CONCAT(rh_bricks_site_, n)                \
  }
#define RH_BRICK_KERNEL_(n, prof, name)                                                         \
  RH_BRICKS_SITE_(n, name);                                                                     \
  ::rh::bricks::Scope RH_BRICKS_CONCAT(rh_bricks_scope_, n) {                                   \
    (prof), &RH_BRICKS_CONCAT(rh_bricks_site_, n)                                               \
  }
#define RH_BRICK_SCOPE_NAMED_(n, prof, name, category, elements, bytes, flops)                  \
  RH_BRICKS_SITE_(n, nullptr);                                                                  \
  ::rh::bricks::Scope RH_BRICKS_CONCAT(rh_bricks_scope_, n) {                                   \
    (prof), (name), (category), &RH_BRICKS_CONCAT(rh_bricks_site_, n),                          \
        static_cast<std::uint64_t>(elements), static_cast<std::uint64_t>(bytes),                \
        static_cast<std::uint64_t>(flops)                                                       \
  }

// A known brick: profiler, brick id (an enum or integer), elements, bytes moved, flops.
#define RH_BRICK_SCOPE(prof, brick, elements, bytes, flops) \
  RH_BRICK_SCOPE_(__COUNTER__, prof, brick, elements, bytes, flops)
// A transfer counted for `brick`: direction is rh::bricks::Direction::h2d, d2h or d2d.
#define RH_BRICK_TRANSFER(prof, brick, direction, bytes) \
  RH_BRICK_TRANSFER_(__COUNTER__, prof, brick, direction, bytes)
// A kernel launched inside the enclosing brick; `name` must be a string literal.
#define RH_BRICK_KERNEL(prof, name) RH_BRICK_KERNEL_(__COUNTER__, prof, name)
// A brick outside the known table, found by name (slow path).
#define RH_BRICK_SCOPE_NAMED(prof, name, category, elements, bytes, flops) \
  RH_BRICK_SCOPE_NAMED_(__COUNTER__, prof, name, category, elements, bytes, flops)
// A run of back-to-back phases named `phases` (rh::bricks::Phases), and its next phase.
#define RH_BRICK_PHASES(phases, prof) ::rh::bricks::Phases phases(prof)
#define RH_BRICK_NEXT_PHASE_(n, phases, brick, elements, bytes, flops)                         \
  do {                                                                                         \
    RH_BRICKS_SITE_(n, nullptr);                                                               \
    (phases).next(static_cast<::rh::bricks::BrickId>(brick),                                   \
                  &RH_BRICKS_CONCAT(rh_bricks_site_, n), static_cast<std::uint64_t>(elements), \
                  static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(flops));       \
  } while (false)
#define RH_BRICK_NEXT_PHASE(phases, brick, elements, bytes, flops) \
  RH_BRICK_NEXT_PHASE_(__COUNTER__, phases, brick, elements, bytes, flops)
#define RH_BRICK_END_PHASES(phases) (phases).end()

#else

// The arguments sit in an unevaluated sizeof: nothing runs, yet variables that only feed the
// macros do not become "unused" (and fail -Werror builds) when profiling is compiled out.
#define RH_BRICKS_DISCARD_(...) static_cast<void>(sizeof((__VA_ARGS__, 0)))
#define RH_BRICK_SCOPE(prof, brick, elements, bytes, flops) \
  RH_BRICKS_DISCARD_((void)(prof), (void)(brick), (void)(elements), (void)(bytes), (void)(flops))
#define RH_BRICK_TRANSFER(prof, brick, direction, bytes) \
  RH_BRICKS_DISCARD_((void)(prof), (void)(brick), (void)(direction), (void)(bytes))
#define RH_BRICK_KERNEL(prof, name) RH_BRICKS_DISCARD_((void)(prof), (void)(name))
#define RH_BRICK_SCOPE_NAMED(prof, name, category, elements, bytes, flops)                   \
  RH_BRICKS_DISCARD_((void)(prof), (void)(name), (void)(category), (void)(elements), \
                     (void)(bytes), (void)(flops))
#define RH_BRICK_PHASES(phases, prof) RH_BRICKS_DISCARD_((void)(prof))
#define RH_BRICK_NEXT_PHASE(phases, brick, elements, bytes, flops) \
  RH_BRICKS_DISCARD_((void)(brick), (void)(elements), (void)(bytes), (void)(flops))
#define RH_BRICK_END_PHASES(phases) static_cast<void>(0)

#endif
