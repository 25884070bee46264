#pragma once
// The CPU engine: one batch update per call, on OpenBLAS/LAPACK and the engine's own threads.
//
//   rh::cpu::Engine engine({.threads = 0});
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
#include <utility>

#include "rh/config.hpp"
#include "rh/diagnostics.hpp"
#include "rh/state.hpp"
#include "rh/views.hpp"

namespace rh::bricks {
class Profiler;
}

namespace rh::cpu {

struct EngineOptions {
  std::size_t threads = 0;  // 0: std::thread::hardware_concurrency()
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  std::size_t threads() const;

  // Profiling (docs/profiling.md): with a profiler attached, each update is one batch of it
  // (begin_batch/end_batch, page faults around it) and its bricks are timed on every thread of the
  // engine. The profiler must be built on rh::engine_brick_table() (rh/engine_bricks.hpp). Without
  // one (the default), or with its sync mode off, a scope costs one predictable branch. Attach
  // between updates only.
  void set_profiler(std::shared_ptr<rh::bricks::Profiler> profiler);
  const std::shared_ptr<rh::bricks::Profiler>& profiler() const;

  // Updates are serialized per engine (the workspace is shared); use one engine per stream to
  // run streams concurrently.
  template <std::floating_point T>
  std::pair<State<T>, Diagnostics> update(const StateView<T>& state, MatrixView<T> X,
                                          std::span<const T> y, std::span<const T> sample_weight,
                                          const Config& config);

  template <std::floating_point T>
  std::pair<State<T>, Diagnostics> update(const State<T>& state, MatrixView<T> X,
                                          std::span<const T> y, std::span<const T> sample_weight,
                                          const Config& config) {
    return update(state.view(), X, y, sample_weight, config);
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template std::pair<State<float>, Diagnostics> Engine::update<float>(const StateView<float>&,
                                                                           MatrixView<float>,
                                                                           std::span<const float>,
                                                                           std::span<const float>,
                                                                           const Config&);
extern template std::pair<State<double>, Diagnostics> Engine::update<double>(
    const StateView<double>&, MatrixView<double>, std::span<const double>, std::span<const double>,
    const Config&);

// The BLAS/LAPACK provider's build description, and the threads it runs (1 inside an engine).
std::string blas_provider();
int blas_threads();

}  // namespace rh::cpu
