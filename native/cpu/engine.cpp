#include "rh/cpu/engine.hpp"

#include <cblas.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "batch_ops.hpp"
#include "rh/bricks/profiler.hpp"
#include "rh/bricks/scope.hpp"
#include "rh/drift.hpp"
#include "rh/engine_profiling.hpp"
#include "rh/error.hpp"
#include "rh/square_root.hpp"
#include "rh/update.hpp"
#include "rh/validation.hpp"

namespace rh::cpu {

static_assert(SolverOps<BatchOps<float>>);
static_assert(SolverOps<BatchOps<double>>);
static_assert(TracingOps<BatchOps<double>>);
static_assert(DriftOps<BatchOps<float>>);
static_assert(DriftOps<BatchOps<double>>);
static_assert(SquareRootOps<BatchOps<float>>);
static_assert(SquareRootOps<BatchOps<double>>);
static_assert(HostResidualOps<BatchOps<float>>);
static_assert(HostResidualOps<BatchOps<double>>);
static_assert(ScaleGuessOps<BatchOps<float>>);
static_assert(ScaleGuessOps<BatchOps<double>>);

struct Engine::Impl {
  Impl(std::size_t threads, GramStrategy strategy, std::size_t resolved_chunk_bytes)
      : pool(shared_pool(threads)), gram(strategy), chunk_bytes(resolved_chunk_bytes) {}

  template <std::floating_point T>
  Workspace<T>& workspace() {
    if constexpr (std::same_as<T, float>) {
      return single_precision;
    } else {
      return double_precision;
    }
  }

