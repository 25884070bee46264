/* rh_cpu.h: the C ABI of librhuber_cpu.so, the renewable Huber CPU engine, its brick profiler and
 * the tuner's model reader.
 *
 * Conventions (those of rh_cuda.h, shared/conventions.md): every call returns an int status
 * (RH_CPU_OK or an RH_CPU_ERROR_* code) and writes its results through trailing out-pointers; the
 * message of the last failure on the calling thread is rh_cpu_last_error(). No exception crosses
 * this boundary. Handles are opaque; config, state, batch and diagnostics are plain structs the
 * caller allocates, and arrays cross as pointers into the caller's memory (never copied on the
 * way in). Strings the library allocates (rh_cpu_string) are released with rh_cpu_string_free.
 *
 * The library imports nothing from Python: rhuber._native binds it with ctypes, which releases
 * the GIL for the duration of every call.
 */
#ifndef RH_CPU_H_
#define RH_CPU_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RH_CPU_API __attribute__((visibility("default")))

/* ABI version: the major changes when a struct or a signature changes incompatibly (a field
 * appended to a struct the caller allocates is such a change); the minor when calls are added. */
#define RH_CPU_ABI_VERSION_MAJOR 3
#define RH_CPU_ABI_VERSION_MINOR 0
#define RH_CPU_ABI_VERSION ((RH_CPU_ABI_VERSION_MAJOR << 16) | RH_CPU_ABI_VERSION_MINOR)

/* Status codes. */
#define RH_CPU_OK 0
#define RH_CPU_ERROR_INVALID_ARGUMENT 1 /* bad input, parameter, shape or dtype; nothing changed */
#define RH_CPU_ERROR_NUMERICAL 2        /* the result would not be finite; nothing changed */
#define RH_CPU_ERROR_OUT_OF_MEMORY 3
#define RH_CPU_ERROR_MODEL_FORMAT 4     /* a tuner model file is corrupt or of another format */
#define RH_CPU_ERROR_INTERNAL 5

/* Element types. */
#define RH_CPU_FLOAT32 1
#define RH_CPU_FLOAT64 2

/* rh_cpu_engine_options.gram: how the Newton matrix's Gram is formed. */
#define RH_CPU_GRAM_INCREMENTAL 0 /* rank-k corrections over curvature flips */
#define RH_CPU_GRAM_FULL 1        /* afresh whenever the curvature set changes */

/* rh_cpu_diagnostics.solver and rh_cpu_iteration.solver. */
#define RH_CPU_SOLVER_CHOLESKY 0
#define RH_CPU_SOLVER_LU 1
#define RH_CPU_SOLVER_SVD 2
#define RH_CPU_SOLVER_LAMM 3
#define RH_CPU_SOLVER_PROX_NEWTON 4
#define RH_CPU_SOLVER_QR 5

/* rh_cpu_config.l1_solver and .curvature (shared/spec/method.md). */
#define RH_CPU_L1_LAMM 0
#define RH_CPU_L1_PROX_NEWTON 1
#define RH_CPU_CURVATURE_INDICATOR 0
#define RH_CPU_CURVATURE_SMOOTHED 1

/* rh_cpu_config.factorization (contract v4, "Square-root information"). */
#define RH_CPU_FACTORIZATION_CHOLESKY 0
#define RH_CPU_FACTORIZATION_QR 1

/* rh_cpu_iteration.phase. */
#define RH_CPU_PHASE_PILOT 0
#define RH_CPU_PHASE_MAIN 1

typedef struct rh_cpu_engine_s* rh_cpu_engine_t;
typedef struct rh_cpu_profiler_s* rh_cpu_profiler_t;
typedef struct rh_cpu_model_s* rh_cpu_model_t;

/* A NUL-terminated string the library allocated; free it with rh_cpu_string_free. */
typedef char* rh_cpu_string;

typedef struct rh_cpu_engine_options {
  int64_t threads;     /* worker threads including the caller's; 0: the core count */
  int64_t chunk_bytes; /* bytes of X per row chunk of a fused pass; 0: 256 KiB */
  int32_t gram;        /* RH_CPU_GRAM_* */
  int32_t reserved;    /* must be 0 */
} rh_cpu_engine_options;

/* shared/spec/method.md, "Configuration". has_* = 0 means None. New fields are appended at the
 * end (with a major version bump). */
