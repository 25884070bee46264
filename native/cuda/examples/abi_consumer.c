/* A C program on the ABI alone: creates an engine on device 0, streams two small batches, reads
 * the state back. Without a GPU it prints the engine's explanation and exits with status 2 —
 * which is how scripts/gpu_check.sh and the docs show the "no CUDA device" path. */
#include <stdio.h>

#include "rh_cuda.h"

static int report(int status, const char* what) {
  if (status != RH_CUDA_OK) {
    fprintf(stderr, "%s failed (%s): %s\n", what, rh_cuda_status_name(status),
            rh_cuda_last_error());
  }
  return status;
}

int main(void) {
  enum { n = 8, p = 2, d = p + 1 };
  double X[n * p];
  double y[n];
  double coef[d];
  double information[d * d];
  double factor[d * d];
  double vector[d];
  for (int i = 0; i < n; ++i) {
    X[2 * i] = i;
    X[2 * i + 1] = (i * 7) % 5;
    y[i] = 1.0 + 2.0 * X[2 * i] - X[2 * i + 1] + ((i % 3) - 1) * 0.1;
  }
  if (rh_cuda_abi_version() != RH_CUDA_ABI_VERSION) {
    fprintf(stderr, "ABI mismatch: header %u, library %u\n", (unsigned)RH_CUDA_ABI_VERSION,
            (unsigned)rh_cuda_abi_version());
    return 1;
  }
  const rh_cuda_engine_options options = {0, 0, RH_CUDA_STREAM_NONE};
  rh_cuda_engine_t engine = NULL;
  if (report(rh_cuda_engine_create(&options, &engine), "rh_cuda_engine_create")) return 2;

  rh_cuda_state_t state = NULL;
  int status = report(rh_cuda_state_create(engine, RH_CUDA_FLOAT64, d, &state),
                      "rh_cuda_state_create");
  const rh_cuda_array Xa = {X, n, p, p, RH_CUDA_FLOAT64, RH_CUDA_DEVICE_CPU, 0, 0, 0};
  const rh_cuda_array ya = {y, n, 1, 1, RH_CUDA_FLOAT64, RH_CUDA_DEVICE_CPU, 0, 0, 0};
  const rh_cuda_config config = {.fit_intercept = 1,
                                 .epsilon = 1.345,
                                 .max_iter = 500,
                                 .curvature = RH_CUDA_CURVATURE_INDICATOR,
                                 .bandwidth_scale = 1.0};
  rh_cuda_diagnostics diagnostics;
  for (int batch = 0; status == RH_CUDA_OK && batch < 2; ++batch) {
    status = report(rh_cuda_update(engine, state, &Xa, &ya, NULL, &config, state, &diagnostics),
                    "rh_cuda_update");
  }
  /* A third batch in factorization="qr" (ABI 4.1): the Cholesky state continues from chol(J~). */
  rh_cuda_config qr = config;
  qr.factorization = RH_CUDA_FACTORIZATION_QR;
  if (status == RH_CUDA_OK) {
    status = report(rh_cuda_update(engine, state, &Xa, &ya, NULL, &qr, state, &diagnostics),
                    "rh_cuda_update (qr)");
  }
  rh_cuda_state_info info;
  const rh_cuda_array coef_a = {coef, d, 1, 1, RH_CUDA_FLOAT64, RH_CUDA_DEVICE_CPU, 0, 0, 0};
  const rh_cuda_array info_a = {information, d, d, d, RH_CUDA_FLOAT64, RH_CUDA_DEVICE_CPU, 0, 0, 0};
  const rh_cuda_array factor_a = {factor, d, d, d, RH_CUDA_FLOAT64, RH_CUDA_DEVICE_CPU, 0, 0, 0};
  const rh_cuda_array vector_a = {vector, d, 1, 1, RH_CUDA_FLOAT64, RH_CUDA_DEVICE_CPU, 0, 0, 0};
  if (status == RH_CUDA_OK) {
    status = report(rh_cuda_state_read_factor(state, &info, &coef_a, &info_a, NULL, NULL,
                                              &factor_a, &vector_a),
                    "rh_cuda_state_read_factor");
  }
  if (status == RH_CUDA_OK) {
    int triangular = info.has_factor == 1;
    for (int i = 0; i < d; ++i) {
      triangular = triangular && factor[i * d + i] >= 0.0;
      for (int j = 0; j < i; ++j) triangular = triangular && factor[i * d + j] == 0.0;
    }
    printf("batches %lld, coef %.6f %.6f %.6f, converged %d, rung %d, factor %s\n",
           (long long)info.batch_count, coef[0], coef[1], coef[2], diagnostics.converged,
           (int)diagnostics.solver, triangular ? "upper triangular" : "NOT upper triangular");
    if (!triangular) status = RH_CUDA_ERROR_INTERNAL;
  }
  rh_cuda_state_free(state);
  rh_cuda_engine_free(engine);
  return status == RH_CUDA_OK ? 0 : 1;
}
