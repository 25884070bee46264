// A run's performance breakdown in the manner of llama.cpp's perf print: setup, the cold first
// batch, steady batches, throughput, iterations per batch, and page faults per batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rh::bricks {

struct PageFaults {
  std::uint64_t minor = 0;
  std::uint64_t major = 0;
};
// This process's fault counters (getrusage: minor and major faults of all its threads); zeros
// where unavailable.
PageFaults read_page_faults() noexcept;

struct BatchSample {
  std::int64_t duration_ns = 0;
  std::uint64_t rows = 0;
  std::uint32_t iterations = 0;
  PageFaults faults;  // during the batch
};

// Filled by the profiler from begin_batch()/end_batch(), or by an engine directly.
struct PerfBreakdown {
  std::int64_t setup_ns = 0;
  std::vector<BatchSample> batches;

  // The first batch is the cold one (caches, page faults, lazy initialization); the rest are steady.
  const BatchSample* first() const noexcept { return batches.empty() ? nullptr : &batches[0]; }
  std::size_t steady_count() const noexcept { return batches.size() > 1 ? batches.size() - 1 : 0; }
  double steady_mean_ns() const noexcept;
  double steady_median_ns() const noexcept;
  double steady_rows_per_s() const noexcept;     // steady rows / steady time
  double iterations_per_batch() const noexcept;  // mean over all batches
  PageFaults total_faults() const noexcept;
};

// Fixed-format text, one quantity per line, e.g.
//   setup            =     12.30 ms
//   first batch      =      4.10 ms /   1000 rows (243902 rows/s, 7 iterations, 120 minor faults)
std::string format_breakdown(const PerfBreakdown& b);

namespace detail {
// The profiler's batch bookkeeping (steady_clock; batches are long enough that its cost is moot).
struct BatchClock {
  std::int64_t created_ns = 0;
  std::int64_t setup_ns = -1;  // -1: not set; taken at the first begin_batch()
  std::int64_t batch_start_ns = 0;
  std::uint64_t batch_rows = 0;
  bool in_batch = false;
  PageFaults faults_at_start;
  std::vector<BatchSample> samples;
};
std::int64_t steady_now_ns() noexcept;
}  // namespace detail

}  // namespace rh::bricks
