// The brick profiler: per-thread counters and event rings written without locks or allocation,
// merged when read. Scopes are opened with the macros of scope.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/breakdown.hpp"
#include "rh/bricks/clock.hpp"
#include "rh/bricks/event.hpp"
#include "rh/bricks/stats.hpp"

#ifndef RH_BRICKS_NVTX
#define RH_BRICKS_NVTX 0
#endif

namespace rh::bricks {

class ExecutionGraph;
struct Report;

// When the marks of an asynchronous clock are turned into durations. A synchronous clock (the CPU
// clock) resolves at once in every mode except `off`.
enum class SyncMode : std::uint8_t {
  immediate,  // synchronize the clock after every scope: exact per brick, slowest on a device
  per_batch,  // keep the marks, synchronize once at end_batch()
  deferred,   // keep the marks until flush() (report() flushes); the clock is never forced sooner
              // unless a thread's pending buffer fills
  off,        // record nothing; a scope costs one predictable branch
};
std::string_view to_string(SyncMode m) noexcept;
SyncMode sync_mode_from_string(std::string_view name);

// A scope timed by the caller instead of the profiler (see Profiler::record_external).
struct ExternalScope {
  BrickId brick = 0;
  std::int64_t start_steady_ns = 0;  // std::chrono::steady_clock (CLOCK_MONOTONIC), in ns
  std::int64_t duration_ns = 0;
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
  std::uint64_t flops = 0;
  std::uint32_t batch = kNoBatch;   // kNoBatch: the profiler's current batch
  std::int64_t iteration = -1;      // negative: the profiler's current iteration
  std::uint8_t depth = 0;           // nesting depth, for the trace's args only
};

struct Options {
  SyncMode sync_mode = SyncMode::immediate;
  std::size_t trace_capacity = 0;        // events kept per thread (newest win); 0 disables tracing
  std::size_t pending_capacity = 16384;  // unresolved asynchronous scopes per thread
  bool track_page_faults = true;         // getrusage at begin_batch()/end_batch()
  bool nvtx = false;                     // NVTX ranges too (only when built with RH_BRICKS_NVTX)
  // false: the CPU clock reads steady_clock and the process never pays the TSC's ~5 ms
  // calibration for this profiler (one that is meant never to record, like an engine's off one).
  bool tsc = true;
};

namespace detail {

struct PendingScope {
  ClockSource::Token start, stop;
  std::uint64_t elements, bytes, flops;
  const CallSite* site;
  std::uint32_t batch, iteration;
  BrickId brick;
  std::uint8_t depth;
  EventKind kind;
  Direction direction;
};

// Everything one thread writes. Owned by the profiler, so it outlives the thread and its counters
// still count when the profiler is read after the thread has ended.
struct ThreadState {
  std::unique_ptr<BrickCounters[]> counters;
  std::unique_ptr<Event[]> ring;
  std::uint64_t ring_mask = 0;
  std::atomic<std::uint64_t> ring_head{0};  // events ever written; the ring keeps the newest
  std::vector<PendingScope> pending;         // reserved up front; never grows
  std::uint32_t index = 0;
  std::uint32_t depth = 0;
  std::thread::id owner;
  std::int64_t os_tid = 0;
  std::string name;
  std::uint64_t last_ticks = 0;  // the thread's latest CPU clock reading (Profiler::thread_ticks)
};

// The state of one open scope, kept on the caller's stack by Scope.
struct OpenScope {
  ThreadState* ts;  // nullptr: not recording
  std::uint64_t start;  // CPU ticks, or a ClockSource token
  std::uint64_t elements, bytes, flops;
  const CallSite* site;
  std::uint32_t batch, iteration;
  BrickId brick;
  std::uint8_t depth;
  EventKind kind;
  Direction direction;
};

#if RH_BRICKS_NVTX
void nvtx_push(const char* name) noexcept;
void nvtx_pop() noexcept;
#endif

}  // namespace detail

class Profiler {
 public:
  // `clock` replaces the CPU clock (for CUDA events); null keeps the CPU clock.
  explicit Profiler(BrickTable table, Options options = {},
                    std::unique_ptr<ClockSource> clock = nullptr);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // --- control (any thread) ---
  SyncMode sync_mode() const noexcept { return mode_.load(std::memory_order_relaxed); }
  // Switching away from an asynchronous mode flushes first so no marks are stranded.
  void set_sync_mode(SyncMode mode);
  bool recording() const noexcept { return sync_mode() != SyncMode::off; }
  bool tracing() const noexcept { return tracing_.load(std::memory_order_relaxed); }
  // Only effective when Options::trace_capacity > 0, since rings are sized when a thread starts.
  void set_tracing(bool on) noexcept;

