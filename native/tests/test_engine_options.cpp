// The engine options a tuner turns (EngineOptions: threads, Gram strategy, row chunk size) change
// cost and rounding, never the contract: every setting meets the cross-engine tolerance of
// shared/spec/method.md against the defaults, on streams that exercise the incremental Gram.

#include <gtest/gtest.h>

#include <rh/cpu/engine.hpp>
#include <rh/error.hpp>
#include <string>
#include <utility>

#include "problems.hpp"
#include "row_blocks.hpp"

namespace {

using rh::cpu::EngineOptions;
using rh::cpu::GramStrategy;
using rh::test::Batch;
using rh::test::contaminated_batch;

template <class T>
struct Stream {
  std::vector<rh::State<T>> states;
  std::vector<rh::Diagnostics> diagnostics;
};

// Three batches large enough for several row blocks, the pool and the incremental Gram (20 %
// outliers: curvature flips from one Newton iteration to the next), non-unit weights.
template <class T>
Stream<T> run(const EngineOptions& options, const rh::Config& config) {
  constexpr std::size_t p = 7;
  rh::cpu::Engine engine(options);
  Stream<T> out;
  auto state = rh::State<T>::empty(p + 1);
  for (std::uint64_t b = 0; b < 3; ++b) {
    auto batch = contaminated_batch<T>(300 + b, 9000, p, 0.2);
    for (std::size_t i = 0; i < batch.rows; i += 5) batch.w[i] = T{2};
    auto [next, diag] = engine.update(state, batch.design(), batch.response(), batch.weights(),
                                      config);
    state = next;
    out.states.push_back(std::move(next));
    out.diagnostics.push_back(diag);
  }
  return out;
}

template <class T>
void expect_close(const std::vector<T>& a, const std::vector<T>& b, double rtol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i];
    const double y = b[i];
    EXPECT_LE(std::fabs(x - y), rtol * std::max(1.0, std::fabs(y))) << what << " entry " << i;
  }
}

// The contract's tolerance (method.md): 1e-7 in float64, 2e-3 in float32.
template <class T>
void expect_same_stream(const Stream<T>& got, const Stream<T>& want) {
  const double rtol = std::same_as<T, double> ? 1e-7 : 2e-3;
  ASSERT_EQ(got.states.size(), want.states.size());
  for (std::size_t b = 0; b < want.states.size(); ++b) {
    const std::string batch = "batch " + std::to_string(b + 1) + ": ";
    expect_close(got.states[b].coef, want.states[b].coef, rtol, batch + "coef");
    expect_close(got.states[b].information, want.states[b].information, rtol,
                 batch + "information");
    EXPECT_NEAR(got.states[b].scale, want.states[b].scale, rtol * want.states[b].scale) << batch;
    EXPECT_NEAR(got.diagnostics[b].objective, want.diagnostics[b].objective,
                rtol * std::fabs(want.diagnostics[b].objective))
        << batch;
    EXPECT_EQ(got.diagnostics[b].converged, want.diagnostics[b].converged) << batch;
    EXPECT_EQ(got.diagnostics[b].solver, want.diagnostics[b].solver) << batch;
  }
}

rh::Config penalized(rh::L1Solver solver) {
  rh::Config config;
  config.alpha = 0.02;
  config.l1_solver = solver;
  return config;
}

TEST(EngineOptions, AreReportedResolved) {
  const rh::cpu::Engine defaults;
  EXPECT_EQ(defaults.gram_strategy(), GramStrategy::incremental);
  EXPECT_EQ(defaults.chunk_bytes(), rh::cpu::default_chunk_bytes);
  EXPECT_GE(defaults.threads(), 1u);
  const rh::cpu::Engine set({.threads = 3, .gram = GramStrategy::full, .chunk_bytes = 4096});
  EXPECT_EQ(set.threads(), 3u);
  EXPECT_EQ(set.gram_strategy(), GramStrategy::full);
  EXPECT_EQ(set.chunk_bytes(), 4096u);
}

