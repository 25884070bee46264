#include "rh/bricks/profiler.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>

#include "rh/bricks/chrome_trace.hpp"
#include "rh/bricks/graph.hpp"
#include "rh/bricks/report.hpp"

namespace rh::bricks {

namespace {

constexpr std::array<std::string_view, 4> kSyncModeNames = {"immediate", "per_batch", "deferred",
                                                            "off"};

// Serials start at 1 so a thread's zero-initialised cache never matches a profiler.
std::atomic<std::uint64_t> next_serial{1};

void clear(detail::BrickCounters& c) noexcept {
  c.count.set(0);
  c.total_ns.set(0);
  c.min_ns.set(std::numeric_limits<std::uint64_t>::max());
  c.max_ns.set(0);
  c.elements.set(0);
  c.bytes.set(0);
  c.flops.set(0);
  c.cycles.set(0);
}

}  // namespace

std::string_view to_string(SyncMode m) noexcept { return kSyncModeNames[static_cast<std::size_t>(m)]; }

SyncMode sync_mode_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kSyncModeNames.size(); ++i) {
    if (kSyncModeNames[i] == name) return static_cast<SyncMode>(i);
  }
  throw std::invalid_argument("unknown sync mode '" + std::string(name) +
                              "'; expected one of immediate, per_batch, deferred, off");
}

Profiler::Profiler(BrickTable table, Options options, std::unique_ptr<ClockSource> clock)
    : serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
      table_(std::move(table)),
      options_(options),
      cpu_(options.tsc),
      epoch_ticks_(cpu_.ticks()),
      clock_(std::move(clock)),
      mode_(options.sync_mode),
      tracing_(options.trace_capacity > 0) {
  batch_clock_.created_ns = detail::steady_now_ns();
  batch_clock_.samples.reserve(1024);
}

Profiler::~Profiler() = default;

detail::ThreadState& Profiler::register_thread() noexcept {
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard lock(mutex_);
  // A thread started after another has ended may get its std::thread::id back, and then its
  // state: memory stays bounded when engines start a thread per task, and no two live threads
  // ever share a state.
  detail::ThreadState* found = nullptr;
  for (const auto& ts : threads_) {
    if (ts->owner == me) found = ts.get();
  }
  if (found) {
    found->os_tid = static_cast<std::int64_t>(::gettid());
  } else {
    auto ts = std::make_unique<detail::ThreadState>();
    ts->counters = std::make_unique<detail::BrickCounters[]>(table_.capacity());
    if (options_.trace_capacity > 0) {
      const std::size_t cap = std::bit_ceil(options_.trace_capacity);
      ts->ring = std::make_unique<Event[]>(cap);
      ts->ring_mask = cap - 1;
    }
    if (clock_) ts->pending.reserve(options_.pending_capacity);
    ts->index = static_cast<std::uint32_t>(threads_.size());
    ts->owner = me;
    ts->os_tid = static_cast<std::int64_t>(::gettid());
    found = ts.get();
    threads_.push_back(std::move(ts));
  }
  detail::tls_cache = detail::TlsCache{serial_, found};
  return *found;
}

void Profiler::stop_async(detail::OpenScope& s) noexcept { stop_async_at(s, clock_->mark()); }

void Profiler::stop_async_at(detail::OpenScope& s, ClockSource::Token stop) noexcept {
  detail::ThreadState& ts = *s.ts;
  --ts.depth;
  if (sync_mode() == SyncMode::immediate) {
    clock_->synchronize();
    const std::int64_t t0 = clock_->resolve_ns(s.start);
    commit(ts, s, t0, clock_->resolve_ns(stop) - t0, 0);
    // An enclosing scope's start mark is still open until the thread is back at depth 0.
    if (ts.depth == 0) clock_->recycle();
  } else {
    if (ts.pending.size() == ts.pending.capacity()) {
      // Full: resolve this thread's marks now rather than grow on the hot path.
      clock_->synchronize();
      resolve_pending(ts);
      forced_flushes_.fetch_add(1, std::memory_order_relaxed);
    }
    ts.pending.push_back(detail::PendingScope{s.start, stop, s.elements, s.bytes, s.flops, s.site,
                                              s.batch, s.iteration, s.brick, s.depth, s.kind,
                                              s.direction});
  }
#if RH_BRICKS_NVTX
  if (options_.nvtx) detail::nvtx_pop();
#endif
}

void Profiler::resolve_pending(detail::ThreadState& ts) {
  for (const detail::PendingScope& p : ts.pending) {
    const detail::OpenScope s{&ts,    p.start,     p.elements, p.bytes, p.flops, p.site,
                              p.batch, p.iteration, p.brick,    p.depth, p.kind,  p.direction};
    const std::int64_t t0 = clock_->resolve_ns(p.start);
    commit(ts, s, t0, clock_->resolve_ns(p.stop) - t0, 0);
  }
  ts.pending.clear();
}

