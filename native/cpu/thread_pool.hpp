#pragma once
// A fixed set of worker threads, started by the first run() that hands tasks out. run() hands out
// task indices from a shared counter; the caller's thread works too and returns when every task
// has finished.
//
// Between runs a worker sleeps on a condition variable, and waking it costs a futex wake-up
// (~50 µs on a KVM guest: the idle vCPU is halted), so a short run took longer on two threads
// than its tasks took in turn on one. While a caller holds a Warm scope (an engine's update: a
// batch's tens of runs with short serial stretches between them), a worker spins for the next run
// and the caller for the workers' last tasks, each up to spin_us (RH_POOL_SPIN_US, default 200;
// 0: never) before sleeping as before. Outside Warm scopes nothing spins: a process's other
// threads (NumPy's OpenBLAS servers, which spin after the user's own products) keep the cores
// between batches.
//
// Which thread runs a task is left to timing, so tasks must write only their own output slots:
// the caller combines the slots in index order, which keeps results independent of timing and of
// the thread count.
//
// Engines share one pool per thread count for the whole process (shared_pool): a fresh engine
// (a fresh estimator) then starts no thread, and engines running side by side never put more
// threads on the cores than the pool has plus their callers. A run() that finds the pool busy
// with another caller's run does its tasks on its own thread, in index order: the same tasks
// and slots, so the same results.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rh::cpu {

class ThreadPool {
 public:
  // threads counts the caller's thread: 1 means no workers.
  explicit ThreadPool(std::size_t threads);
  ~ThreadPool() = default;  // each jthread stops (waking its wait) and joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t size() const { return threads_; }

  // While one lives, the pool's workers spin between runs (up to spin_us) instead of sleeping.
  class Warm {
   public:
    explicit Warm(ThreadPool& pool) : pool_(pool) { pool_.warm_.fetch_add(1); }
    ~Warm() { pool_.warm_.fetch_sub(1); }
    Warm(const Warm&) = delete;
    Warm& operator=(const Warm&) = delete;

   private:
    ThreadPool& pool_;
  };

  // How long a worker or the caller spins before sleeping, in microseconds (0: never).
  std::size_t spin_us() const { return spin_us_; }

  // Runs task(0) ... task(count - 1); a task must not throw. Safe to call from several threads
  // at once (one run uses the workers at a time; the others run on their callers).
  void run(std::size_t count, const std::function<void(std::size_t)>& task);

 private:
  void work(std::stop_token stop);
  void drain();
  // Starts the workers: at the first run() that hands tasks out, not with the pool, so that an
  // engine whose batches never reach the pool (under 2^17 entries, BatchOps) starts no thread.
  void start_workers();
  // Spins (pause, a clock check and a yield every 64) until done() or spin_us_ has passed, or
  // until keep_on() turns false; whether done() was seen.
  template <class Done, class KeepOn>
  bool spin_until(Done&& done, KeepOn&& keep_on) const;

  std::mutex run_mutex_;  // held by the run that has the workers
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::condition_variable finished_;
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
  // Written under mutex_; atomic so that spinning threads may read them without it.
  std::atomic<std::size_t> generation_{0};
  std::atomic<std::size_t> busy_{0};
  std::atomic<std::size_t> warm_{0};  // live Warm scopes
  std::size_t spin_us_;
  const std::size_t threads_;  // the caller's thread included
  std::vector<std::jthread> workers_;  // last: joined before the members they use are destroyed
};

// `requested` threads, or every hardware thread for 0 (an engine's, or a call's, default).
std::size_t resolve_threads(std::size_t requested);

// The process's pool of `threads` threads (the caller's included), made on first request and
// kept until the process exits, so that engines made later reuse its threads.
std::shared_ptr<ThreadPool> shared_pool(std::size_t threads);

}  // namespace rh::cpu
