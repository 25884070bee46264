// rh_cpu.h: the engine. The structs are read into the engine's own types here, once: the config
// into rh::Config, the previous state into a StateView over the caller's arrays (no copy), and
// the new state is written into the caller's arrays.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "capi.hpp"
#include "rh/config.hpp"
#include "rh/cpu/engine.hpp"
#include "rh/diagnostics.hpp"
#include "rh/error.hpp"
#include "rh/state.hpp"
#include "rh/trace.hpp"

struct rh_cpu_engine_s {
  rh::cpu::Engine engine;
};

namespace rh::capi {
namespace {

Config read_config(const rh_cpu_config& c) {
  Config config;
  config.fit_intercept = c.fit_intercept != 0;
  config.epsilon = c.epsilon;
  if (c.has_tau) config.tau = c.tau;
  config.alpha = c.alpha;
  config.ridge = c.ridge;
  config.max_iter = c.max_iter;
  if (c.has_tol) config.tol = c.tol;
  if (c.l1_solver == RH_CPU_L1_LAMM) {
    config.l1_solver = L1Solver::lamm;
  } else if (c.l1_solver == RH_CPU_L1_PROX_NEWTON) {
    config.l1_solver = L1Solver::prox_newton;
  } else {
    fail("config.l1_solver must be RH_CPU_L1_LAMM or RH_CPU_L1_PROX_NEWTON, got ", c.l1_solver);
  }
  if (c.has_lambda_scale) config.lambda_scale = c.lambda_scale;
  if (c.curvature == RH_CPU_CURVATURE_INDICATOR) {
    config.curvature = Curvature::indicator;
  } else if (c.curvature == RH_CPU_CURVATURE_SMOOTHED) {
    config.curvature = Curvature::smoothed;
  } else {
    fail("config.curvature must be RH_CPU_CURVATURE_INDICATOR or _SMOOTHED, got ", c.curvature);
  }
  config.bandwidth_scale = c.bandwidth_scale;
  config.inference_matrices = c.inference_matrices != 0;
  if (c.has_half_life) config.half_life = c.half_life;
  if (c.factorization == RH_CPU_FACTORIZATION_CHOLESKY) {
    config.factorization = Factorization::cholesky;
  } else if (c.factorization == RH_CPU_FACTORIZATION_QR) {
    config.factorization = Factorization::qr;
  } else {
    fail("config.factorization must be RH_CPU_FACTORIZATION_CHOLESKY or _QR, got ",
         c.factorization);
  }
  if (c.reserved != 0) fail("config.reserved must be 0");
  return config;
}

template <class T>
std::span<const T> array(const void* data, std::size_t size, const char* name) {
  if (size == 0) return {};
  return {static_cast<const T*>(need(data, name)), size};
}

template <class T>
StateView<T> read_state(const rh_cpu_state& s) {
  const auto d = static_cast<std::size_t>(s.dim);
  const std::size_t matrices = s.has_matrices ? d * d : 0;
  return {.coef = array<T>(s.coef, d, "state.coef"),
          .information = array<T>(s.information, d * d, "state.information"),
          .n_samples_seen = s.n_samples_seen,
          .effective_weight = s.effective_weight,
          .batch_count = s.batch_count,
          .previous_lambda = s.previous_lambda,
          .scale = s.scale,
          .inference = {.score_sq_sum = s.score_sq_sum,
                        .curvature_sum = s.curvature_sum,
                        .curvature_sq_sum = s.curvature_sq_sum,
                        .inference_weight = s.inference_weight,
                        .inference_batches = s.inference_batches},
          .gram = array<T>(s.gram, matrices, "state.gram"),
          .score_gram = array<T>(s.score_gram, matrices, "state.score_gram"),
          .information_factor =
              array<T>(s.information_factor, s.has_square_root ? d * d : 0,
                       "state.information_factor"),
          .information_vector = array<T>(s.information_vector, s.has_square_root ? d : 0,
                                         "state.information_vector")};
}

template <class T>
void copy_into(const std::vector<T>& values, void* out) {
  std::copy(values.begin(), values.end(), static_cast<T*>(out));
}

// Checks every output array before anything is written: a refused output changes nothing.
template <class T>
void write_state(const State<T>& state, rh_cpu_state& out) {
  const bool matrices = !state.gram.empty();
  need(out.coef, "next.coef");
  need(out.information, "next.information");
  if (matrices && (out.gram == nullptr || out.score_gram == nullptr)) {
    fail("the new state keeps the inference matrices: next.gram and next.score_gram must not be "
         "NULL");
  }
  const bool square_root = !state.information_factor.empty();
  if (square_root && (out.information_factor == nullptr || out.information_vector == nullptr)) {
    fail("the new state holds square-root information: next.information_factor and "
         "next.information_vector must not be NULL");
  }
  copy_into(state.coef, out.coef);
  copy_into(state.information, out.information);
  if (square_root) {
    copy_into(state.information_factor, out.information_factor);
    copy_into(state.information_vector, out.information_vector);
  }
  out.has_square_root = square_root ? 1 : 0;
  if (matrices) {
    copy_into(state.gram, out.gram);
    copy_into(state.score_gram, out.score_gram);
  }
  out.has_matrices = matrices ? 1 : 0;
  out.n_samples_seen = state.n_samples_seen;
  out.effective_weight = state.effective_weight;
  out.batch_count = state.batch_count;
  out.previous_lambda = state.previous_lambda;
  out.scale = state.scale;
  out.score_sq_sum = state.inference.score_sq_sum;
  out.curvature_sum = state.inference.curvature_sum;
  out.curvature_sq_sum = state.inference.curvature_sq_sum;
  out.inference_weight = state.inference.inference_weight;
  out.inference_batches = state.inference.inference_batches;
}

rh_cpu_diagnostics write_diagnostics(const Diagnostics& d) {
  return {.converged = d.converged ? 1 : 0,
          .solver = static_cast<int32_t>(d.solver),
          .n_iter = d.n_iter,
          .objective = d.objective,
          .lambda = d.lambda,
          .bandwidth = d.bandwidth,
          .line_search_halvings = d.line_search_halvings,
          .rcond = d.rcond,
          .drift_statistic = d.drift_statistic,
          .drift_df = d.drift_df,
          .drift_pvalue = d.drift_pvalue,
          .stationarity_step = d.stationarity_step};
}

rh_cpu_tensor_stats tensor_stats(const TensorStats& s) {
  const bool any = s.finite() > 0;
  const double missing = std::numeric_limits<double>::quiet_NaN();
  return {.count = s.count,
          .nan = s.nan,
          .inf = s.inf,
          .min = any ? s.min : missing,
          .max = any ? s.max : missing,
          .mean = any ? s.mean : missing,
          .std = s.count == 0 ? missing : s.std_dev(),
          .l2 = s.count == 0 ? missing : s.l2()};
}

rh_cpu_iteration iteration(const IterationTrace& r) {
  return {.phase = r.phase == SolvePhase::pilot ? RH_CPU_PHASE_PILOT : RH_CPU_PHASE_MAIN,
          .solver = static_cast<int32_t>(r.solver),
          .iteration = r.iteration,
          .rcond = r.rcond,
          .objective = r.objective,
          .coef_norm = r.coef_norm,
          .step_norm = r.step_norm,
          .step_scale = r.step_scale,
          .halvings = r.halvings,
          .search_exhausted = r.search_exhausted ? 1 : 0,
          .reserved = 0,
          .rows = r.rows,
          .quadratic_rows = r.quadratic_rows,
          .residual = tensor_stats(r.residual),
          .score = tensor_stats(r.score),
          .hessian_diagonal = tensor_stats(r.hessian_diagonal)};
}

template <class T>
void update(cpu::Engine& engine, const rh_cpu_state& previous, const rh_cpu_batch& batch,
            const Config& config, rh_cpu_trace_fn trace, void* trace_user, rh_cpu_state& next,
            rh_cpu_diagnostics& diagnostics) {
  const StateView<T> view = read_state<T>(previous);
  const auto rows = static_cast<std::size_t>(batch.rows);
  const auto cols = static_cast<std::size_t>(batch.cols);
  const void* data = rows * cols != 0 ? need(batch.X, "batch.X") : batch.X;
  const MatrixView<T> X{static_cast<const T*>(data), rows, cols};
  const auto y = array<T>(batch.y, rows, "batch.y");
  const auto w = array<T>(batch.sample_weight, rows, "batch.sample_weight");
  TraceSink sink;
  const auto publish = [&] {
    for (const IterationTrace& record : sink.records) {
      const rh_cpu_iteration out = iteration(record);
      trace(trace_user, &out);
    }
  };
  std::pair<State<T>, Diagnostics> result;
  try {
    result = engine.update(view, X, y, w, config, trace ? &sink : nullptr);
  } catch (...) {
    if (trace) publish();
    throw;
  }
  if (trace) publish();
  write_state(result.first, next);
  diagnostics = write_diagnostics(result.second);
}

void check_dims(const rh_cpu_state& previous, const rh_cpu_batch& batch, const rh_cpu_state& next) {
  if (batch.reserved != 0) fail("batch.reserved must be 0");
  if (batch.dtype != RH_CPU_FLOAT32 && batch.dtype != RH_CPU_FLOAT64) {
    fail("batch.dtype must be RH_CPU_FLOAT32 or RH_CPU_FLOAT64, got ", batch.dtype);
  }
  if (previous.dtype != batch.dtype || next.dtype != batch.dtype) {
    fail("the states' dtype must be the batch's (", batch.dtype == RH_CPU_FLOAT32 ? "float32" :
         "float64", ")");
  }
  if (batch.rows < 0 || batch.cols < 0 || previous.dim < 0) {
    fail("negative sizes: batch ", batch.rows, " x ", batch.cols, ", state dim ", previous.dim);
  }
  if (next.dim != previous.dim) {
    fail("next.dim (", next.dim, ") must be previous.dim (", previous.dim, ")");
  }
}

}  // namespace
}  // namespace rh::capi

