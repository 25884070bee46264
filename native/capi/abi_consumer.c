/* A C consumer of rh_cpu.h: compiled as C11 (the header stands alone, with no C++), it fits a
 * two-batch stream of y = 1 + 2 x, checks a bad batch is refused with the status and a message
 * naming the row while the state stays as it was, and touches the profiler, the model reader and
 * the test hooks. Exit status 0 on success. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rh_cpu.h"

static int failures = 0;

#define CHECK(cond)                                                \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", \
              __FILE__, __LINE__, #cond, rh_cpu_last_error());     \
      ++failures;                                                  \
    }                                                              \
  } while (0)

enum { N = 64, D = 2 };

static void trace_count(void* user, const rh_cpu_iteration* record) {
  int* count = (int*)user;
  if (record->iteration >= 1) ++*count;
}

int main(void) {
  CHECK(rh_cpu_abi_version() == RH_CPU_ABI_VERSION);
  CHECK(strlen(rh_cpu_version()) > 0);
  CHECK(strcmp(rh_cpu_status_name(RH_CPU_ERROR_NUMERICAL), "numerical") == 0);

  rh_cpu_engine_options options = {1, 0, RH_CPU_GRAM_INCREMENTAL, 0};
  rh_cpu_engine_t engine = NULL;
  CHECK(rh_cpu_engine_create(&options, &engine) == RH_CPU_OK);
  rh_cpu_engine_options resolved;
  CHECK(rh_cpu_engine_options_get(engine, &resolved) == RH_CPU_OK);
  CHECK(resolved.threads == 1 && resolved.chunk_bytes > 0);

  double X[N], y[N], w[N];
  for (int i = 0; i < N; ++i) {
    X[i] = (double)i / N;
    y[i] = 1.0 + 2.0 * X[i] + ((i % 2) ? 1e-3 : -1e-3);
    w[i] = 1.0;
  }
  rh_cpu_config config;
  memset(&config, 0, sizeof config);
  config.fit_intercept = 1;
  config.epsilon = 1.345;
  config.max_iter = 100;
  config.bandwidth_scale = 1.0;

  double coef[2][D] = {{0}}, information[2][D * D] = {{0}};
  rh_cpu_state states[2];
  memset(states, 0, sizeof states);
  for (int s = 0; s < 2; ++s) {
    states[s].dtype = RH_CPU_FLOAT64;
    states[s].dim = D;
    states[s].coef = coef[s];
    states[s].information = information[s];
  }
  rh_cpu_batch batch = {RH_CPU_FLOAT64, 0, N, 1, X, y, w};
  rh_cpu_diagnostics diagnostics;
  int iterations = 0;
  CHECK(rh_cpu_update(engine, &states[0], &batch, &config, trace_count, &iterations, &states[1],
                      &diagnostics) == RH_CPU_OK);
  CHECK(states[1].batch_count == 1 && states[1].n_samples_seen == N);
  CHECK(iterations > 0 && iterations == diagnostics.n_iter);
  CHECK(fabs(coef[1][0] - 2.0) < 1e-2 && fabs(coef[1][1] - 1.0) < 1e-2);

  /* A NaN in row 5: refused, named, nothing written. */
  X[5] = NAN;
  double before = coef[0][0];
  CHECK(rh_cpu_update(engine, &states[1], &batch, &config, NULL, NULL, &states[0],
                      &diagnostics) == RH_CPU_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rh_cpu_last_error(), "5") != NULL);
  CHECK(coef[0][0] == before && states[0].batch_count == 0);
  X[5] = 5.0 / N;

  /* The profiler attached, a batch timed, its report exported. */
  rh_cpu_profiler_t profiler = NULL;
  CHECK(rh_cpu_profiler_create("immediate", 1024, 0, "steady", &profiler) == RH_CPU_OK);
  CHECK(rh_cpu_engine_set_profiler(engine, profiler) == RH_CPU_OK);
  CHECK(rh_cpu_update(engine, &states[1], &batch, &config, NULL, NULL, &states[0],
                      &diagnostics) == RH_CPU_OK);
  CHECK(states[0].batch_count == 2);
  rh_cpu_string report = NULL;
  CHECK(rh_cpu_profiler_export(profiler, RH_CPU_EXPORT_REPORT, NULL, 0, 0, &report) == RH_CPU_OK);
  CHECK(report != NULL && report[0] == '{');
  rh_cpu_string_free(report);
  CHECK(rh_cpu_engine_set_profiler(engine, NULL) == RH_CPU_OK);
  CHECK(rh_cpu_profiler_free(profiler) == RH_CPU_OK);
  CHECK(rh_cpu_profiler_create("sometimes", 0, 0, "cpu", &profiler) ==
        RH_CPU_ERROR_INVALID_ARGUMENT);

  /* A model from bytes that are no safetensors file. */
  rh_cpu_model_t model = NULL;
  const char junk[] = "not a model";
  CHECK(rh_cpu_model_from_bytes(junk, sizeof junk, &model) == RH_CPU_ERROR_MODEL_FORMAT);

  /* The allocation hook: the next workspace allocation fails, the state stays. */
  CHECK(rh_cpu_fault_fail_allocations(0, 1) == RH_CPU_OK);
  rh_cpu_engine_t fresh = NULL;
  CHECK(rh_cpu_engine_create(&options, &fresh) == RH_CPU_OK);
  int status = rh_cpu_update(fresh, &states[0], &batch, &config, NULL, NULL, &states[1],
                             &diagnostics);
  CHECK(status == RH_CPU_ERROR_OUT_OF_MEMORY || status == RH_CPU_OK);
  int64_t pending = -1;
  CHECK(rh_cpu_fault_clear(&pending) == RH_CPU_OK && pending >= 0);
  CHECK(rh_cpu_engine_free(fresh) == RH_CPU_OK);
  CHECK(rh_cpu_engine_free(engine) == RH_CPU_OK);

  if (failures == 0) printf("rh_cpu_abi_consumer: ok\n");
  return failures == 0 ? 0 : 1;
}
