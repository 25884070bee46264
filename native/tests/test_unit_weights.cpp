// BatchOps told that every weight is 1 (the validation's scan found it: rh::ValueScan) skips its
// own sum of the weights and the scale's check of them; the numbers are the ones it computes
// when not told, bit for bit: a unit sum is exact, and the selections take the unit path either
// way.

#include <gtest/gtest.h>

#include <optional>
#include <rh/update.hpp>

#include "batch_ops.hpp"
#include "problems.hpp"
#include "row_blocks.hpp"
#include "thread_pool.hpp"
#include "workspace.hpp"

namespace {

// Three batches (a fresh stream, then two later ones: the residual scale with its guessed
// windows) through renewable_update on BatchOps directly.
template <class T>
std::vector<rh::State<T>> stream(const rh::Config& config, bool told_units) {
  constexpr std::size_t rows = 24000;
  constexpr std::size_t features = 5;
  rh::cpu::ThreadPool pool(2);
  rh::cpu::Workspace<T> workspace;
  std::vector<rh::State<T>> states;
  auto state = rh::State<T>::empty(features + 1);
  for (std::uint64_t b = 0; b < 3; ++b) {
    const auto batch = rh::test::contaminated_batch<T>(700 + b, rows, features, 0.1);
    workspace.reserve(state.dim(), rows, rh::cpu::RowBlocks(rows).count());
    const rh::StateView<T> previous = state.view();
    std::optional<rh::cpu::BatchOps<T>> ops;
    ops.emplace(workspace, pool, previous, batch.design(), batch.response(), batch.weights(),
                true, rh::test::quiet_profiler(), /*scan_design=*/true,
                rh::cpu::GramStrategy::incremental, rh::cpu::default_chunk_bytes,
                /*diagonal_in_pass=*/config.alpha > 0.0, told_units);
    EXPECT_EQ(ops->weight_sum(), double(rows));
    auto [next, diag] = rh::renewable_update(*ops, previous, config, nullptr);
    states.push_back(next);
    state = std::move(next);
  }
  return states;
}

template <class T>
void expect_same_bits(const rh::Config& config) {
  const auto told = stream<T>(config, true);
  const auto found = stream<T>(config, false);
  for (std::size_t b = 0; b < told.size(); ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    EXPECT_EQ(told[b].coef, found[b].coef);
    EXPECT_EQ(told[b].information, found[b].information);
    EXPECT_EQ(told[b].scale, found[b].scale);
    EXPECT_EQ(told[b].inference.inference_weight, found[b].inference.inference_weight);
    EXPECT_EQ(told[b].inference.score_sq_sum, found[b].inference.score_sq_sum);
  }
}

TEST(UnitWeights, ToldOrFoundTheSameBits) {
  expect_same_bits<double>(rh::Config{});
  expect_same_bits<float>(rh::Config{});
  rh::Config l1;
  l1.alpha = 0.01;
  expect_same_bits<double>(l1);
}

}  // namespace