typedef struct rh_cpu_config {
  int32_t fit_intercept;
  int32_t has_tau;
  int32_t has_tol;
  int32_t has_lambda_scale;
  int32_t has_half_life;
  int32_t l1_solver;          /* RH_CPU_L1_* */
  int32_t curvature;          /* RH_CPU_CURVATURE_* */
  int32_t inference_matrices; /* accumulate G and K */
  double epsilon;
  double tau;
  double alpha;
  double ridge;
  double tol;
  int64_t max_iter;
  double lambda_scale;
  double bandwidth_scale;
  double half_life;
  int32_t factorization; /* RH_CPU_FACTORIZATION_* */
  int32_t reserved;      /* must be 0 */
  /* New fields here, at the end (a major version bump; docs/native.md, "Adding a field"). */
} rh_cpu_config;

/* A state of `dim` coefficients, every array of `dtype`, row-major, C-contiguous: coef (dim),
 * information, gram and score_gram (dim x dim). As an input it is read only; gram and
 * score_gram are read when has_matrices. As an output the caller provides coef and information,
 * and gram and score_gram whenever the new state may keep them (config.inference_matrices, or an
 * input state that keeps them); the engine sets has_matrices and the scalars. New fields are
 * appended at the end (with a major version bump). */
typedef struct rh_cpu_state {
  int32_t dtype;        /* RH_CPU_FLOAT32 / RH_CPU_FLOAT64 */
  int32_t has_matrices; /* gram and score_gram are part of the state */
  int64_t dim;
  void* coef;
  void* information;
  void* gram;
  void* score_gram;
  int64_t n_samples_seen;
  double effective_weight;
  int64_t batch_count;
  double previous_lambda;
  double scale;
  double score_sq_sum;     /* sum w psi(r)^2 */
  double curvature_sum;    /* sum w c */
  double curvature_sq_sum; /* sum w c^2 */
  double inference_weight; /* sum w */
  int64_t inference_batches;
  /* factorization="qr": the square-root information R~ (dim x dim, upper triangular) and z~
   * (dim); NULL both in the Cholesky mode. As an output the caller provides both when the
   * config's factorization is RH_CPU_FACTORIZATION_QR; the engine sets has_square_root. */
  int32_t has_square_root;
  int32_t reserved;
  void* information_factor;
  void* information_vector;
  /* New fields here, at the end (a major version bump; docs/native.md, "Adding a field"). */
} rh_cpu_state;

/* One batch: X (rows x cols), y and sample_weight (rows), row-major and C-contiguous, of one
 * dtype. The engine checks their values (finite, weights >= 0): an error names the first bad
 * row. */
typedef struct rh_cpu_batch {
  int32_t dtype;
  int32_t reserved; /* must be 0 */
  int64_t rows;
  int64_t cols;
  const void* X;
  const void* y;
  const void* sample_weight;
} rh_cpu_batch;

typedef struct rh_cpu_diagnostics {
  int32_t converged;
  int32_t solver; /* RH_CPU_SOLVER_* */
  int64_t n_iter;
  double objective;
  double lambda;
  double bandwidth;
  int64_t line_search_halvings;
  double rcond; /* NaN for a penalized batch (no Newton system) */
  double drift_statistic;
  double drift_df;
  double drift_pvalue;
  /* LAMM's distance from the minimizer in coefficient units (rh::Diagnostics); NaN for a batch
   * that LAMM did not solve (ABI 3) */
  double stationarity_step;
} rh_cpu_diagnostics;

/* A tensor's statistics in a trace record; count 0: the tensor was not formed. */
typedef struct rh_cpu_tensor_stats {
  int64_t count;
  int64_t nan;
  int64_t inf;
  double min; /* of the finite entries (NaN without one), likewise max, mean */
  double max;
  double mean;
  double std;
  double l2;
} rh_cpu_tensor_stats;

/* One solver iteration (docs/tracing.md). */
typedef struct rh_cpu_iteration {
  int32_t phase;  /* RH_CPU_PHASE_* */
  int32_t solver; /* RH_CPU_SOLVER_* */
  int64_t iteration;
  double rcond;
  double objective;
  double coef_norm;
  double step_norm;
  double step_scale;
  int64_t halvings;
  int32_t search_exhausted;
  int32_t reserved;
  int64_t rows;
  int64_t quadratic_rows;
  rh_cpu_tensor_stats residual;
  rh_cpu_tensor_stats score;
  rh_cpu_tensor_stats hessian_diagonal;
} rh_cpu_iteration;

/* Receives a batch's iteration records, in order, on the calling thread after the solve (also
 * when the update fails: a failing batch is the one worth reading). */
typedef void (*rh_cpu_trace_fn)(void* user, const rh_cpu_iteration* record);

/* ---- The library. ---- */