  // --- batches (the driver thread; other recording threads quiescent at end_batch) ---
  void begin_batch(std::uint64_t rows = 0);
  void set_iteration(std::uint32_t index) noexcept;
  void end_batch();
  // Time before the first batch; by default from construction to the first begin_batch().
  void set_setup_ns(std::int64_t ns);

  // --- slow paths ---
  BrickId intern(std::string_view name, Category category);
  void name_thread(std::string_view name);
  // A key/value copied into every report's metadata (engine, shape, git revision, ...).
  void set_metadata(std::string key, std::string value);
  // Resolves pending asynchronous marks (synchronizing the clock once). Idempotent; with the CPU
  // clock there is never anything pending. Recording threads must be quiescent.
  void flush();
  // Clears counters, events, batches; keeps bricks and threads.
  void reset();

  // --- reads (merge over threads) ---
  const BrickTable& bricks() const noexcept { return table_; }
  BrickStats stats(BrickId id) const;
  // Events in the rings, sorted by (thread, start, longest first). Recording threads quiescent.
  std::vector<Event> events() const;
  std::vector<std::pair<std::uint32_t, std::string>> thread_names() const;
  PerfBreakdown breakdown() const;
  Report report();
  std::string to_json();
  std::string to_chrome_trace() const;
  ExecutionGraph graph() const;
  std::string clock_name() const;
  const CpuClock& cpu_clock() const noexcept { return cpu_; }

  // --- externally timed scopes (slow path) ---
  // Counts a scope that the caller timed itself, on the calling thread's counters and trace, as a
  // scope of `s.brick` would have. For code the profiler cannot wrap: the NumPy reference engine
  // times its bricks in Python with time.perf_counter_ns() (CLOCK_MONOTONIC on Linux, the clock of
  // std::chrono::steady_clock), and its events then flow into the same report, trace and graph.
  // The start is moved onto the profiler's timeline by the steady_clock reading taken at
  // construction (within ~100 ns of the TSC epoch). Cycles are not known: 0. Does nothing when
  // the profiler is off; throws std::out_of_range for a brick outside the table.
  void record_external(const ExternalScope& s);
  // Now on the profiler's timeline (ns since construction), from steady_clock.
  std::int64_t now_ns() const noexcept;

  // --- hot path (used by Scope) ---
  void start(detail::OpenScope& s, BrickId brick, const CallSite* site, std::uint64_t elements,
             std::uint64_t bytes, std::uint64_t flops, EventKind kind = EventKind::brick,
             Direction direction = Direction::none) noexcept;
  void stop(detail::OpenScope& s) noexcept;
  // Stops the open scope `s` and reopens it for `brick` at the same clock reading, so a run of
  // back-to-back phases reads the clock once per boundary (used by Phases).
  void chain(detail::OpenScope& s, BrickId brick, const CallSite* site, std::uint64_t elements,
             std::uint64_t bytes, std::uint64_t flops) noexcept;

