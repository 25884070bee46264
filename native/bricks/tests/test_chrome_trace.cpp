#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <thread>

#include "json_mini.hpp"
#include "rh/bricks/chrome_trace.hpp"
#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace rh::bricks {
namespace {

using testing::B;
using testing::Json;

// Microseconds with three decimals are exact ns; compare in ns to avoid float rounding.
std::int64_t ns(const Json& j) { return std::llround(j.num() * 1000.0); }

void nested_work(Profiler& p, int depth) {
  RH_BRICK_SCOPE(p, depth % 2 ? B::gemv : B::gemm, 1, 1, 1);
  if (depth < 3) {
    nested_work(p, depth + 1);
    nested_work(p, depth + 1);
  }
}

TEST(ChromeTrace, CompleteEventsNestStrictlyPerThread) {
  Options o;
  o.trace_capacity = 1024;
  Profiler p(testing::test_table(), o);
  p.name_thread("driver");
  p.begin_batch(1);
  nested_work(p, 0);
  std::thread worker([&p] {
    for (int i = 0; i < 3; ++i) nested_work(p, 1);
  });
  worker.join();
  p.end_batch();

  const Json doc = testing::parse_json(p.to_chrome_trace());
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
  std::map<std::int64_t, std::string> names;
  bool process_named = false;
  for (const Json& e : doc["traceEvents"].arr()) {
    const std::string ph = e["ph"].str();
    if (ph == "M") {
      if (e["name"].str() == "process_name") process_named = true;
      if (e["name"].str() == "thread_name") names[std::llround(e["tid"].num())] = e["args"]["name"].str();
      continue;
    }
    ASSERT_EQ(ph, "X");
    EXPECT_TRUE(e.has("cat"));
    EXPECT_TRUE(e["args"].has("file"));
    spans[std::llround(e["tid"].num())].emplace_back(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]));
  }
  EXPECT_TRUE(process_named);
  EXPECT_EQ(names.at(0), "driver");
  EXPECT_NE(names.at(1).find("thread 1"), std::string::npos);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].size(), 15u);
  EXPECT_EQ(spans[1].size(), 21u);
  // Any two spans of a thread are disjoint or one contains the other.
  for (const auto& [tid, list] : spans) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (std::size_t j = i + 1; j < list.size(); ++j) {
        const auto [a0, a1] = list[i];
        const auto [b0, b1] = list[j];
        const bool disjoint = a1 <= b0 || b1 <= a0;
        const bool nested = (a0 <= b0 && b1 <= a1) || (b0 <= a0 && a1 <= b1);
        EXPECT_TRUE(disjoint || nested) << "thread " << tid << ": [" << a0 << "," << a1 << ") vs [" << b0 << "," << b1 << ")";
      }
    }
  }
}

TEST(ChromeTrace, TimestampsAreExactMicroseconds) {
  BrickTable t = testing::test_table();
  std::vector<Event> ev(2);
  ev[0] = Event{1'234'567, 1'000'001, 0, 0, 0, nullptr, kNoBatch, 0, 0, 3, 0, EventKind::brick, Direction::none};
  ev[1] = Event{1'234'568, 999'999, 0, 0, 0, nullptr, 0, 1, 0, 4, 1, EventKind::brick, Direction::none};
  const std::string text = to_chrome_trace(ev, t, {{0, "main"}});
  EXPECT_NE(text.find("\"ts\":1234.567,\"dur\":1000.001"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":1234.568,\"dur\":999.999"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\":\"gemm\",\"cat\":\"blas3\""), std::string::npos);
}

}  // namespace
}  // namespace rh::bricks
