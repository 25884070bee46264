// Roofline, the cbtop table, the performance breakdown and page faults.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>


#include "rh/bricks/breakdown.hpp"
#include "rh/bricks/roofline.hpp"
#include "rh/bricks/table.hpp"
#include "support.hpp"

namespace rh::bricks {
namespace {

Report report_of(std::vector<std::pair<std::string, BrickStats>> rows) {
  Report r;
  r.metadata.clock = "tsc";
  r.metadata.sync_mode = "immediate";
  BrickId id = 0;
  for (auto& [name, s] : rows) {
    r.bricks.push_back(BrickReport{BrickInfo{id, name, Category::blas3}, true, s});
    r.categories[static_cast<std::size_t>(Category::blas3)].stats.merge(s);
    ++id;
  }
  return r;
}

BrickStats stats(std::uint64_t ns, std::uint64_t bytes, std::uint64_t flops, std::uint64_t elements = 0) {
  BrickStats s;
  s.count = 1;
  s.total_ns = s.min_ns = s.max_ns = ns;
  s.bytes = bytes;
  s.flops = flops;
  s.elements = elements;
  return s;
}

TEST(Roofline, DistanceIsAchievedOverTheAttainableRoof) {
  // Peaks 100 GB/s, 1000 GFLOP/s: the ridge is at 10 flop/byte.
  const Report r = report_of({{"membound", stats(1000, 1000, 2000)},    // AI 2: roof 200, got 2
                              {"compute", stats(1000, 100, 500000)},    // AI 5000: roof 1000, got 500
                              {"bytes_only", stats(1000, 50000, 0)},    // 50 GB/s of 100
                              {"idle", BrickStats{}}});
  const auto pts = roofline(r, MachinePeaks{100.0, 1000.0});
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_DOUBLE_EQ(pts[0].intensity, 2.0);
  EXPECT_DOUBLE_EQ(pts[0].attainable_gflop_per_s, 200.0);
  EXPECT_DOUBLE_EQ(pts[0].achieved_gflop_per_s, 2.0);
  EXPECT_DOUBLE_EQ(pts[0].distance, 0.01);
  EXPECT_EQ(pts[0].bound, Bound::memory);
  EXPECT_DOUBLE_EQ(pts[1].attainable_gflop_per_s, 1000.0);
  EXPECT_DOUBLE_EQ(pts[1].distance, 0.5);
  EXPECT_EQ(pts[1].bound, Bound::compute);
  EXPECT_DOUBLE_EQ(pts[2].distance, 0.5);
  EXPECT_EQ(pts[2].bound, Bound::memory);
  EXPECT_THROW(roofline(r, MachinePeaks{0.0, 1.0}), std::invalid_argument);
}

TEST(Table, RowsAreBusiestFirstWithRates) {
  const Report r = report_of({{"small", stats(1'000, 0, 0, 10)}, {"big", stats(3'000'000, 3'000'000, 6'000'000, 3000)}});
  const std::string t = format_table(r, "bricks");
  const auto big = t.find("big"), small = t.find("small");
  ASSERT_NE(big, std::string::npos);
  ASSERT_NE(small, std::string::npos);
  EXPECT_LT(big, small);
  EXPECT_NE(t.find("3.00ms"), std::string::npos) << t;
  EXPECT_NE(t.find("100.0%"), std::string::npos) << t;  // "big" share rounds to 100.0
  EXPECT_NE(t.find("1.00M/s"), std::string::npos) << t;  // 3000 elements in 3 ms
  EXPECT_NE(t.find("1.00      2.00"), std::string::npos) << t;  // GB/s and GFLOP/s
  EXPECT_NE(t.find("clock tsc, sync immediate"), std::string::npos);
}

TEST(Breakdown, ColdFirstBatchAndSteadyStatistics) {
  PerfBreakdown b;
  b.setup_ns = 12'300'000;
  b.batches = {{9'000'000, 1000, 7, {120, 1}}, {1'000'000, 1000, 3, {0, 0}},
               {3'000'000, 1000, 5, {2, 0}}, {2'000'000, 1000, 5, {0, 0}}};
  EXPECT_EQ(b.steady_count(), 3u);
  EXPECT_DOUBLE_EQ(b.steady_mean_ns(), 2'000'000.0);
  EXPECT_DOUBLE_EQ(b.steady_median_ns(), 2'000'000.0);
  EXPECT_DOUBLE_EQ(b.steady_rows_per_s(), 3000.0 / 6e-3);
  EXPECT_DOUBLE_EQ(b.iterations_per_batch(), 5.0);
  EXPECT_EQ(b.total_faults().minor, 122u);
  const std::string text = format_breakdown(b);
  EXPECT_NE(text.find("setup            =     12.30 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("first batch      =      9.00 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("median     2.000 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("120 minor / 1 major"), std::string::npos) << text;
  b.batches.pop_back();
  EXPECT_DOUBLE_EQ(b.steady_median_ns(), 2'000'000.0);  // even count: mean of the middle two
}

// The kernel's counters as /proc/self/stat prints them (fields 10 and 12, counted after the
// command name's closing parenthesis): an oracle read another way than read_page_faults reads.
PageFaults proc_stat_faults() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 1));
  PageFaults f;
  std::string field;
  for (int i = 3; i <= 12 && rest >> field; ++i) {
    if (i == 10) f.minor = std::stoull(field);
    if (i == 12) f.major = std::stoull(field);
  }
  return f;
}

TEST(PageFaults, MatchTheKernelsCountsAndSeeFreshPagesTouched) {
  const long page = sysconf(_SC_PAGESIZE);
  constexpr std::size_t kPages = 256;
  void* mem = mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  const PageFaults before = read_page_faults();
  for (std::size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(mem)[i * page] = 1;
  const PageFaults after = read_page_faults();
  const PageFaults kernel = proc_stat_faults();
  munmap(mem, kPages * page);
  EXPECT_GE(after.minor - before.minor, kPages);
  // Only faults between the two reads may differ: the file stream's own pages, minor, and where
  // its code is not resident yet (a fresh clone's first run), a few major ones.
  EXPECT_LE(after.minor, kernel.minor);
  EXPECT_NEAR(double(after.minor), double(kernel.minor), 64.0);
  EXPECT_LE(after.major, kernel.major);
  EXPECT_NEAR(double(after.major), double(kernel.major), 16.0);
}

}  // namespace
}  // namespace rh::bricks
