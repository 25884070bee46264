/* rh_cuda.h: the C ABI of the renewable Huber CUDA engine.
 *
 * One engine is bound to one CUDA device and owns a stream (or borrows the caller's), cuBLAS and
 * cuSOLVER handles and every workspace. A state handle keeps the information matrix resident on
 * the device between batches; rh_cuda_update reads one state and writes another (or the same
 * one), as a transaction: on any error nothing observable changes.
 *
 * Conventions (shared/conventions.md): every call returns an int status (RH_CUDA_OK or an
 * RH_CUDA_ERROR_* code) and writes results through trailing out-pointers; the message of the
 * last failure on the calling thread is rh_cuda_last_error(). No exception crosses this boundary
 * and nothing here calls back into the caller. native/contracts/rh_cuda_contract.json describes
 * this header; tests/test_cuda_abi.py and native/cuda/abi_contract.cpp keep the two in step.
 */
#ifndef RH_CUDA_H_
#define RH_CUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RH_CUDA_API __attribute__((visibility("default")))

/* ABI version: the major changes when a struct or signature changes incompatibly (2.0: a field
 * appended to rh_cuda_diagnostics, which the caller allocates; 4.0: contract v4's forgetting in
 * rh_cuda_config and drift test in rh_cuda_diagnostics), and with it the library's soname
 * (librh_cuda.so.<major>). The minor counts compatible additions (4.1: factorization="qr" in
 * fields that were reserved, must-be-0, and rh_cuda_state_load_factor / rh_cuda_state_read_factor). */
#define RH_CUDA_ABI_VERSION_MAJOR 5
#define RH_CUDA_ABI_VERSION_MINOR 0
#define RH_CUDA_ABI_VERSION ((RH_CUDA_ABI_VERSION_MAJOR << 16) | RH_CUDA_ABI_VERSION_MINOR)

/* Status codes. */
#define RH_CUDA_OK 0
#define RH_CUDA_ERROR_INVALID_ARGUMENT 1 /* bad input, parameter, layout, dtype or device */
#define RH_CUDA_ERROR_NUMERICAL 2        /* the result would not be finite; nothing changed */
#define RH_CUDA_ERROR_NO_DEVICE 3        /* no usable CUDA device (or driver) */
#define RH_CUDA_ERROR_OUT_OF_MEMORY 4
#define RH_CUDA_ERROR_UNSUPPORTED 5      /* a request this ABI version refuses by design */
#define RH_CUDA_ERROR_CUDA 6             /* the CUDA runtime, cuBLAS or cuSOLVER failed */
#define RH_CUDA_ERROR_INTERNAL 7

/* Element types. */
#define RH_CUDA_FLOAT32 1
#define RH_CUDA_FLOAT64 2

/* Where an array lives: DLPack's device-type codes. */
#define RH_CUDA_DEVICE_CPU 1
#define RH_CUDA_DEVICE_CUDA 2

/* rh_cuda_array.stream and rh_cuda_engine_options.stream: DLPack's stream convention. */
#define RH_CUDA_STREAM_NONE 0           /* the data is ready; no ordering needed */
#define RH_CUDA_STREAM_LEGACY 1         /* the legacy default stream */
#define RH_CUDA_STREAM_PER_THREAD 2     /* the per-thread default stream */

/* The linear-solver rung of the last Newton step, or LAMM for a penalized batch; QR (since ABI
 * 4.1) for a step of factorization="qr" solved by its triangle (SVD when it is rank-deficient). */
#define RH_CUDA_SOLVER_CHOLESKY 0
#define RH_CUDA_SOLVER_LU 1
#define RH_CUDA_SOLVER_SVD 2
#define RH_CUDA_SOLVER_LAMM 3
#define RH_CUDA_SOLVER_QR 4

/* rh_cuda_engine_set_profiling: how the bricks are timed (since ABI 1.1). */
#define RH_CUDA_PROFILE_OFF 0       /* nothing recorded: one branch per brick */
#define RH_CUDA_PROFILE_PER_BATCH 1 /* CUDA events, read once at the end of each batch */
#define RH_CUDA_PROFILE_DEFERRED 2  /* CUDA events, read only when a profile is exported */

