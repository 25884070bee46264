#include "thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rh::cpu {
namespace {

constexpr std::size_t default_spin_us = 200;

// RH_POOL_SPIN_US: microseconds a thread spins before sleeping (0: never; unreadable: default).
std::size_t spin_us_from_environment() {
  const char* text = std::getenv("RH_POOL_SPIN_US");
  if (text == nullptr || *text == '\0') return default_spin_us;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || value > 1'000'000) return default_spin_us;
  return static_cast<std::size_t>(value);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(std::size_t threads)
    : spin_us_(spin_us_from_environment()), threads_(std::max<std::size_t>(threads, 1)) {}

void ThreadPool::start_workers() {
  workers_.reserve(threads_ - 1);
  for (std::size_t i = 1; i < threads_; ++i) {
    workers_.emplace_back([this](std::stop_token stop) { work(stop); });
  }
}

template <class Done, class KeepOn>
bool ThreadPool::spin_until(Done&& done, KeepOn&& keep_on) const {
  if (spin_us_ == 0 || !keep_on()) return done();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
  for (unsigned k = 1;; ++k) {
    if (done()) return true;
    cpu_relax();
    if (k % 64 == 0) {
      if (!keep_on() || std::chrono::steady_clock::now() >= deadline) return done();
      std::this_thread::yield();  // a runnable thread on this core goes first
    }
  }
}

void ThreadPool::run(std::size_t count, const std::function<void(std::size_t)>& task) {
  std::unique_lock owner(run_mutex_, std::defer_lock);
  if (threads_ == 1 || count <= 1 || !owner.try_lock()) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  if (workers_.empty()) start_workers();  // under run_mutex_: one run at a time gets here
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    count_ = count;
    next_.store(0);
    busy_.store(workers_.size());
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain();
  const auto finished = [this] { return busy_.load(std::memory_order_acquire) == 0; };
  const auto warm = [this] { return warm_.load(std::memory_order_relaxed) > 0; };
  if (!spin_until(finished, warm)) {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, finished);
  }
  task_ = nullptr;
}

void ThreadPool::drain() {
  for (std::size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) (*task_)(i);
}

void ThreadPool::work(std::stop_token stop) {
  std::size_t seen = 0;
  const auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
  const auto warm = [&] { return warm_.load(std::memory_order_relaxed) > 0 && !stop.stop_requested(); };
  for (;;) {
    // A run cannot start until this worker has finished the last one (busy_), so no generation
    // is ever missed: the next one differs from `seen` by exactly one.
    if (!(warm() && spin_until(started, warm))) {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, started)) return;
    }
    seen = generation_.load(std::memory_order_acquire);
    drain();
    {
      std::lock_guard lock(mutex_);  // a caller asleep in finished_.wait sees the change
      busy_.fetch_sub(1, std::memory_order_release);
    }
    finished_.notify_one();
  }
}

std::size_t resolve_threads(std::size_t requested) {
  if (requested > 0) return requested;
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

std::shared_ptr<ThreadPool> shared_pool(std::size_t threads) {
  static std::mutex mutex;
  static std::map<std::size_t, std::shared_ptr<ThreadPool>> pools;
  std::lock_guard lock(mutex);
  std::shared_ptr<ThreadPool>& pool = pools[threads];
  if (!pool) pool = std::make_shared<ThreadPool>(threads);
  return pool;
}

}  // namespace rh::cpu