extern "C" {

int rh_cpu_engine_create(const rh_cpu_engine_options* options, rh_cpu_engine_t* out) {
  return rh::capi::guarded([&] {
    rh::capi::need(out, "out");
    const rh_cpu_engine_options o = options ? *options : rh_cpu_engine_options{};
    if (o.threads < 0 || o.chunk_bytes < 0) {
      rh::fail("options.threads and options.chunk_bytes must be >= 0, got ", o.threads, " and ",
               o.chunk_bytes);
    }
    if (o.gram != RH_CPU_GRAM_INCREMENTAL && o.gram != RH_CPU_GRAM_FULL) {
      rh::fail("options.gram must be RH_CPU_GRAM_INCREMENTAL or RH_CPU_GRAM_FULL, got ", o.gram);
    }
    const rh::cpu::EngineOptions options_{
        .threads = static_cast<std::size_t>(o.threads),
        .gram = o.gram == RH_CPU_GRAM_FULL ? rh::cpu::GramStrategy::full
                                           : rh::cpu::GramStrategy::incremental,
        .chunk_bytes = static_cast<std::size_t>(o.chunk_bytes)};
    *out = new rh_cpu_engine_s{rh::cpu::Engine(options_)};
  });
}

int rh_cpu_engine_free(rh_cpu_engine_t engine) {
  return rh::capi::guarded([&] { delete engine; });
}

int rh_cpu_engine_options_get(rh_cpu_engine_t engine, rh_cpu_engine_options* out) {
  return rh::capi::guarded([&] {
    const rh::cpu::Engine& e = rh::capi::need(engine, "engine")->engine;
    *rh::capi::need(out, "out") = {
        .threads = static_cast<int64_t>(e.threads()),
        .chunk_bytes = static_cast<int64_t>(e.chunk_bytes()),
        .gram = e.gram_strategy() == rh::cpu::GramStrategy::full ? RH_CPU_GRAM_FULL
                                                                  : RH_CPU_GRAM_INCREMENTAL,
        .reserved = 0};
  });
}

int rh_cpu_engine_set_profiler(rh_cpu_engine_t engine, rh_cpu_profiler_t profiler) {
  return rh::capi::guarded([&] {
    rh::capi::need(engine, "engine")
        ->engine.set_profiler(profiler ? profiler->profiler : nullptr);
  });
}

int rh_cpu_update(rh_cpu_engine_t engine, const rh_cpu_state* previous, const rh_cpu_batch* batch,
                  const rh_cpu_config* config, rh_cpu_trace_fn trace, void* trace_user,
                  rh_cpu_state* next, rh_cpu_diagnostics* diagnostics) {
  return rh::capi::guarded([&] {
    using rh::capi::need;
    need(engine, "engine");
    need(previous, "previous");
    need(batch, "batch");
    need(next, "next");
    need(diagnostics, "diagnostics");
    rh::capi::check_dims(*previous, *batch, *next);
    const rh::Config parsed = rh::capi::read_config(*need(config, "config"));
    if (batch->dtype == RH_CPU_FLOAT32) {
      rh::capi::update<float>(engine->engine, *previous, *batch, parsed, trace, trace_user, *next,
                              *diagnostics);
    } else {
      rh::capi::update<double>(engine->engine, *previous, *batch, parsed, trace, trace_user,
                               *next, *diagnostics);
    }
  });
}

}  // extern "C"
