#!/usr/bin/env bash
# Builds and tests the profiler library (native/bricks) on its own:
#   scripts/test_bricks.sh         Release with -Werror in build-bricks/, then ASan + UBSan (with the
#                                  NVTX sink compiled in when nvtx3 headers exist) in build-bricks-asan/
#   scripts/test_bricks.sh bench   Release benchmarks in build-bricks-bench/, with ratios to Tracy
#   scripts/test_bricks.sh tsan    the tests under ThreadSanitizer in build-bricks-tsan/ (not in CI:
#                                  another full build on two cores)
# Needs cmake, g++, libgtest-dev and, for bench, libbenchmark-dev. Exits nonzero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${RH_JOBS:-2}"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

configure_build() {
  local dir="$1"
  shift
  cmake -S native/bricks -B "$dir" "${generator[@]}" -DRH_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" --parallel "$jobs"
}

if [[ "${1:-}" == "bench" ]]; then
  echo "== bricks benchmarks: Release (build-bricks-bench/)"
  configure_build build-bricks-bench -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DRH_BRICKS_BENCH=ON
  out="build-bricks-bench/bench.json"
  build-bricks-bench/bench/rh_bricks_bench --benchmark_min_time=0.5 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="$out" --benchmark_out_format=json
  python3 - "$out" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ctx = doc["context"]
print(f"\nmachine: {ctx.get('host_name')}, {ctx['num_cpus']} CPUs @ {ctx['mhz_per_cpu']} MHz")
print(f"{'benchmark (median of 3)':44s} {'cpu ns':>10s} {'x Tracy 2 ns':>13s}")
median = {}
for b in doc["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    ns = b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
    median[b["run_name"]] = ns
    ratio = f"{ns / 2.0:13.2f}" if b["run_name"].startswith(("BM_Scope", "BM_Phase")) else ""
    print(f"{b['run_name']:44s} {ns:10.2f} {ratio}")
off = median.get("BM_SyntheticBatch/n:1000/profiled:0")
on = median.get("BM_SyntheticBatch/n:1000/profiled:1")
if off and on:
    print(f"synthetic batch (12 bricks of ~1 us): profiling adds {100 * (on / off - 1):.1f} %")
PY
  exit 0
fi

if [[ "${1:-}" == "tsan" ]]; then
  echo "== bricks tests: ThreadSanitizer (build-bricks-tsan/)"
  configure_build build-bricks-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRH_BRICKS_SANITIZE=thread \
    -DRH_BRICKS_EXAMPLES=OFF
  TSAN_OPTIONS="halt_on_error=1" ctest --test-dir build-bricks-tsan --output-on-failure --parallel "$jobs"
  exit 0
fi

echo "== bricks tests: Release, -Werror (build-bricks/)"
configure_build build-bricks -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build-bricks --output-on-failure --parallel "$jobs"

echo "== bricks exports: bricks_demo, report against the schema (build-bricks/demo/)"
mkdir -p build-bricks/demo
build-bricks/bricks_demo build-bricks/demo >/dev/null
python3 - build-bricks/demo native/bricks/schema/report.schema.json <<'PY'
import json, sys
out, schema_path = sys.argv[1], sys.argv[2]
report = json.load(open(f"{out}/report.json"))
trace = json.load(open(f"{out}/trace.json"))
assert any(e["ph"] == "X" for e in trace["traceEvents"]), "trace has no complete events"
try:
    import jsonschema
except ImportError:
    print("jsonschema not installed: report parsed, schema check skipped")
else:
    schema = json.load(open(schema_path))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
    print("report.json valid against report.schema.json; trace.json parsed")
PY

echo "== bricks tests: ASan + UBSan (build-bricks-asan/)"
nvtx=OFF
if [[ -f /usr/local/cuda/include/nvtx3/nvToolsExt.h ]]; then nvtx=ON; fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
configure_build build-bricks-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRH_BRICKS_SANITIZE=address,undefined -DRH_BRICKS_NVTX="$nvtx"
ctest --test-dir build-bricks-asan --output-on-failure --parallel "$jobs"
echo "== bricks: all tests passed"
