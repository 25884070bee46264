#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "thread_pool.hpp"

namespace {

// `callers` threads at once, each making 100 runs of `tasks` tasks on `pool` (each under a Warm
// scope of its own when `warm`): how many tasks of those runs ran other than exactly once.
int misruns_from_callers(rh::cpu::ThreadPool& pool, int callers, std::size_t tasks, bool warm) {
  std::vector<std::thread> threads;
  std::vector<int> failures(callers, 0);
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      const std::optional<rh::cpu::ThreadPool::Warm> scope =
          warm ? std::optional<rh::cpu::ThreadPool::Warm>(std::in_place, pool) : std::nullopt;
      for (int round = 0; round < 100; ++round) {
        std::vector<std::atomic<int>> hits(tasks);
        pool.run(hits.size(), [&](std::size_t i) { hits[i].fetch_add(1); });
        for (const auto& h : hits) failures[c] += h.load() != 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  int total = 0;
  for (int f : failures) total += f;
  return total;
}

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
  EXPECT_EQ(misruns_from_callers(pool, 4, 23, /*warm=*/false), 0);
}

// Under a Warm scope (an engine's update) the workers spin between runs instead of sleeping: every
// task of every run still runs exactly once, whether the next run follows at once or after a
// pause longer than the spin (the worker has gone to sleep and is woken as before), with several
// Warm scopes at once and several callers; and the pool is destroyed while a worker spins.
TEST(ThreadPool, WarmRunsEveryTaskOnceWhetherTheWorkersSpinOrSleep) {
  rh::cpu::ThreadPool pool(3);
  const rh::cpu::ThreadPool::Warm warm(pool);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> hits(round % 7 + 2);
    pool.run(hits.size(), [&](std::size_t i) { hits[i].fetch_add(1); });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
    if (round % 50 == 0) {  // past the spin: the workers sleep and are woken
      std::this_thread::sleep_for(std::chrono::microseconds(pool.spin_us() + 500));
    }
  }
  EXPECT_EQ(misruns_from_callers(pool, 3, 11, /*warm=*/true), 0);
}

TEST(ThreadPool, IsDestroyedWhileAWorkerSpins) {
  for (int k = 0; k < 20; ++k) {
    rh::cpu::ThreadPool pool(2);
    const rh::cpu::ThreadPool::Warm warm(pool);
    std::atomic<int> hits{0};
    pool.run(2, [&](std::size_t) { hits.fetch_add(1); });
    EXPECT_EQ(hits.load(), 2);
  }  // the worker spins for a next run: the destructor stops it and joins
}

#if defined(__linux__)
// The workers start at the first run that hands tasks out, not with the pool: an engine whose
// batches never reach its pool (under 2^17 entries) starts no thread.
TEST(ThreadPool, StartsItsThreadsAtTheFirstRunThatHandsTasksOut) {
  const auto threads = [] {
    const std::filesystem::directory_iterator tasks("/proc/self/task");
    return std::distance(std::filesystem::begin(tasks), std::filesystem::end(tasks));
  };
  const auto before = threads();
  rh::cpu::ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  std::atomic<int> hits{0};
  pool.run(1, [&](std::size_t) { hits.fetch_add(1); });
  EXPECT_EQ(threads(), before);
  pool.run(4, [&](std::size_t) { hits.fetch_add(1); });
  EXPECT_EQ(threads(), before + 2);
  EXPECT_EQ(hits.load(), 5);
}
#endif

}  // namespace