/* rh_cuda_engine_profile_json: what is exported. */
#define RH_CUDA_PROFILE_FORMAT_REPORT 0 /* the bricks report (docs/bricks.md), schema 1 */
#define RH_CUDA_PROFILE_FORMAT_TRACE 1  /* Chrome trace-event JSON (Perfetto, chrome://tracing) */

/* The curvature of the information update (rh_cuda_config.curvature; contract v3). */
#define RH_CUDA_CURVATURE_INDICATOR 0 /* 1{|r| <= tau}, as in the Newton matrix */
#define RH_CUDA_CURVATURE_SMOOTHED 1  /* the paper's c_h with the scheduled bandwidth h_b */

/* How the history is held and each Newton step solved (rh_cuda_config.factorization; contract v4,
 * since ABI 4.1): the information matrix J~ and the equilibrated ladder, or the square-root
 * information (R~, z~) and Householder QR of stacked rows (cuSOLVER's geqrf). */
#define RH_CUDA_FACTORIZATION_CHOLESKY 0
#define RH_CUDA_FACTORIZATION_QR 1

typedef struct rh_cuda_engine_s* rh_cuda_engine_t;
typedef struct rh_cuda_state_s* rh_cuda_state_t;

/* A dense row-major matrix (a vector is cols = 1). Rows must be contiguous: row_stride == cols,
 * in elements. For a CUDA array, `stream` is the stream on which its contents become valid; the
 * engine orders its work after the work already queued there (see RH_CUDA_STREAM_*). */
typedef struct rh_cuda_array {
  void* data;
  int64_t rows;
  int64_t cols;
  int64_t row_stride;
  int32_t dtype;       /* RH_CUDA_FLOAT32 / RH_CUDA_FLOAT64 */
  int32_t device_type; /* RH_CUDA_DEVICE_CPU / RH_CUDA_DEVICE_CUDA */
  int32_t device_id;   /* the CUDA ordinal; 0 for host arrays */
  int32_t reserved;    /* must be 0 */
  uint64_t stream;
} rh_cuda_array;

typedef struct rh_cuda_engine_options {
  int32_t device;        /* CUDA ordinal */
  int32_t borrow_stream; /* 0: the engine creates its own non-blocking stream */
  uint64_t stream;       /* the borrowed stream (a cudaStream_t or RH_CUDA_STREAM_*) */
} rh_cuda_engine_options;

/* shared/spec/method.md, "Configuration". has_tau / has_tol / has_lambda_scale = 0 means None.
 * The fields after max_iter are contract v3's (since ABI 3.0): the lambda schedule (instead of
 * alpha, which must then be 0), the curvature of the information update (RH_CUDA_CURVATURE_*)
 * with its bandwidth scale (> 0), and whether to accumulate the inference matrices G and K. */
typedef struct rh_cuda_config {
  int32_t fit_intercept;
  int32_t has_tau;
  int32_t has_tol;
  int32_t reserved; /* must be 0 */
  double epsilon;
  double tau;
  double alpha;
  double ridge;
  double tol;
  int64_t max_iter;
  int32_t has_lambda_scale;
  int32_t curvature;
  int32_t inference_matrices;
  int32_t reserved2; /* must be 0 */
  double lambda_scale;
  double bandwidth_scale;
  /* Contract v4 (since ABI 4.0): forgetting. has_half_life = 0 means None; otherwise the history
   * is discounted by 2^(-batch weight / half_life) (> 0, finite) before each batch. */
  int32_t has_half_life;
  int32_t factorization; /* RH_CUDA_FACTORIZATION_* (since ABI 4.1; before it a reserved 0) */
  double half_life;
} rh_cuda_config;

/* The scalar part of a state; coef (dim) and information (dim x dim, row-major) travel as
 * arrays, and so do the inference matrices G and K (dim x dim) when has_matrices. The inference
 * sums (contract v3, since ABI 3.0) cover inference_batches batches. has_factor (since ABI 4.1;
 * before it a reserved 0): the state holds factorization="qr"'s square-root information, R~
 * (dim x dim, row-major, upper triangular, diagonal >= 0) and z~ (dim), which travel through
 * rh_cuda_state_load_factor / rh_cuda_state_read_factor; information is then R~^T R~. */