void Profiler::flush_locked() {
  if (!clock_) return;
  const bool any = std::any_of(threads_.begin(), threads_.end(),
                               [](const auto& ts) { return !ts->pending.empty(); });
  if (!any) return;
  clock_->synchronize();
  for (const auto& ts : threads_) resolve_pending(*ts);
  clock_->recycle();
}

void Profiler::flush() {
  std::lock_guard lock(mutex_);
  flush_locked();
}

void Profiler::set_sync_mode(SyncMode mode) {
  std::lock_guard lock(mutex_);
  flush_locked();
  mode_.store(mode, std::memory_order_relaxed);
}

void Profiler::set_tracing(bool on) noexcept {
  tracing_.store(on && options_.trace_capacity > 0, std::memory_order_relaxed);
}

void Profiler::begin_batch(std::uint64_t rows) {
  std::lock_guard lock(mutex_);
  detail::BatchClock& bc = batch_clock_;
  if (bc.in_batch) throw std::logic_error("begin_batch() called twice without end_batch()");
  const std::int64_t now = detail::steady_now_ns();
  if (bc.setup_ns < 0) bc.setup_ns = now - bc.created_ns;
  bc.in_batch = true;
  bc.batch_rows = rows;
  bc.faults_at_start = options_.track_page_faults ? read_page_faults() : PageFaults{};
  batch_.store(static_cast<std::uint32_t>(bc.samples.size()), std::memory_order_relaxed);
  iteration_.store(0, std::memory_order_relaxed);
  // Taken last so the fault read is not part of the batch.
  bc.batch_start_ns = detail::steady_now_ns();
}

void Profiler::set_iteration(std::uint32_t index) noexcept {
  iteration_.store(index, std::memory_order_relaxed);
}

void Profiler::end_batch() {
  const std::int64_t now = detail::steady_now_ns();
  std::lock_guard lock(mutex_);
  detail::BatchClock& bc = batch_clock_;
  if (!bc.in_batch) throw std::logic_error("end_batch() called without a matching begin_batch()");
  // The batch is closed however this ends: a flush that throws (a clock that cannot be read) must
  // not leave it open, or every later begin_batch() would fail.
  struct Close {
    Profiler& p;
    ~Close() {
      p.batch_clock_.in_batch = false;
      p.batch_.store(kNoBatch, std::memory_order_relaxed);
    }
  } close{*this};
  if (sync_mode() == SyncMode::per_batch) flush_locked();
  BatchSample sample;
  sample.duration_ns = now - bc.batch_start_ns;
  sample.rows = bc.batch_rows;
  sample.iterations = iteration_.load(std::memory_order_relaxed) + 1;
  if (options_.track_page_faults) {
    const PageFaults f = read_page_faults();
    sample.faults = {f.minor - bc.faults_at_start.minor, f.major - bc.faults_at_start.major};
  }
  bc.samples.push_back(sample);
}

void Profiler::record_external(const ExternalScope& e) {
  if (!recording()) return;
  {
    std::lock_guard lock(mutex_);
    if (e.brick >= table_.size()) {
      throw std::out_of_range("brick id " + std::to_string(e.brick) + " is not in the table (" +
                              std::to_string(table_.size()) + " bricks)");
    }
  }
  detail::ThreadState& ts = local();
  detail::OpenScope s{};
  s.ts = &ts;
  s.elements = e.elements;
  s.bytes = e.bytes;
  s.flops = e.flops;
  s.site = nullptr;
  s.batch = e.batch != kNoBatch ? e.batch : batch_.load(std::memory_order_relaxed);
  s.iteration = e.iteration >= 0 ? static_cast<std::uint32_t>(e.iteration)
                                 : iteration_.load(std::memory_order_relaxed);
  s.brick = e.brick;
  s.depth = e.depth;
  s.kind = EventKind::brick;
  s.direction = Direction::none;
  commit(ts, s, e.start_steady_ns - batch_clock_.created_ns,
         std::max<std::int64_t>(e.duration_ns, 0), 0);
}

std::int64_t Profiler::now_ns() const noexcept {
  return detail::steady_now_ns() - batch_clock_.created_ns;
}

void Profiler::set_setup_ns(std::int64_t ns) {
  std::lock_guard lock(mutex_);
  batch_clock_.setup_ns = ns;
}

BrickId Profiler::intern(std::string_view name, Category category) {
  std::lock_guard lock(mutex_);
  return table_.intern(name, category);
}

