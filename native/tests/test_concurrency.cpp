// The engine used from several threads at once: calls sharing one engine (serialized by its
// mutex) and engines side by side, sharing the process's pool of their thread count (one run has
// its workers at a time, the others run on their callers). The results must equal
// the same updates run one after another. scripts/test_native_cpp.sh runs this executable under
// ThreadSanitizer too (build-tsan/), where any data race reported fails the run.

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <rh/cpu/engine.hpp>
#include <thread>
#include <vector>

#include "block_sums.hpp"
#include "problems.hpp"
#include "thread_pool.hpp"

namespace {

using rh::test::Batch;
using rh::test::contaminated_batch;

template <class T>
rh::State<T> stream(rh::cpu::Engine& engine, const std::vector<Batch<T>>& batches,
                    const rh::Config& config) {
  rh::State<T> state = rh::State<T>::empty(batches.front().features + 1);
  for (const Batch<T>& b : batches) {
    state = engine.update(state, b.design(), b.response(), b.weights(), config).first;
  }
  return state;
}

// Enough rows that the passes run on the pool (rows x (features + 1) >= 2^17, BatchOps::
// min_parallel_entries), few enough that the run stays short under ThreadSanitizer.
template <class T>
std::vector<Batch<T>> batches(std::uint64_t seed, std::size_t features) {
  std::vector<Batch<T>> out;
  for (std::size_t k = 0; k < 3; ++k) {
    out.push_back(contaminated_batch<T>(seed + k, 27000 + 1000 * k, features));
  }
  return out;
}

template <class T>
void streams_in_parallel_equal_streams_in_turn(bool share_one_engine, const rh::Config& config) {
  constexpr std::size_t kStreams = 3;
  std::vector<std::vector<Batch<T>>> inputs;
  for (std::size_t s = 0; s < kStreams; ++s) inputs.push_back(batches<T>(100 * (s + 1), 4 + s));

  std::vector<rh::State<T>> expected;
  rh::cpu::Engine alone({.threads = 1});
  for (const auto& input : inputs) expected.push_back(stream(alone, input, config));

  rh::cpu::Engine shared({.threads = 3});
  std::vector<rh::cpu::Engine> own;
  for (std::size_t s = 0; s < kStreams; ++s) own.emplace_back(rh::cpu::EngineOptions{.threads = 2});
  std::vector<rh::State<T>> got(kStreams);
  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < kStreams; ++s) {
    threads.emplace_back([&, s] {
      got[s] = stream(share_one_engine ? shared : own[s], inputs[s], config);
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t s = 0; s < kStreams; ++s) {
    EXPECT_EQ(got[s].coef, expected[s].coef) << "stream " << s;  // bitwise: threads change
    EXPECT_EQ(got[s].information, expected[s].information);     // nothing but speed
    EXPECT_EQ(got[s].information_factor, expected[s].information_factor);
    EXPECT_EQ(got[s].information_vector, expected[s].information_vector);
  }
}

TEST(Concurrency, StreamsSharingOneEngineTakeTurns) {
  streams_in_parallel_equal_streams_in_turn<double>(true, rh::Config{});
}

TEST(Concurrency, StreamsOnTheirOwnEnginesRunSideBySide) {
  streams_in_parallel_equal_streams_in_turn<double>(false, rh::Config{});
}

// The square-root mode's QR buffers are the threads' (thread_rows), used by one block at a time.
TEST(Concurrency, QrStreamsOnTheirOwnEnginesRunSideBySide) {
  rh::Config qr;
  qr.factorization = rh::Factorization::qr;
  streams_in_parallel_equal_streams_in_turn<double>(false, qr);
}

// BlockSums on the pool: 64 blocks through 2 buffers on 3 threads, blocks finishing out of order
// (sleeps), so tasks wait for buffers; the totals are bitwise the left fold of every block's
// partial in block order, each part on its own.
TEST(Concurrency, BlockSumsFoldInBlockOrderWhateverTheSchedule) {
  constexpr std::size_t kBlocks = 64;
  constexpr std::size_t kParts = 2;
  constexpr std::size_t kDim = 5;
  constexpr std::size_t kSquare = kDim * kDim;
  const auto partial_entry = [](std::size_t b, std::size_t part, std::size_t k) {
    std::mt19937_64 rng(1000 * b + 100 * part + k);
    return std::uniform_real_distribution<double>(-1.0, 1.0)(rng) * double(1 + b % 7);
  };
  std::vector<double> want(kParts * kSquare, 0.0);
  for (std::size_t part = 0; part < kParts; ++part) {
    for (std::size_t b = 0; b < kBlocks; ++b) {
      for (std::size_t i = 0; i < kDim; ++i) {
        for (std::size_t j = 0; j <= i; ++j) {
          const double v = partial_entry(b, part, i * kDim + j);
          double& total = want[part * kSquare + i * kDim + j];
          total = b == 0 ? v : total + v;
        }
      }
    }
  }
  rh::cpu::ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::vector<double> got(kParts * kSquare, 0.0);
    std::vector<double> storage;
    rh::cpu::BlockSums<double> sums;
    sums.start(kBlocks, kParts, kDim, 2, {got.data(), got.data() + kSquare, nullptr, nullptr},
               storage);
    pool.run(kBlocks, [&](std::size_t b) {
      for (std::size_t part = 0; part < kParts; ++part) {
        double* partial = sums.take(b, part);
        for (std::size_t k = 0; k < kSquare; ++k) partial[k] = partial_entry(b, part, k);
      }
      if ((b + static_cast<std::size_t>(round)) % 5 == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      sums.finish(b);
    });
    for (std::size_t part = 0; part < kParts; ++part) {
      for (std::size_t i = 0; i < kDim; ++i) {
        for (std::size_t j = 0; j <= i; ++j) {
          EXPECT_EQ(got[part * kSquare + i * kDim + j], want[part * kSquare + i * kDim + j])
              << "round " << round << " part " << part << " (" << i << ", " << j << ")";
        }
      }
    }
    EXPECT_LE(storage.size(), 2 * kParts * kSquare);  // two blocks' buffers, not 64
  }
}

// Fresh engines made, used and dropped from several threads, as fresh estimators are: they share
// the process's pool (no thread started after the first), and their results are bitwise those
// of one engine running the same streams in turn.
TEST(Concurrency, FreshEnginesInThreadsShareOnePoolAndMatchOneEngine) {
  constexpr std::size_t kStreams = 4;
  std::vector<std::vector<Batch<double>>> inputs;
  for (std::size_t s = 0; s < kStreams; ++s) inputs.push_back(batches<double>(300 + s, 5));
  rh::cpu::Engine alone({.threads = 1});
  std::vector<rh::State<double>> expected;
  for (const auto& input : inputs) expected.push_back(stream(alone, input, rh::Config{}));
  const auto pool = rh::cpu::shared_pool(2);
  std::vector<rh::State<double>> got(kStreams);
  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < kStreams; ++s) {
    threads.emplace_back([&, s] {
      for (int round = 0; round < 2; ++round) {
        rh::cpu::Engine fresh({.threads = 2});
        got[s] = stream(fresh, inputs[s], rh::Config{});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(rh::cpu::shared_pool(2), pool);
  for (std::size_t s = 0; s < kStreams; ++s) {
    EXPECT_EQ(got[s].coef, expected[s].coef) << "stream " << s;
    EXPECT_EQ(got[s].information, expected[s].information);
  }
}

TEST(Concurrency, PenalizedFloat32StreamsSharingOneEngine) {
  rh::Config penalized;
  penalized.alpha = 0.05;
  streams_in_parallel_equal_streams_in_turn<float>(true, penalized);
}

TEST(Concurrency, PoolsAreCreatedUsedAndDestroyedFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<std::size_t> sums(4, 0);
  for (std::size_t t = 0; t < sums.size(); ++t) {
    threads.emplace_back([&sums, t] {
      for (int round = 0; round < 20; ++round) {
        rh::cpu::ThreadPool pool(3);
        std::vector<std::size_t> slots(16, 0);
        for (int run = 0; run < 5; ++run) {
          pool.run(slots.size(), [&](std::size_t i) { slots[i] += i; });
        }
        for (std::size_t v : slots) sums[t] += v;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t s : sums) EXPECT_EQ(s, 20u * 5u * (15u * 16u / 2u));
}

}  // namespace
