#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run of at most 8 minutes:
#
#   scripts/gpu_check.sh OUT_DIR          (make gpu-check OUT=dir)
#
# Builds renewable-huber-native-cuda (warnings as errors) and, when missing, native_cpu for the
# differential tests; installs cupy-cuda12x and torch when missing and reachable; runs the GPU
# tests (golden corpus on CUDA, differential against native_cpu and the reference, DLPack from
# CuPy and PyTorch on side streams; RH_REQUIRE_GPU=1, so no usable device fails them rather than
# skipping them) and the CPU-side CUDA tests; times the engine
# (profile_cuda_update.py) and runs the shape sweep's smoke profile when that script is there;
# builds and runs the C ABI consumer and the CUDA-event clock when time is left. Writes OUT_DIR/summary.json and
# OUT_DIR/summary.txt, with every step's log beside them. Exit status 0 only when the build and
# the tests passed. RH_GPU_CHECK_NO_INSTALL=1 skips the pip installs (an offline machine).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu_check.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
budget=470  # seconds: 8 minutes less a margin for the summary
start=$(date +%s)
python="${VENV:-.venv}/bin/python"
jobs="$(nproc)"
steps_file="$out/steps.tsv"
: > "$steps_file"

remaining() { echo $(( budget - ($(date +%s) - start) )); }

# step NAME MAX_SECONDS COMMAND...: runs with a timeout that fits the budget, logs to
# OUT/NAME.log, records name, status and seconds.
step() {
  local name="$1" limit="$2"
  shift 2
  local left
  left=$(remaining)
  if (( left < 20 )); then
    printf '%s\tskipped (out of time)\t0\n' "$name" >> "$steps_file"
    return 124
  fi
  (( limit > left )) && limit=$left
  local t0=$(date +%s) status
  timeout --kill-after=5 "$limit" "$@" > "$out/$name.log" 2>&1
  status=$?
  printf '%s\t%s\t%s\n' "$name" "$status" "$(( $(date +%s) - t0 ))" >> "$steps_file"
  echo "[gpu-check] $name: status $status ($(( $(date +%s) - t0 )) s)"
  return $status
}

if [[ ! -x "$python" ]]; then
  echo "[gpu-check] no virtual environment at ${VENV:-.venv}: run make setup first" >&2
  exit 1
fi

step gpu 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
step build_cuda 240 env RH_JOBS="$jobs" RH_WERROR=1 bash scripts/build_native_cuda.sh
build=$?
if ! "$python" -c "import _renewable_huber_native_cpu" 2>/dev/null; then
  step build_cpu 150 env RH_JOBS="$jobs" bash scripts/build_native_cpu.sh
fi
for package in cupy-cuda12x torch; do
  module="${package%%-*}"
  if [[ -z "${RH_GPU_CHECK_NO_INSTALL:-}" ]] && ! "$python" -c "import $module" 2>/dev/null; then
    step "install_$module" 90 "$python" -m pip install --quiet "$package"
  fi
done

tests=1
if (( build == 0 )); then
  step tests 180 env RH_REQUIRE_GPU=1 "$python" -m pytest -q -rs -p no:cacheprovider tests/gpu tests/test_cuda_abi.py \
    tests/test_dlpack_ownership.py --junitxml "$out/tests.xml"
  tests=$?
  # Our own timing loop always runs: the sweep records its cuda rows skipped without CuPy.
  step timing 60 "$python" scripts/profiling/profile_cuda_update.py --rows 100000 \
    --features 90 --batch-size 32768 --fits 3 --json "$out/cuda_timing.json"
  if [[ -f scripts/benchmarks/benchmark_shape_sweep.py ]]; then
    step benchmark 150 "$python" scripts/benchmarks/benchmark_shape_sweep.py --profile smoke \
      --engines numpy native_cpu cuda --peers --no-plots --quiet --out "$out/benchmark.json"
  fi
  if (( $(remaining) > 150 )); then
    step abi_build 140 bash -c "cmake -S native/cuda -B build-cuda-check -DRH_WERROR=ON \
      -DCMAKE_CUDA_COMPILER=\${CUDACXX:-/usr/local/cuda/bin/nvcc} -DRH_CUDA_ARCHITECTURES=90 \
      && cmake --build build-cuda-check -j $jobs" \
      && step abi_consumer 30 build-cuda-check/rh_cuda_abi_consumer \
      && step event_clock 30 build-cuda-check/rh_cuda_clock_smoke
  fi
fi

"$python" - "$out" <<'PY'
"""Summarize the steps, the test report and the benchmark into summary.json and summary.txt."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out = Path(sys.argv[1])
steps = []
for line in (out / "steps.tsv").read_text().splitlines():
    name, status, seconds = line.split("\t")
    steps.append({"step": name, "status": status, "seconds": int(seconds)})
summary = {"steps": steps}
gpu_log = out / "gpu.log"
summary["gpu"] = gpu_log.read_text().strip() if gpu_log.exists() else None
if (out / "tests.xml").exists():
    suite = ET.parse(out / "tests.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failed = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    skipped = sorted({s.get("message", "") for s in suite.iter("skipped")})
    summary["tests"] = {**counts, "failed": failed, "skip_reasons": skipped}
for key, name in (("timing", "cuda_timing.json"), ("benchmark", "benchmark.json")):
    if (out / name).exists():
        try:
            summary[key] = json.loads((out / name).read_text())
        except json.JSONDecodeError as exc:
            summary[key] = f"unreadable: {exc}"
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

lines = ["gpu-check summary", f"gpu: {summary['gpu']}", "", "steps:"]
lines += [f"  {s['step']:<16} status {s['status']:<22} {s['seconds']:>4} s" for s in steps]
if "tests" in summary:
    t = summary["tests"]
    lines += ["", f"tests: {t['passed']} passed, {t['failures']} failed, {t['errors']} errors, "
              f"{t['skipped']} skipped"]
    lines += [f"  FAILED {name}" for name in t["failed"]]
    lines += [f"  skipped: {reason}" for reason in t["skip_reasons"]]
timing = summary.get("timing")
if isinstance(timing, dict):
    lines += ["", f"timing loop: median fit {timing['median_fit_seconds']:.4f} s for "
              f"{timing['shape']}; allocations after warm-up: "
              f"{timing['allocations_after_warmup']}"]
bench = summary.get("benchmark")
if isinstance(bench, dict):
    records = bench.get("records", [])
    lines += ["", f"benchmark: {len(records)} records (schema {bench.get('schema_version')})"]
    for r in records:
        if r.get("engine") == "cuda":
            timing = f"median {r['median_s']:.4f} s" if r.get("median_s") else r.get("reason")
            lines.append(f"  {r['id']:<44} {r['status']:<8} {timing}")
(out / "summary.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY

(( build == 0 && tests == 0 ))
