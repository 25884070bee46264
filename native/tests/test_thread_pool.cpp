#include <gtest/gtest.h>

#include <atomic>
#include <thread>
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

TEST(ThreadPool, SharedPoolIsOnePerThreadCount) {
  const auto two = rh::cpu::shared_pool(2);
  EXPECT_EQ(two, rh::cpu::shared_pool(2));  // a later engine reuses the started threads
  EXPECT_EQ(two->size(), 2u);
  EXPECT_NE(two, rh::cpu::shared_pool(3));
  EXPECT_EQ(rh::cpu::shared_pool(3)->size(), 3u);
}

// Callers running on one pool at once: one gets the workers, the others run their tasks on their
// own threads; every task of every run runs exactly once, and run() returns after its own.
TEST(ThreadPool, ConcurrentRunsFromSeveralThreadsEachRunEveryTaskOnce) {
  rh::cpu::ThreadPool pool(3);
  constexpr int kCallers = 4;
  std::vector<std::thread> callers;
  std::vector<int> failures(kCallers, 0);
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 100; ++round) {
        std::vector<std::atomic<int>> hits(23);
        pool.run(hits.size(), [&](std::size_t i) { hits[i].fetch_add(1); });
        for (const auto& h : hits) failures[c] += h.load() != 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