 private:
  detail::ThreadState& local() noexcept;
  // noexcept because scopes cannot report failure: running out of memory while a thread's
  // buffers are first made terminates.
  detail::ThreadState& register_thread() noexcept;
  void commit(detail::ThreadState& ts, const detail::OpenScope& s, std::int64_t start_ns,
              std::int64_t duration_ns, std::uint64_t cycles) noexcept;
  void resolve_pending(detail::ThreadState& ts);
  void flush_locked();
  void stop_async(detail::OpenScope& s) noexcept;
  // The end of a scope at a CPU reading already taken.
  void stop_cpu_at(detail::OpenScope& s, std::uint64_t now) noexcept;
  // The CPU clock read for a thread, never behind that thread's previous reading nor the epoch:
  // where the cores' time-stamp counters disagree (seen on a KVM guest), a thread moved between
  // cores would otherwise see time run backwards, and its events end before they start.
  std::uint64_t thread_ticks(detail::ThreadState& ts) const noexcept;
  // The asynchronous end of a scope at a mark already taken.
  void stop_async_at(detail::OpenScope& s, ClockSource::Token stop) noexcept;
  // What a scope records besides its times: the counts, the call site, the current batch and
  // iteration (start and reopen).
  void describe(detail::OpenScope& s, BrickId brick, const CallSite* site,
                std::uint64_t elements, std::uint64_t bytes, std::uint64_t flops) const noexcept;
  // Refills `s` for the next phase at the same depth, started at `start`.
  void reopen(detail::OpenScope& s, BrickId brick, const CallSite* site, std::uint64_t elements,
              std::uint64_t bytes, std::uint64_t flops, std::uint64_t start) noexcept;

  const std::uint64_t serial_;  // identifies this profiler in the per-thread cache
  BrickTable table_;
  const Options options_;
  CpuClock cpu_;
  const std::uint64_t epoch_ticks_;
  std::unique_ptr<ClockSource> clock_;  // null: the CPU clock
  std::atomic<SyncMode> mode_;
  std::atomic<bool> tracing_;
  std::atomic<std::uint32_t> batch_{kNoBatch};
  std::atomic<std::uint32_t> iteration_{0};

