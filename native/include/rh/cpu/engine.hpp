#pragma once
// The CPU engine: one batch update per call, on OpenBLAS/LAPACK and worker threads that every
// engine of the same thread count in the process shares (started once, by the first of them).
//
//   rh::cpu::Engine engine({.threads = 0});   // or {.threads = 2, .gram = GramStrategy::full}
//   auto [next, diagnostics] = engine.update(state, X, y, w, config);
//
// An update is a transaction: the input state is read only, the new state is returned, and an
// exception (rh::InvalidArgument, rh::NumericalError) leaves nothing changed. The batch is
// read in place through views; nothing is copied.

#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "rh/config.hpp"
#include "rh/diagnostics.hpp"
#include "rh/state.hpp"
#include "rh/trace.hpp"
#include "rh/views.hpp"

namespace rh::bricks {
class Profiler;
}

namespace rh::cpu {

// How each Newton matrix's Gram X~^T diag(w c) X~ is formed. Both meet the numerical contract;
// they differ in cost and in rounding only.
enum class GramStrategy {
  // From the Gram of an earlier point of the batch, by rank-k corrections over the rows whose
  // curvature flipped (at most rows / 8 of them, or half the new set's rows from the batch's
  // whole weighted Gram; a fresh Gram after 8 corrections in a row).
  incremental,
  // Afresh over every row of non-zero curvature whenever the curvature set changed, in the
  // evaluation pass where it can be.
  full,
};

// The options that change an engine's cost, never its contract (docs/tuner.md, "Plans").
struct EngineOptions {
  // The pool's threads, the caller's included: 0: std::thread::hardware_concurrency(). Engines of
  // the same count share one pool; one that finds it busy runs its passes on its caller's thread.
  std::size_t threads = 0;
  GramStrategy gram = GramStrategy::incremental;
  // Bytes of X per row chunk of a fused pass (a chunk is read from memory once and reused from
  // cache); 0: default_chunk_bytes. At most max_chunk_bytes. The chunking sets the summation
  // grouping of the products, so a different size moves results by rounding only.
  std::size_t chunk_bytes = 0;
};

inline constexpr std::size_t default_chunk_bytes = std::size_t{256} * 1024;
inline constexpr std::size_t max_chunk_bytes = std::size_t{1} << 30;

std::string_view to_string(GramStrategy strategy);
// "incremental" or "full"; rh::InvalidArgument naming the accepted names otherwise.
GramStrategy gram_strategy_from_string(std::string_view name);

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  std::size_t threads() const;
  GramStrategy gram_strategy() const;
  std::size_t chunk_bytes() const;  // resolved: never 0

  // Profiling (docs/profiling.md): with a profiler attached, each update is one batch of it
  // (begin_batch/end_batch, page faults around it) and its bricks are timed on every thread of the
  // engine. The profiler must be built on rh::engine_brick_table() (rh/engine_bricks.hpp). Without
  // one (the default), or with its sync mode off, a scope costs one predictable branch. Attach
  // between updates only.
  void set_profiler(std::shared_ptr<rh::bricks::Profiler> profiler);
  const std::shared_ptr<rh::bricks::Profiler>& profiler() const;

  // Updates are serialized per engine (the workspace is shared); use one engine per stream to
  // run streams concurrently.
  // With `trace` (docs/tracing.md), every solver iteration of the batch appends its record to
  // it, also when the update then throws; null (the default) traces nothing.
  template <std::floating_point T>
  std::pair<State<T>, Diagnostics> update(const StateView<T>& state, MatrixView<T> X,
                                          std::span<const T> y, std::span<const T> sample_weight,
                                          const Config& config, TraceSink* trace = nullptr);

  template <std::floating_point T>
  std::pair<State<T>, Diagnostics> update(const State<T>& state, MatrixView<T> X,
                                          std::span<const T> y, std::span<const T> sample_weight,
                                          const Config& config, TraceSink* trace = nullptr) {
    return update(state.view(), X, y, sample_weight, config, trace);
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template std::pair<State<float>, Diagnostics> Engine::update<float>(const StateView<float>&,
                                                                           MatrixView<float>,
                                                                           std::span<const float>,
                                                                           std::span<const float>,
                                                                           const Config&,
                                                                           TraceSink*);
extern template std::pair<State<double>, Diagnostics> Engine::update<double>(
    const StateView<double>&, MatrixView<double>, std::span<const double>, std::span<const double>,
    const Config&, TraceSink*);

// The BLAS/LAPACK provider's build description, and the threads it runs (1 inside an engine).
std::string blas_provider();
int blas_threads();

}  // namespace rh::cpu