typedef struct rh_cuda_state_info {
  int32_t dtype;
  int32_t has_factor;
  int64_t dim;
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
  int32_t has_matrices;
  int32_t reserved2; /* must be 0 */
} rh_cuda_state_info;

typedef struct rh_cuda_diagnostics {
  int32_t converged;
  int32_t solver; /* RH_CUDA_SOLVER_* */
  int64_t n_iter;
  double objective;
  double lambda;
  double bandwidth;
  int64_t line_search_halvings;
  /* The 1-norm reciprocal condition estimate of the equilibrated Newton matrix for the last
   * step's rung (shared/spec/method.md, contract v2): 0 for RH_CUDA_SOLVER_SVD, NaN for a
   * penalized batch (RH_CUDA_SOLVER_LAMM: no Newton system). Since ABI 2.0. */
  double rcond;
  /* Contract v4, the drift test (since ABI 4.0): T, its degrees of freedom and P(chi2_df > T);
   * NaN for the first batch, a penalized batch or history, and no residual inside tau. */
  double drift_statistic;
  double drift_df;
  double drift_pvalue;
  /* LAMM's distance from the minimizer in coefficient units (rh::Diagnostics::stationarity_step);
   * NaN for a batch that LAMM did not solve. Since ABI 5.0. */
  double stationarity_step;
} rh_cuda_diagnostics;

/* Counters for tests and profiling: after warm-up a stream of same-shaped batches must not move
 * device_allocations. */
typedef struct rh_cuda_engine_stats {
  int64_t updates;
  int64_t device_allocations;
  int64_t device_bytes;
  int64_t pinned_bytes;
} rh_cuda_engine_stats;

/* RH_CUDA_ABI_VERSION of the library actually loaded. */
RH_CUDA_API uint32_t rh_cuda_abi_version(void);
/* The message of the last failed call on this thread ("" if none); valid until the next call. */
RH_CUDA_API const char* rh_cuda_last_error(void);
/* "ok", "invalid_argument", ...: a stable name for a status code. */
RH_CUDA_API const char* rh_cuda_status_name(int status);
/* The number of CUDA devices; RH_CUDA_ERROR_NO_DEVICE when there is none or no driver. */
RH_CUDA_API int rh_cuda_device_count(int32_t* out);

RH_CUDA_API int rh_cuda_engine_create(const rh_cuda_engine_options* options,
                                      rh_cuda_engine_t* out);
/* States created by the engine stay valid until they are freed themselves. */
RH_CUDA_API int rh_cuda_engine_free(rh_cuda_engine_t engine);
/* The engine's stream as a cudaStream_t value: the stream to pass to __dlpack__ (a borrowed
 * stream 0, the legacy default stream, is reported as RH_CUDA_STREAM_LEGACY: DLPack forbids 0). */
RH_CUDA_API int rh_cuda_engine_stream(rh_cuda_engine_t engine, uint64_t* out);
RH_CUDA_API int rh_cuda_engine_stats_get(rh_cuda_engine_t engine, rh_cuda_engine_stats* out);

/* Per-brick timing of the engine's updates and predictions on CUDA events (docs/cuda.md,
 * "Profiling"); mode is RH_CUDA_PROFILE_*. Switching on from off starts a new profile (the
 * previous one is discarded); switching between the on modes keeps it; switching off keeps it
 * readable. Since ABI 1.1. */
RH_CUDA_API int rh_cuda_engine_set_profiling(rh_cuda_engine_t engine, int32_t mode);
/* The engine's profile as NUL-terminated JSON (format: RH_CUDA_PROFILE_FORMAT_*). *needed is
 * set to the bytes it takes, NUL included, whenever the profile could be produced; buffer may be
 * NULL when capacity is 0 (a size query, RH_CUDA_OK). A non-zero capacity below *needed is RH_CUDA_ERROR_INVALID_ARGUMENT, and
 * the buffer is left untouched. Reading a profile resolves its pending events (synchronizing
 * the engine's stream). RH_CUDA_ERROR_INVALID_ARGUMENT if profiling was never switched on.
 * Since ABI 1.1. */