TEST(EngineOptions, BadValuesAreRefusedNamingThem) {
  try {
    rh::cpu::Engine engine({.chunk_bytes = rh::cpu::max_chunk_bytes + 1});
    FAIL() << "an oversized chunk was accepted";
  } catch (const rh::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("chunk_bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rh::cpu::gram_strategy_from_string("full"), GramStrategy::full);
  EXPECT_EQ(rh::cpu::gram_strategy_from_string("incremental"), GramStrategy::incremental);
  EXPECT_EQ(rh::cpu::to_string(GramStrategy::full), "full");
  try {
    rh::cpu::gram_strategy_from_string("fresh");
    FAIL() << "an unknown Gram strategy was accepted";
  } catch (const rh::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'fresh'"), std::string::npos) << e.what();
  }
}

TEST(EngineOptions, FullGramMeetsTheContractAgainstIncremental) {
  const EngineOptions full{.threads = 2, .gram = GramStrategy::full};
  const EngineOptions incremental{.threads = 2, .gram = GramStrategy::incremental};
  for (const rh::Config& config : {rh::Config{}, penalized(rh::L1Solver::lamm),
                                   penalized(rh::L1Solver::prox_newton)}) {
    SCOPED_TRACE("alpha " + std::to_string(config.alpha) + ", l1_solver " +
                 std::to_string(static_cast<int>(config.l1_solver)));
    expect_same_stream(run<double>(full, config), run<double>(incremental, config));
    expect_same_stream(run<float>(full, config), run<float>(incremental, config));
  }
}

// Under the full strategy, as under the incremental one, the row partition, not the threads,
// fixes every summation order.
TEST(EngineOptions, FullGramDoesNotDependOnTheThreadCount) {
  const auto one = run<double>({.threads = 1, .gram = GramStrategy::full}, rh::Config{});
  const auto four = run<double>({.threads = 4, .gram = GramStrategy::full}, rh::Config{});
  for (std::size_t b = 0; b < one.states.size(); ++b) {
    EXPECT_EQ(one.states[b].coef, four.states[b].coef);  // bitwise
    EXPECT_EQ(one.states[b].information, four.states[b].information);
    EXPECT_EQ(one.diagnostics[b].n_iter, four.diagnostics[b].n_iter);
  }
}

// The information under the full strategy is symmetric to the bit, as the incremental one.
TEST(EngineOptions, FullGramKeepsTheInformationExactlySymmetric) {
  const auto stream = run<double>({.gram = GramStrategy::full}, rh::Config{});
  const std::size_t d = stream.states.front().dim();
  for (const auto& state : stream.states) {
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t k = 0; k < j; ++k) {
        EXPECT_EQ(state.information[j * d + k], state.information[k * d + j]);
      }
    }
  }
}

TEST(EngineOptions, ChunkSizeChangesRoundingOnly) {
  const rh::Config config;
  const auto reference = run<double>({.threads = 2}, config);
  // 0 is the default: the same bits.
  const auto by_default = run<double>({.threads = 2, .chunk_bytes = rh::cpu::default_chunk_bytes},
                                      config);
  EXPECT_EQ(by_default.states.back().coef, reference.states.back().coef);
  // From the 16-row floor (1 KiB of 8 features) to one chunk per block.
  for (const std::size_t bytes : {std::size_t{1024}, std::size_t{64} << 10, std::size_t{1} << 20}) {
    SCOPED_TRACE("chunk_bytes " + std::to_string(bytes));
    expect_same_stream(run<double>({.threads = 2, .chunk_bytes = bytes}, config), reference);
    expect_same_stream(
        run<float>({.threads = 2, .gram = GramStrategy::full, .chunk_bytes = bytes},
                   penalized(rh::L1Solver::lamm)),
        run<float>({.threads = 2}, penalized(rh::L1Solver::lamm)));
  }
}