void Profiler::name_thread(std::string_view name) {
  detail::ThreadState& ts = local();
  std::lock_guard lock(mutex_);
  ts.name = name;
}

void Profiler::set_metadata(std::string key, std::string value) {
  std::lock_guard lock(mutex_);
  metadata_[std::move(key)] = std::move(value);
}

void Profiler::reset() {
  std::lock_guard lock(mutex_);
  for (const auto& ts : threads_) {
    for (std::size_t i = 0; i < table_.capacity(); ++i) clear(ts->counters[i]);
    ts->ring_head.store(0, std::memory_order_relaxed);
    ts->pending.clear();
  }
  if (clock_) clock_->recycle();
  batch_clock_.samples.clear();
  batch_clock_.in_batch = false;
  forced_flushes_.store(0, std::memory_order_relaxed);
  batch_.store(kNoBatch, std::memory_order_relaxed);
}

BrickStats Profiler::stats(BrickId id) const {
  std::lock_guard lock(mutex_);
  if (id >= table_.size()) {
    throw std::out_of_range("brick id " + std::to_string(id) + " is not in the table (" +
                            std::to_string(table_.size()) + " bricks)");
  }
  BrickStats s;
  for (const auto& ts : threads_) s.merge(ts->counters[id].snapshot());
  return s;
}

std::vector<Event> Profiler::events() const {
  std::vector<Event> out;
  std::lock_guard lock(mutex_);
  for (const auto& ts : threads_) {
    if (!ts->ring) continue;
    const std::uint64_t head = ts->ring_head.load(std::memory_order_acquire);
    const std::uint64_t n = std::min<std::uint64_t>(head, ts->ring_mask + 1);
    for (std::uint64_t i = head - n; i < head; ++i) out.push_back(ts->ring[i & ts->ring_mask]);
  }
  // By thread and start; at one start, the enclosing scope first (the shallower), and siblings
  // that start together (a phase of zero length) in the order they were recorded.
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.depth < b.depth;
  });
  return out;
}

std::vector<std::pair<std::uint32_t, std::string>> Profiler::thread_names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::uint32_t, std::string>> out;
  for (const auto& ts : threads_) {
    out.emplace_back(ts->index, ts->name.empty()
                                    ? "thread " + std::to_string(ts->index) + " (tid " +
                                          std::to_string(ts->os_tid) + ")"
                                    : ts->name);
  }
  return out;
}

PerfBreakdown Profiler::breakdown() const {
  std::lock_guard lock(mutex_);
  PerfBreakdown b;
  b.setup_ns = std::max<std::int64_t>(batch_clock_.setup_ns, 0);
  b.batches = batch_clock_.samples;
  return b;
}

std::string Profiler::clock_name() const {
  if (clock_) return std::string(clock_->name());
  return cpu_.uses_tsc() ? "tsc" : "steady_clock";
}

Report Profiler::report() {
  std::lock_guard lock(mutex_);
  flush_locked();
  Report r;
  ReportMetadata& m = r.metadata;
  m.clock = clock_name();
  m.sync_mode = to_string(sync_mode());
  m.cycles_available = !clock_ && cpu_.uses_tsc();
  m.tsc_ghz = cpu_.tsc_ghz();
  m.threads = threads_.size();
  m.batches = batch_clock_.samples.size();
  for (const auto& ts : threads_) {
    const std::uint64_t head = ts->ring_head.load(std::memory_order_acquire);
    const std::uint64_t cap = ts->ring ? ts->ring_mask + 1 : 0;
    m.events_recorded += head;
    m.events_dropped += head > cap ? head - cap : 0;
  }
  m.forced_flushes = forced_flushes_.load(std::memory_order_relaxed);
  m.extra = metadata_;
  for (std::size_t c = 0; c < kCategoryCount; ++c) r.categories[c].category = static_cast<Category>(c);
  for (const BrickInfo& info : table_.all()) {
    BrickReport br{info, info.id < table_.known_count(), {}};
    for (const auto& ts : threads_) br.stats.merge(ts->counters[info.id].snapshot());
    r.categories[static_cast<std::size_t>(info.category)].stats.merge(br.stats);
    r.bricks.push_back(std::move(br));
  }
  return r;
}

std::string Profiler::to_json() { return rh::bricks::to_json(report()); }

std::string Profiler::to_chrome_trace() const {
  return rh::bricks::to_chrome_trace(events(), table_, thread_names());
}

ExecutionGraph Profiler::graph() const {
  const std::vector<Event> ev = events();
  std::lock_guard lock(mutex_);
  return build_graph(ev, table_);
}

}  // namespace rh::bricks
