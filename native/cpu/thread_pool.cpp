#include "thread_pool.hpp"

#include <map>

namespace rh::cpu {

ThreadPool::ThreadPool(std::size_t threads) {
  for (std::size_t i = 1; i < threads; ++i) {
    workers_.emplace_back([this](std::stop_token stop) { work(stop); });
  }
}

void ThreadPool::run(std::size_t count, const std::function<void(std::size_t)>& task) {
  std::unique_lock owner(run_mutex_, std::defer_lock);
  if (workers_.empty() || count <= 1 || !owner.try_lock()) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    count_ = count;
    next_.store(0);
    busy_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [this] { return busy_ == 0; });
  task_ = nullptr;
}

void ThreadPool::drain() {
  for (std::size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) (*task_)(i);
}

void ThreadPool::work(std::stop_token stop) {
  std::size_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [&] { return generation_ != seen; })) return;
      seen = generation_;
    }
    drain();
    {
      std::lock_guard lock(mutex_);
      --busy_;
    }
    finished_.notify_one();
  }
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