// A chunk never spans more rows than the batch's largest block (no pass ever holds more: the
// buffers sized by it), and at least 16 rows of a larger batch.
TEST(EngineOptions, ChunkRowsNeverExceedTheLargestBlock) {
  constexpr std::size_t mib = std::size_t{1} << 20;
  // 4,096 rows: two blocks of 2,048 (15,420 rows by the chunk's bytes).
  EXPECT_EQ(rh::cpu::chunk_rows(4096, 16, sizeof(float), mib), 2048u);
  // 65,536 x 2: 32 blocks of 2,048 (65,536 rows by its bytes, the batch's own).
  EXPECT_EQ(rh::cpu::chunk_rows(65'536, 2, sizeof(double), mib), 2048u);
  // 1,000,000 rows: 64 blocks of 15,625 rows; 16,384 by the bytes.
  EXPECT_EQ(rh::cpu::chunk_rows(1'000'000, 16, sizeof(float), mib), 15'625u);
  EXPECT_EQ(rh::cpu::chunk_rows(1'000'000, 16, sizeof(float), mib / 2), mib / 2 / 64);
  // Blocks differ by a row at most: 4,097 rows are blocks of 2,048 and 2,049.
  EXPECT_EQ(rh::cpu::RowBlocks(4097).largest(), 2049u);
  EXPECT_EQ(rh::cpu::chunk_rows(4097, 16, sizeof(float), mib), 2049u);
  EXPECT_EQ(rh::cpu::chunk_rows(1'000'000, 100, sizeof(double), 1024), 16u);
  EXPECT_EQ(rh::cpu::chunk_rows(5, 100, sizeof(double), 1024), 5u);
  EXPECT_EQ(rh::cpu::chunk_rows(0, 3, sizeof(double), mib), 1u);
}

// Slices cover a chunk's rows in order, none longer than slice_rows.
TEST(EngineOptions, SlicesCoverTheRowsInOrder) {
  for (const auto& [lo, hi] : {std::pair<std::size_t, std::size_t>{0, 0}, {5, 6}, {0, 1024},
                               {3, 1028}, {100, 4196}}) {
    std::size_t next = lo;
    rh::cpu::for_each_slice(lo, hi, [&](std::size_t a, std::size_t z) {
      EXPECT_EQ(a, next);
      EXPECT_LT(a, z);
      EXPECT_LE(z - a, rh::cpu::slice_rows);
      next = z;
    });
    EXPECT_EQ(next, hi);
  }
}

// Chunks larger than every batch (492 KiB of X here) are one chunk per block: the same bits.
TEST(EngineOptions, ChunksLargerThanTheBatchGiveTheSameBits) {
  const rh::Config config;
  const auto one_mib = run<double>({.threads = 2, .chunk_bytes = std::size_t{1} << 20}, config);
  const auto eight_mib = run<double>({.threads = 2, .chunk_bytes = std::size_t{8} << 20}, config);
  for (std::size_t b = 0; b < one_mib.states.size(); ++b) {
    EXPECT_EQ(eight_mib.states[b].coef, one_mib.states[b].coef) << "batch " << b + 1;
    EXPECT_EQ(eight_mib.states[b].information, one_mib.states[b].information) << "batch " << b + 1;
  }
}

}  // namespace

namespace {

// A wide batch whose per-block Grams do not all fit BatchOps' budget (10 blocks of 2,048 rows,
// d = 301: 725 KB each in float64), so the pass folds them through fewer buffers than blocks and
// tasks may wait for one: the same bits on every thread count, the information pass's four
// Grams (smoothed, inference_matrices) and the incremental update's corrections included.
rh::State<double> wide_stream(std::size_t threads) {
  constexpr std::size_t p = 300;
  rh::cpu::Engine engine({.threads = threads});
  rh::Config config;
  config.curvature = rh::Curvature::smoothed;
  config.inference_matrices = true;
  auto state = rh::State<double>::empty(p + 1);
  for (std::uint64_t b = 0; b < 2; ++b) {
    const auto batch = contaminated_batch<double>(700 + b, 20480, p, 0.2);
    state = engine.update(state, batch.design(), batch.response(), batch.weights(), config).first;
  }
  return state;
}

}  // namespace

TEST(EngineOptions, WideBlockGramsFoldInBlockOrderOnAnyThreadCount) {
  const auto one = wide_stream(1);
  for (const std::size_t threads : {2u, 3u}) {
    const auto many = wide_stream(threads);
    EXPECT_EQ(many.coef, one.coef) << threads << " threads";
    EXPECT_EQ(many.information, one.information) << threads << " threads";
    EXPECT_EQ(many.gram, one.gram) << threads << " threads";
    EXPECT_EQ(many.score_gram, one.score_gram) << threads << " threads";
  }
}