  std::mutex mutex;  // one update at a time: the workspaces are shared
  std::shared_ptr<ThreadPool> pool;  // the process's pool of this size (shared_pool)
  GramStrategy gram;
  std::size_t chunk_bytes;  // resolved: never 0
  std::shared_ptr<rh::bricks::Profiler> profiler;  // null: the process's off profiler
  Workspace<float> single_precision;
  Workspace<double> double_precision;
};

namespace {

// y's and the weights' values scanned by row ranges on the pool, one a thread (rh::scan_values;
// flags, so the merge is exact): on a batch whose passes run on the pool, the scans would
// otherwise be serial work of the calling thread. nullopt (validate_update scans): one thread,
// a batch too small for the pool, or lengths that validate_update rejects first.
template <std::floating_point T>
std::optional<ValueScan> scan_on_pool(ThreadPool& pool, MatrixView<T> X, std::span<const T> y,
                                      std::span<const T> sample_weight) {
  const std::size_t rows = X.rows;
  const std::size_t threads = pool.size();
  if (threads < 2 || y.size() != rows || sample_weight.size() != rows ||
      !BatchOps<T>::runs_on_pool(rows, X.cols)) {
    return std::nullopt;
  }
  std::vector<ValueScan> parts(threads);
  pool.run(threads, [&](std::size_t t) {
    const std::size_t lo = t * rows / threads;
    const std::size_t n = (t + 1) * rows / threads - lo;
    parts[t] = scan_values(y.subspan(lo, n), sample_weight.subspan(lo, n));
  });
  ValueScan merged;
  for (const ValueScan& part : parts) merged.merge(part);
  return merged;
}

std::size_t resolve_chunk_bytes(std::size_t requested) {
  if (requested > max_chunk_bytes) {
    throw InvalidArgument("chunk_bytes must be at most " + std::to_string(max_chunk_bytes) +
                          " (1 GiB), got " + std::to_string(requested));
  }
  return requested == 0 ? default_chunk_bytes : requested;
}

}  // namespace

std::string_view to_string(GramStrategy strategy) {
  return strategy == GramStrategy::full ? "full" : "incremental";
}

GramStrategy gram_strategy_from_string(std::string_view name) {
  if (name == "incremental") return GramStrategy::incremental;
  if (name == "full") return GramStrategy::full;
  throw InvalidArgument("gram must be 'incremental' or 'full', got '" + std::string(name) + "'");
}

Engine::Engine(EngineOptions options) {
  const std::size_t chunk_bytes = resolve_chunk_bytes(options.chunk_bytes);
  // The engine parallelizes over row blocks itself; threaded BLAS inside those blocks would
  // oversubscribe the cores.
  openblas_set_num_threads(1);
  impl_ = std::make_unique<Impl>(resolve_threads(options.threads), options.gram, chunk_bytes);
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

std::size_t Engine::threads() const { return impl_->pool->size(); }
GramStrategy Engine::gram_strategy() const { return impl_->gram; }
std::size_t Engine::chunk_bytes() const { return impl_->chunk_bytes; }

void Engine::set_profiler(std::shared_ptr<rh::bricks::Profiler> profiler) {
  if (profiler && profiler->bricks().known_count() != engine_brick_count) {
    throw InvalidArgument("the profiler's brick table is not the engine's (rh::engine_brick_table())");
  }
  std::lock_guard lock(impl_->mutex);
  impl_->profiler = std::move(profiler);
}

const std::shared_ptr<rh::bricks::Profiler>& Engine::profiler() const { return impl_->profiler; }

template <std::floating_point T>
std::pair<State<T>, Diagnostics> Engine::update(const StateView<T>& state, MatrixView<T> X,
                                                std::span<const T> y,
                                                std::span<const T> sample_weight,
                                                const Config& config, TraceSink* trace) {
  std::lock_guard lock(impl_->mutex);
  // A batch's runs follow each other closely: the pool's workers spin between them.
  const ThreadPool::Warm warm(*impl_->pool);
  rh::bricks::Profiler& prof = impl_->profiler ? *impl_->profiler : off_engine_profiler();
  EngineBatchScope batch(prof, X.rows);
  ValueScan values;
  {
    // X's values are scanned in the first pass over X (BatchOps), which reads them anyway; y's
    // and the weights' here, on the pool where the batch's passes run there.
    RH_BRICK_SCOPE(prof, EngineBrick::validate, 2 * X.rows, 2 * X.rows * sizeof(T), 0);
    const std::optional<ValueScan> scanned = scan_on_pool(*impl_->pool, X, y, sample_weight);
    values = validate_update(state, X, y, sample_weight, config, DesignValues::deferred,
                             scanned ? &*scanned : nullptr);
  }
  // Before its first batch a state is the empty state, whatever else it holds.
  const State<T> empty = state.batch_count == 0 ? State<T>::empty(state.dim()) : State<T>{};
  const StateView<T> stored = state.batch_count == 0 ? empty.view() : state;
  // The history in the configured factorization (rh/square_root.hpp), then, with half_life,
  // discounted (rh/drift.hpp).
  State<T> factorized_storage;
  const StateView<T> factorized = history_for_factorization(stored, config, factorized_storage);
  State<T> discounted_storage;
  // The batch's weight sum discounts the history only with a half-life.
  const StateView<T> previous = history_for_batch(
      factorized, config, config.half_life ? batch_weight_sum(sample_weight, X.rows) : 0.0,
      discounted_storage);
  Workspace<T>& workspace = impl_->workspace<T>();
  const RowBlocks blocks(X.rows);
  const std::size_t d = previous.dim();
  std::optional<BatchOps<T>> ops;
  {
    // Buffers (sized once per shape), the weight sum, J~ in float64, the history signs.
    RH_BRICK_SCOPE(prof, EngineBrick::stage, X.rows + d,
                   X.rows * sizeof(T) + d * d * (sizeof(T) + (sizeof(T) == 8 ? 0 : 8)) +
                       2 * d * sizeof(T),
                   0);
    workspace.reserve(d, X.rows, blocks.count());
    ops.emplace(workspace, *impl_->pool, previous, X, y, sample_weight, config.fit_intercept, prof,
                /*scan_design=*/true, impl_->gram, impl_->chunk_bytes,
                /*diagonal_in_pass=*/config.alpha > 0.0 || config.lambda_scale.value_or(0.0) > 0.0,
                /*unit_weights=*/values.weights_units);
  }
  ops->set_tracing(trace != nullptr);
  auto result = renewable_update(*ops, previous, config, trace);
  batch.set_iterations(result.second.n_iter);
  return result;
}

template std::pair<State<float>, Diagnostics> Engine::update<float>(const StateView<float>&,
                                                                    MatrixView<float>,
                                                                    std::span<const float>,
                                                                    std::span<const float>,
                                                                    const Config&, TraceSink*);
template std::pair<State<double>, Diagnostics> Engine::update<double>(const StateView<double>&,
                                                                      MatrixView<double>,
                                                                      std::span<const double>,
                                                                      std::span<const double>,
                                                                      const Config&, TraceSink*);

std::string blas_provider() { return openblas_get_config(); }

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace rh::cpu