RH_CUDA_API int rh_cuda_engine_profile_json(rh_cuda_engine_t engine, int32_t format, char* buffer,
                                            uint64_t capacity, uint64_t* needed);

/* An empty state (all zeros, batch_count 0) of `dim` coefficients, resident on the engine's
 * device. */
RH_CUDA_API int rh_cuda_state_create(rh_cuda_engine_t engine, int32_t dtype, int64_t dim,
                                     rh_cuda_state_t* out);
RH_CUDA_API int rh_cuda_state_free(rh_cuda_state_t state);
/* Replaces the state with host arrays (a checkpoint, or a state from another engine). gram and
 * score_gram (G and K) are read when info->has_matrices, and may be NULL otherwise. A state with
 * info->has_factor needs rh_cuda_state_load_factor. */
RH_CUDA_API int rh_cuda_state_load(rh_cuda_state_t state, const rh_cuda_state_info* info,
                                   const rh_cuda_array* coef, const rh_cuda_array* information,
                                   const rh_cuda_array* gram, const rh_cuda_array* score_gram);
/* Writes the state into host arrays of its dtype and shape, and its scalars into *info; G and K
 * into gram and score_gram when the state keeps them (info->has_matrices), which may be NULL to
 * skip them. A state with info->has_factor keeps R~ and z~ for rh_cuda_state_read_factor. */
RH_CUDA_API int rh_cuda_state_read(rh_cuda_state_t state, rh_cuda_state_info* info,
                                   const rh_cuda_array* coef, const rh_cuda_array* information,
                                   const rh_cuda_array* gram, const rh_cuda_array* score_gram);
/* As rh_cuda_state_load, and R~ (factor, dim x dim) and z~ (vector, dim x 1) when
 * info->has_factor (NULL otherwise). Since ABI 4.1. */
RH_CUDA_API int rh_cuda_state_load_factor(rh_cuda_state_t state, const rh_cuda_state_info* info,
                                          const rh_cuda_array* coef,
                                          const rh_cuda_array* information,
                                          const rh_cuda_array* gram,
                                          const rh_cuda_array* score_gram,
                                          const rh_cuda_array* factor,
                                          const rh_cuda_array* vector);
/* As rh_cuda_state_read, and R~ and z~ into factor and vector when the state holds them
 * (info->has_factor); either may be NULL to skip it. Since ABI 4.1. */
RH_CUDA_API int rh_cuda_state_read_factor(rh_cuda_state_t state, rh_cuda_state_info* info,
                                          const rh_cuda_array* coef,
                                          const rh_cuda_array* information,
                                          const rh_cuda_array* gram,
                                          const rh_cuda_array* score_gram,
                                          const rh_cuda_array* factor,
                                          const rh_cuda_array* vector);

/* One batch transition: next = update(previous, X, y, sample_weight, config). X (n x p), y
 * (n x 1) and sample_weight (n x 1, or NULL for unit weights) are all on the host (staged) or
 * all on the engine's device (read in place, never converted; a CUDA array's pointer must be
 * device or managed memory of that device, as cudaPointerGetAttributes reports). `next` may be `previous`. The
 * call returns after the engine has finished with the caller's memory. */
RH_CUDA_API int rh_cuda_update(rh_cuda_engine_t engine, rh_cuda_state_t previous,
                               const rh_cuda_array* X, const rh_cuda_array* y,
                               const rh_cuda_array* sample_weight, const rh_cuda_config* config,
                               rh_cuda_state_t next, rh_cuda_diagnostics* diagnostics);

/* out = X coef_S + intercept for host X (n x p) into host out (n x 1); the state has p + 1
 * coefficients with an intercept, p without. Device-resident prediction is refused with
 * RH_CUDA_ERROR_UNSUPPORTED. */
RH_CUDA_API int rh_cuda_predict(rh_cuda_engine_t engine, rh_cuda_state_t state,
                                const rh_cuda_array* X, const rh_cuda_array* out);

#ifdef __cplusplus
}
#endif

#endif /* RH_CUDA_H_ */
