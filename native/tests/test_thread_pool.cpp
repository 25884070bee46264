#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "thread_pool.hpp"

namespace {

TEST(ThreadPool, RunsEveryTaskOnceAndReturnsAfterAll) {
  rh::cpu::ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4u);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(37);
    pool.run(hits.size(), [&](std::size_t i) { hits[i].fetch_add(1); });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, SingleThreadRunsInline) {
  rh::cpu::ThreadPool pool(1);
  std::vector<int> order;
  pool.run(3, [&](std::size_t i) { order.push_back(static_cast<int>(i)); });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

}  // namespace