/* RH_CPU_ABI_VERSION of the library actually loaded. */
RH_CPU_API uint32_t rh_cpu_abi_version(void);
/* The rhuber version the library was built for ("0.9.0"). */
RH_CPU_API const char* rh_cpu_version(void);
/* The message of the last failed call on this thread ("" if none); valid until the next call. */
RH_CPU_API const char* rh_cpu_last_error(void);
/* "ok", "invalid_argument", ...: a stable name for a status code. */
RH_CPU_API const char* rh_cpu_status_name(int status);
RH_CPU_API void rh_cpu_string_free(rh_cpu_string string);
/* What of contracts v3 and v4 the engine implements, comma-separated ("lambda_schedule,..."). */
RH_CPU_API const char* rh_cpu_contract_features(void);
/* The BLAS the engine was built on and its thread count. */
RH_CPU_API const char* rh_cpu_blas_provider(void);
RH_CPU_API int64_t rh_cpu_blas_threads(void);

/* ---- The engine. ---- */

/* options may be NULL (the defaults). */
RH_CPU_API int rh_cpu_engine_create(const rh_cpu_engine_options* options, rh_cpu_engine_t* out);
RH_CPU_API int rh_cpu_engine_free(rh_cpu_engine_t engine);
/* The engine's resolved options (chunk_bytes never 0). */
RH_CPU_API int rh_cpu_engine_options_get(rh_cpu_engine_t engine, rh_cpu_engine_options* out);
/* Time every later update's bricks on `profiler` (NULL: stop). The engine keeps the profiler
 * alive while attached. Attach between updates only. */
RH_CPU_API int rh_cpu_engine_set_profiler(rh_cpu_engine_t engine, rh_cpu_profiler_t profiler);

/* One batch transition: next = update(previous, batch, config), as a transaction: on any error
 * `next` is left untouched and `previous` is never written. previous->batch_count 0 (with zero
 * arrays) starts a stream. Updates on one engine run one at a time. trace may be NULL. */
RH_CPU_API int rh_cpu_update(rh_cpu_engine_t engine, const rh_cpu_state* previous,
                             const rh_cpu_batch* batch, const rh_cpu_config* config,
                             rh_cpu_trace_fn trace, void* trace_user, rh_cpu_state* next,
                             rh_cpu_diagnostics* diagnostics);

/* ---- The brick profiler (docs/profiling.md) on the engine's brick table. ---- */

/* The engine's bricks as JSON: [[name, category], ...]. */
RH_CPU_API int rh_cpu_bricks_table_json(rh_cpu_string* out);
/* sync_mode: "immediate", "per_batch", "deferred" or "off"; trace_capacity: events kept per
 * thread (0: counters only); clock: "cpu" (TSC) or "steady". */
RH_CPU_API int rh_cpu_profiler_create(const char* sync_mode, uint64_t trace_capacity,
                                      int32_t track_page_faults, const char* clock,
                                      rh_cpu_profiler_t* out);
RH_CPU_API int rh_cpu_profiler_free(rh_cpu_profiler_t profiler);
RH_CPU_API int rh_cpu_profiler_set_sync_mode(rh_cpu_profiler_t profiler, const char* mode);
/* The sync mode's name (a static string) and the clock's. */
RH_CPU_API int rh_cpu_profiler_sync_mode(rh_cpu_profiler_t profiler, const char** out);
RH_CPU_API int rh_cpu_profiler_clock(rh_cpu_profiler_t profiler, rh_cpu_string* out);
RH_CPU_API int rh_cpu_profiler_brick_id(rh_cpu_profiler_t profiler, const char* name,
                                        int32_t* out);
RH_CPU_API int rh_cpu_profiler_begin_batch(rh_cpu_profiler_t profiler, uint64_t rows);
RH_CPU_API int rh_cpu_profiler_set_iteration(rh_cpu_profiler_t profiler, int64_t index);
RH_CPU_API int rh_cpu_profiler_end_batch(rh_cpu_profiler_t profiler);
RH_CPU_API int rh_cpu_profiler_now_ns(rh_cpu_profiler_t profiler, int64_t* out);
/* A scope timed by the caller: start_ns on CLOCK_MONOTONIC, on the calling thread; batch -1:
 * none. */
RH_CPU_API int rh_cpu_profiler_record(rh_cpu_profiler_t profiler, int32_t brick, int64_t start_ns,
                                      int64_t duration_ns, uint64_t elements, uint64_t bytes,
                                      uint64_t flops, int64_t batch, int64_t iteration,
                                      int32_t depth);
RH_CPU_API int rh_cpu_profiler_set_metadata(rh_cpu_profiler_t profiler, const char* key,
                                            const char* value);