  mutable std::mutex mutex_;  // guards threads_, the table's interned part, batches and metadata
  std::vector<std::unique_ptr<detail::ThreadState>> threads_;
  std::atomic<std::uint64_t> forced_flushes_{0};
  std::map<std::string, std::string> metadata_;
  detail::BatchClock batch_clock_;
};

// ---------------------------------------------------------------------------------------------
// Hot path, inline so a scope compiles to a TLS check, two clock reads and counter stores.

namespace detail {
struct TlsCache {
  std::uint64_t serial = 0;
  ThreadState* state = nullptr;
};
inline thread_local TlsCache tls_cache;
}  // namespace detail

inline detail::ThreadState& Profiler::local() noexcept {
  detail::TlsCache& c = detail::tls_cache;
  if (c.serial == serial_) [[likely]] return *c.state;
  return register_thread();
}

inline void Profiler::describe(detail::OpenScope& s, BrickId brick, const CallSite* site,
                               std::uint64_t elements, std::uint64_t bytes,
                               std::uint64_t flops) const noexcept {
  s.elements = elements;
  s.bytes = bytes;
  s.flops = flops;
  s.site = site;
  s.batch = batch_.load(std::memory_order_relaxed);
  s.iteration = iteration_.load(std::memory_order_relaxed);
  s.brick = brick;
}

inline void Profiler::start(detail::OpenScope& s, BrickId brick, const CallSite* site,
                            std::uint64_t elements, std::uint64_t bytes, std::uint64_t flops,
                            EventKind kind, Direction direction) noexcept {
  // Ids come from the caller's enum or intern(); one past the table is a caller bug.
  assert(kind == EventKind::kernel || brick < table_.capacity());
  detail::ThreadState& ts = local();
  s.ts = &ts;
  describe(s, brick, site, elements, bytes, flops);
  // Events store depth in a byte; deeper nesting than 255 saturates rather than wraps.
  s.depth = static_cast<std::uint8_t>(ts.depth < 255 ? ts.depth : 255);
  ++ts.depth;
  s.kind = kind;
  s.direction = direction;
#if RH_BRICKS_NVTX
  if (options_.nvtx) {
    detail::nvtx_push(kind == EventKind::kernel ? (site && site->label ? site->label : "kernel")
                                                : table_[brick].name.c_str());
  }
#endif
  s.start = clock_ ? clock_->mark() : thread_ticks(ts);
}

inline std::uint64_t Profiler::thread_ticks(detail::ThreadState& ts) const noexcept {
  const std::uint64_t now = std::max({cpu_.ticks(), ts.last_ticks, epoch_ticks_});
  ts.last_ticks = now;
  return now;
}

inline void Profiler::stop(detail::OpenScope& s) noexcept {
  if (clock_) return stop_async(s);
  stop_cpu_at(s, thread_ticks(*s.ts));  // pops the NVTX range too
}

inline void Profiler::stop_cpu_at(detail::OpenScope& s, std::uint64_t now) noexcept {
  detail::ThreadState& ts = *s.ts;
  --ts.depth;
  // Both ends converted from the timeline, not start + converted duration: a phase chained at
  // `now` then starts exactly where this one ends, whatever the rounding.
  const std::int64_t start_ns = cpu_.to_ns(s.start - epoch_ticks_);
  const std::int64_t end_ns = cpu_.to_ns(now - epoch_ticks_);
  commit(ts, s, start_ns, end_ns - start_ns, cpu_.to_cycles(now - s.start));
#if RH_BRICKS_NVTX
  if (options_.nvtx) detail::nvtx_pop();
#endif
}

inline void Profiler::reopen(detail::OpenScope& s, BrickId brick, const CallSite* site,
                             std::uint64_t elements, std::uint64_t bytes, std::uint64_t flops,
                             std::uint64_t start) noexcept {
  assert(brick < table_.capacity());
  ++s.ts->depth;  // the previous phase's stop took it back to this phase's depth
  describe(s, brick, site, elements, bytes, flops);
#if RH_BRICKS_NVTX
  if (options_.nvtx) detail::nvtx_push(table_[brick].name.c_str());
#endif
  s.start = start;
}

inline void Profiler::chain(detail::OpenScope& s, BrickId brick, const CallSite* site,
                            std::uint64_t elements, std::uint64_t bytes,
                            std::uint64_t flops) noexcept {
  if (clock_) {
    const ClockSource::Token at = clock_->mark();
    // The next phase holds `at`: one level more keeps an immediate stop at depth 0 from letting
    // the clock recycle it.
    ++s.ts->depth;
    stop_async_at(s, at);
    --s.ts->depth;
    reopen(s, brick, site, elements, bytes, flops, at);
    return;
  }
  const std::uint64_t now = thread_ticks(*s.ts);
  stop_cpu_at(s, now);
  reopen(s, brick, site, elements, bytes, flops, now);
}

inline void Profiler::commit(detail::ThreadState& ts, const detail::OpenScope& s,
                             std::int64_t start_ns, std::int64_t duration_ns,
                             std::uint64_t cycles) noexcept {
  // Kernels are parts of a brick already counted by the brick; they live only in the trace.
  if (s.kind != EventKind::kernel) {
    ts.counters[s.brick].record(static_cast<std::uint64_t>(duration_ns), cycles, s.elements,
                                s.bytes, s.flops);
  }
  if (ts.ring && tracing()) {
    const std::uint64_t head = ts.ring_head.load(std::memory_order_relaxed);
    ts.ring[head & ts.ring_mask] = Event{start_ns,  duration_ns, s.elements,  s.bytes,
                                         s.flops,   s.site,      s.batch,     s.iteration,
                                         ts.index,  s.brick,     s.depth,     s.kind,
                                         s.direction};
    ts.ring_head.store(head + 1, std::memory_order_release);
  }
}

}  // namespace rh::bricks