RH_CPU_API int rh_cpu_profiler_name_thread(rh_cpu_profiler_t profiler, const char* name);
RH_CPU_API int rh_cpu_profiler_flush(rh_cpu_profiler_t profiler);
RH_CPU_API int rh_cpu_profiler_reset(rh_cpu_profiler_t profiler);

/* rh_cpu_profiler_export: what is written. */
#define RH_CPU_EXPORT_REPORT 0       /* the versioned JSON report (report.schema.json) */
#define RH_CPU_EXPORT_CHROME_TRACE 1 /* Chrome trace-event JSON */
#define RH_CPU_EXPORT_TABLE 2        /* the text table; text: its title */
#define RH_CPU_EXPORT_BREAKDOWN 3    /* JSON: setup, batches, steady figures and "text" */
#define RH_CPU_EXPORT_ROOFLINE 4     /* JSON list; gb_per_s and gflop_per_s: the roofs */
#define RH_CPU_EXPORT_GRAPH 5        /* JSON: nodes, edges, critical_path, rank, dot, ascii */
RH_CPU_API int rh_cpu_profiler_export(rh_cpu_profiler_t profiler, int32_t what, const char* text,
                                      double gb_per_s, double gflop_per_s, rh_cpu_string* out);

/* ---- The tuner's models (docs/tuner.md, "C++ inference"). ---- */

/* Read and validate a model file (or its bytes); RH_CPU_ERROR_MODEL_FORMAT when corrupt. */
RH_CPU_API int rh_cpu_model_load(const char* path, rh_cpu_model_t* out);
RH_CPU_API int rh_cpu_model_from_bytes(const void* data, uint64_t size, rh_cpu_model_t* out);
RH_CPU_API int rh_cpu_model_free(rh_cpu_model_t model);
/* JSON: kind, n_features, n_outputs, n_trees, feature_names and metadata (strings). */
RH_CPU_API int rh_cpu_model_info_json(rh_cpu_model_t model, rh_cpu_string* out);
/* x: rows x n_features float64, row-major; out: rows x n_outputs (the regressor's prediction,
 * or the classifiers' class probabilities). */
RH_CPU_API int rh_cpu_model_predict(rh_cpu_model_t model, const double* x, int64_t rows,
                                    int64_t cols, double* out);

/* ---- The L1 penalty's regime screen (docs/tuner.md, "The penalty's regime"; ABI 2.1). ---- */

/* The gradient of the smooth part at the start point over `rows` rows: gradient[j] =
 * |x_j' clip(r0, -tau, tau)| / rows, r0 = y - median(y) (fit_intercept) or y. x: rows x cols of
 * `dtype`, row-major, C-contiguous; y: rows of `y_dtype`, contiguous; gradient: cols float64.
 * has_tau 0: tau is mad_factor times the median absolute deviation of r0. *tau_out: the tau
 * used, 0 where the screen cannot tell (no rows, a target not finite, a scale that is 0 or not
 * finite: the gradient is then 0). */
RH_CPU_API int rh_cpu_start_gradient(const void* x, int32_t dtype, int64_t rows, int64_t cols,
                                     const void* y, int32_t y_dtype, int32_t has_tau,
                                     double tau, double mad_factor, int32_t fit_intercept,
                                     double* gradient, double* tau_out);

/* ---- Predictions (docs/native.md, "Predictions"; ABI 2.2). ---- */

/* out[i] = x_i . coef + intercept for `rows` rows of `cols` entries, all of `dtype` (x row-major,
 * C-contiguous; coef cols entries; out rows entries), summed as the engine sums its residuals'
 * products, on `threads` threads (0: all cores) of the engine's pool from 2^20 entries (below,
 * on the calling thread). */
RH_CPU_API int rh_cpu_predict(const void* x, int32_t dtype, int64_t rows, int64_t cols,
                              const void* coef, double intercept, int32_t threads, void* out);

/* ---- Test hooks (native/cpu/fault_injection.hpp; tests/test_reliability_faults.py). ---- */

/* The next `after` workspace allocations pass, then `count` fail (RH_CPU_ERROR_OUT_OF_MEMORY). */
RH_CPU_API int rh_cpu_fault_fail_allocations(int64_t after, int64_t count);
/* The next `count` attempts of a ladder rung (RH_CPU_SOLVER_CHOLESKY, _LU, _SVD) fail. */
RH_CPU_API int rh_cpu_fault_fail_rung(int32_t rung, int64_t count);
/* Disarm every hook; *pending: how many injected faults were still pending. */
RH_CPU_API int rh_cpu_fault_clear(int64_t* pending);

#ifdef __cplusplus
}
#endif

#endif /* RH_CPU_H_ */
