#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run of at most 8 minutes:
#
#   scripts/gpu_check.sh [--offline] [--build-only] [--dry-run] OUT_DIR   (make gpu-check OUT=dir)
#
# Two ways to get the packages under test:
#   - default (a machine with the .venv of `make setup` and a registry): builds
#     rhuber-native-cuda (warnings as errors) and, when missing, native_cpu into the
#     .venv (scripts/build_native_*.sh), and installs cupy-cuda13x and torch when missing;
#   - --offline (the borrowed GPU machine: no registry, no .venv; docs/cuda.md, "Running gpu-check
#     on the borrowed GPU machine"): uses the machine's own python3 ($PYTHON) and its packages,
#     installs what it lacks of scripts/gpu_bundle.txt from the bundle that `make gpu-bundle`
#     downloaded ($RH_GPU_BUNDLE, default .gpu-bundle: wheels with pip --no-index, OpenBLAS and
#     LAPACKE (and nlohmann-json) .debs unpacked into the prefix, never into /), then installs our three packages with
#     --no-deps --no-build-isolation into a temporary prefix (pip --target; PYTHONPATH, and
#     LD_LIBRARY_PATH for the bundle's libraries, point there), building both native modules for
#     RH_CUDA_ARCHITECTURES (default 90).
# Then: the GPU tests (golden corpus on CUDA, differential against native_cpu and the reference,
# DLPack from CuPy and PyTorch on side streams; RH_REQUIRE_GPU=1, so no usable device fails them
# rather than skipping them) and the CPU-side CUDA tests; the C ABI consumer and the CUDA-event
# clock (built beside the tests); the engine's timing loop (profile_cuda_update.py) and the
# shape sweep's smoke profile (four shapes, CUDA host-fed and device-resident).
#
# --build-only stops after the build, install and import steps (make gpu-rehearsal runs it with
# the network cut); --dry-run prints the plan and runs nothing. RH_GPU_CHECK_BLAS=bundle uses the
# bundle's OpenBLAS even where the machine has one (=system: never; default auto).
# RH_GPU_CHECK_TIME_SCALE multiplies every time limit (a slower machine). RH_GPU_CHECK_PREFIX
# names the prefix (default: a new temporary folder).
#
# OUT_DIR gets at most six files (the device tool brings back eight): summary.json and
# summary.txt (every step's status, seconds and last log lines; which failed and why), steps.log
# (every step's log), tests.xml, cuda_timing.json, benchmark.json. Exit status 0 only when the
# build and the tests (with --build-only: the build, install and import steps) passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

usage() { sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; }
offline=0 build_only=0 dry_run=0 out=""
for arg in "$@"; do
  case "$arg" in
    --offline) offline=1 ;;
    --build-only) build_only=1 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "gpu_check.sh: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *) out="$arg" ;;
  esac
done
if [[ -z "$out" && $dry_run == 0 ]]; then usage >&2; exit 2; fi

scale="${RH_GPU_CHECK_TIME_SCALE:-1}"
budget=$(( 470 * scale ))  # seconds: 8 minutes less a margin for the summary
start=$(date +%s)
jobs="$(nproc)"
bundle="${RH_GPU_BUNDLE:-.gpu-bundle}"
if (( dry_run )); then
  work="<temporary prefix>" out="${out:-<OUT_DIR>}"
else
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  work="${RH_GPU_CHECK_PREFIX:-$(mktemp -d /tmp/rh-gpu-check.XXXXXX)}"
  mkdir -p "$work/logs"
  work="$(cd "$work" && pwd)"
  rm -f "$out"/{summary.json,summary.txt,steps.log,tests.xml,cuda_timing.json,benchmark.json}
fi
steps_file="$work/logs/steps.tsv"
(( dry_run )) || : > "$steps_file"

remaining() { echo $(( budget - ($(date +%s) - start) )); }

# step NAME MAX_SECONDS COMMAND...: runs with a timeout that fits the budget, logs to
# PREFIX/logs/NAME.log, records name, status and seconds. --dry-run prints it instead.
step() {
  local name="$1" limit=$(( $2 * scale ))
  shift 2
  if (( dry_run )); then
    printf '[gpu-check] plan: %-13s (<= %3d s) %s\n' "$name" "$limit" "$*"
    return 0
  fi
  local left
  left=$(remaining)
  if (( left < 20 )); then
    printf '%s\tskipped (out of time)\t0\n' "$name" >> "$steps_file"
    echo "[gpu-check] $name: skipped (out of time)"
    return 124
  fi
  (( limit > left )) && limit=$left
  if declare -F "$1" >/dev/null; then  # a function of this script: timeout runs programs only
    set -- bash -c "$(declare -f); $(declare -p python bundle blas_source blas_prefix jobs \
      cmake_blas_args missing wheels 2>/dev/null); \"\$@\"" bash "$@"
  fi
  local t0 status
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" > "$work/logs/$name.log" 2>&1
  status=$?
  printf '%s\t%s\t%s\n' "$name" "$status" "$(( $(date +%s) - t0 ))" >> "$steps_file"
  echo "[gpu-check] $name: status $status ($(( $(date +%s) - t0 )) s)"
  return $status
}

# --- The environment: which python, which packages -------------------------------------------
cmake_blas_args=()
if (( offline )); then
  python="${PYTHON:-python3}"
  site="$work/site"
  blas_prefix="$work/blas"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
  export CUDACXX="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  export RH_CUDA_ARCHITECTURES="${RH_CUDA_ARCHITECTURES:-90}"
  # No registry there, so no scipy-openblas32 (the wheels' BLAS, native/cmake/RhBlas.cmake): the
  # modules are built on Debian's OpenBLAS and LAPACKE, the system's or the bundle's.
  cmake_blas_args=(-DRH_BLAS=system)
  # What the build, install and import steps need from the machine, and what the tests add.
  build_modules=(numpy scipy sklearn scikit_build_core packaging pathspec pluggy attrs)
  run_modules=(pytest hypothesis threadpoolctl cupy torch)
  (( build_only )) || build_modules+=("${run_modules[@]}")
else
  python="${VENV:-.venv}/bin/python"
  if [[ ! -x "$python" ]]; then
    echo "[gpu-check] no virtual environment at ${VENV:-.venv}: run make setup, or use --offline" >&2
    exit 1
  fi
fi

# modules_missing MODULE...: prints those that python cannot import.
modules_missing() {
  "$python" - "$@" <<'PY'
import importlib.util
import sys

print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))
PY
}

# The bundle's lines of scripts/gpu_bundle.txt: "wheel NAME==VERSION MODULE" and "deb NAME".
bundle_entries() { sed -e 's/#.*//' scripts/gpu_bundle.txt | awk -v k="$1" '$1 == k'; }

# Whether the machine has what native/cmake/RhBlas.cmake and find_package(nlohmann_json) look for.
system_has_build_libraries() {
  local found=0 dir suffix lib
  for dir in /usr/include /usr/include/x86_64-linux-gnu /usr/local/include; do
    for suffix in "" openblas openblas-pthread; do
      [[ -f "$dir/$suffix/cblas.h" ]] && found=$(( found | 1 ))
    done
    for suffix in "" openblas lapacke; do
      [[ -f "$dir/$suffix/lapacke.h" ]] && found=$(( found | 2 ))
    done
  done
  for dir in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
    [[ -e "$dir/libopenblas.so" ]] && found=$(( found | 4 ))
    [[ -e "$dir/liblapacke.so" ]] && found=$(( found | 8 ))
  done
  # nlohmann-json's CMake package (native/CMakeLists.txt's find_package(nlohmann_json)).
  for dir in /usr/share/cmake /usr/lib/cmake /usr/lib/x86_64-linux-gnu/cmake /usr/local/share/cmake \
             /usr/local/lib/cmake; do
    [[ -f "$dir/nlohmann_json/nlohmann_jsonConfig.cmake" ]] && found=$(( found | 16 ))
  done
  (( found == 31 ))
}

# unpack_debs DIR: every bundled .deb's files under DIR (dpkg -x; ar and tar where dpkg is not).
unpack_debs() {
  local dir="$1" name deb
  mkdir -p "$dir"
  for name in $(bundle_entries deb | awk '{print $2}'); do
    deb="$(ls "$bundle"/debs/"${name}"_*_{amd64,all}.deb 2>/dev/null | head -1)"
    if [[ -z "$deb" ]]; then
      echo "missing from the bundle: $name (run make gpu-bundle here and carry $bundle)"
      return 1
    fi
    echo "unpacking $deb"
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$dir" || return 1
    else
      deb="$(readlink -f "$deb")"
      member="$(ar t "$deb" | grep '^data\.tar')"
      (cd "$dir" && ar x "$deb" "$member" && tar -xf "$member" && rm -f "$member") || return 1
    fi
  done
}

# preflight: what the machine lacks (which fails the build: the bundle does not carry it), and what
# comes from the bundle.
preflight() {
  "$python" --version || return 1
  echo "the machine lacks: ${missing:-nothing that the bundle does not carry}"
  echo "wheels from the bundle: ${wheels[*]:-none}"
  echo "OpenBLAS, LAPACKE and nlohmann-json from: $blas_source"
  [[ -z "$missing" ]]
}

# imports_check: our modules import, their libraries resolve (from the bundle when it is used),
# and the benchmark's schema validator loads.
imports_check() {
  "$python" - "$blas_source" "$blas_prefix" <<'PY'
import json
import re
import subprocess
import sys
from pathlib import Path

blas_source, blas_prefix = sys.argv[1], sys.argv[2]
import rhuber
from rhuber import _native

cpu = _native.load("native_cpu")
cuda = _native.load("cuda")
print("rhuber", rhuber.__file__)
print("native_cpu", cpu.__version__, cpu.LIBRARY_PATH)
print("native_cuda ABI", hex(cuda.abi_version()), cuda.LIBRARY_PATH)
bad = []
for library in (cpu.LIBRARY_PATH, cuda.LIBRARY_PATH):
    ldd = subprocess.run(["ldd", "-r", str(library)], capture_output=True, text=True).stdout
    print(ldd)
    for line in ldd.splitlines():
        # Plain C ABIs: no symbol may be left for the interpreter to resolve, Py* included.
        if "not found" in line or "undefined symbol" in line:
            bad.append(f"{Path(library).name}: {line.strip()}")
        if blas_source == "bundle" and ("libopenblas" in line or "liblapacke" in line) \
                and blas_prefix not in line:
            bad.append(f"{Path(library).name}: not from the bundle: {line.strip()}")
from jsonschema import Draft202012Validator

schema = json.loads(Path("scripts/benchmarks/schema_v2.json").read_text())
Draft202012Validator.check_schema(schema)
print("jsonschema: schema v2 is valid")
if bad:
    sys.exit("\n".join(bad))
PY
}

# --- Build and install --------------------------------------------------------------------------
(( build_only )) || step gpu 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
  --format=csv
blas_source=system
build=0
if (( offline )); then
  echo "[gpu-check] offline: $python, prefix $work, bundle $bundle"
  missing="$(modules_missing "${build_modules[@]}")"
  wheels=()
  while read -r _ spec module; do
    if [[ -n "$(modules_missing "$module")" ]]; then
      name="${spec%%==*}" version="${spec#*==}"
      wheels+=("$(ls "$bundle/wheels/${name//-/_}-$version-"*.whl 2>/dev/null | head -1)")
      [[ -n "${wheels[-1]}" ]] || wheels[-1]="$bundle/wheels/(missing: $spec; run make gpu-bundle)"
    fi
  done < <(bundle_entries wheel)
  blas_source="${RH_GPU_CHECK_BLAS:-auto}"
  if [[ "$blas_source" == auto ]]; then
    blas_source=system
    system_has_build_libraries || blas_source=bundle
  fi
  step preflight 30 preflight || build=1
  if (( ${#wheels[@]} )); then
    step wheels 60 "$python" -m pip install --no-index --no-deps --no-compile --upgrade \
      --target "$site" "${wheels[@]}" || build=1
  fi
  if [[ "$blas_source" == bundle ]]; then
    step blas 60 unpack_debs "$blas_prefix" || build=1
    lib="$blas_prefix/usr/lib/x86_64-linux-gnu"
    cmake_blas_args+=(
      "-DRH_CBLAS_INCLUDE_DIR=$blas_prefix/usr/include/x86_64-linux-gnu/openblas-pthread"
      "-DRH_LAPACKE_INCLUDE_DIR=$blas_prefix/usr/include"
      "-DRH_OPENBLAS_LIBRARY=$lib/openblas-pthread/libopenblas.so"
      "-DRH_LAPACKE_LIBRARY=$lib/liblapacke.so"
      "-Dnlohmann_json_DIR=$blas_prefix/usr/share/cmake/nlohmann_json")
    export LD_LIBRARY_PATH="$lib/openblas-pthread:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  pip_install=("$python" -m pip install --no-index --no-deps --no-build-isolation --no-compile
               --upgrade --target "$site")
  export CMAKE_ARGS="${cmake_blas_args[*]}" CMAKE_BUILD_PARALLEL_LEVEL="$jobs"
  step install_base 60 "${pip_install[@]}" . || build=1
  step build_cuda 240 env RH_WERROR=1 "${pip_install[@]}" ./python-cuda || build=1
  step build_cpu 150 "${pip_install[@]}" ./python-cpu || build=1
  if (( build == 0 )); then
    step imports 30 imports_check || build=1
  fi
else
  step build_cuda 240 env RH_JOBS="$jobs" RH_WERROR=1 bash scripts/build_native_cuda.sh || build=1
  if ! "$python" -c "from rhuber import _native; _native.load('native_cpu')" 2>/dev/null; then
    step build_cpu 150 env RH_JOBS="$jobs" bash scripts/build_native_cpu.sh || build=1
  fi
  for package in cupy-cuda13x torch; do
    module="${package%%-*}"
    if ! "$python" -c "import $module" 2>/dev/null; then
      step "install_$module" 90 "$python" -m pip install --quiet "$package"
    fi
  done
fi

# The C ABI consumer and the CUDA-event clock, outside Python: built beside the GPU tests (CPU
# work), run after them.
abi_build() {
  cmake -S native/cuda -B build-cuda-check -DRH_WERROR=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" -DRH_CUDA_ARCHITECTURES=90 \
    "${cmake_blas_args[@]}" && cmake --build build-cuda-check -j "$jobs"
}

tests=1
if (( build_only )); then
  (( build == 0 )) && { step abi_build 240 abi_build || build=1; }
  (( build == 0 )) && { step collect 60 "$python" -m pytest -q --collect-only -p no:cacheprovider \
    tests/gpu tests/test_cuda_abi.py tests/test_cuda_qr_binding.py tests/test_dlpack_ownership.py \
    || build=1; }
  tests=0
elif (( build == 0 )); then
  step abi_build 240 abi_build &
  abi_pid=$!
  (( dry_run )) && wait "$abi_pid"
  step tests 180 env RH_REQUIRE_GPU=1 "$python" -m pytest -q -rs -p no:cacheprovider tests/gpu \
    tests/test_cuda_abi.py tests/test_cuda_qr_binding.py tests/test_dlpack_ownership.py \
    --junitxml "$out/tests.xml"
  tests=$?
  wait "$abi_pid" \
    && step abi_consumer 30 build-cuda-check/rh_cuda_abi_consumer \
    && step event_clock 30 build-cuda-check/rh_cuda_clock_smoke
  # Timed on a quiet machine, after the builds.
  step timing 60 "$python" scripts/profiling/profile_cuda_update.py --rows 100000 \
    --features 90 --batch-size 32768 --fits 3 --json "$out/cuda_timing.json"
  step benchmark 150 "$python" scripts/benchmarks/benchmark_shape_sweep.py --profile smoke \
    --engines numpy native_cpu cuda --peers --no-plots --quiet --out "$out/benchmark.json"
fi
if (( dry_run )); then
  exit 0
fi

# --- Summary ------------------------------------------------------------------------------------
for name in $(cut -f1 "$steps_file"); do
  status="$(awk -F'\t' -v n="$name" '$1 == n {print $2 " after " $3 " s"}' "$steps_file")"
  printf '===== %s: status %s =====\n' "$name" "$status"
  cat "$work/logs/$name.log" 2>/dev/null
done > "$out/steps.log"

mode="$([[ $offline == 1 ]] && echo offline || echo venv)$([[ $build_only == 1 ]] && echo ', build only')"
if ! "$python" - "$out" "$work/logs" "$mode" "$blas_source" <<'PY'
"""Summarize the steps, the test report and the benchmark into summary.json and summary.txt."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

out, logs, mode, blas = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]


def describe(status: str) -> str:
    if status == "0":
        return "ok"
    if status in ("124", "137"):
        return "timed out"
    return status if not status.isdigit() else f"failed (exit {status})"


def tail(name: str, lines: int) -> list[str]:
    log = logs / f"{name}.log"
    return log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else []


steps = []
for line in (logs / "steps.tsv").read_text().splitlines():
    name, status, seconds = line.split("\t")
    ok = status == "0"
    steps.append({"step": name, "status": describe(status), "seconds": int(seconds),
                  "log_tail": tail(name, 3 if ok else 25)})
failed = [s["step"] for s in steps if s["status"] != "ok"]
summary = {"mode": mode, "blas": blas, "failed_steps": failed, "steps": steps}
gpu_log = logs / "gpu.log"
summary["gpu"] = gpu_log.read_text().strip() if gpu_log.exists() else None
if (out / "tests.xml").exists():
    suite = ET.parse(out / "tests.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failures = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
                if c.find("failure") is not None or c.find("error") is not None]
    skipped = sorted({s.get("message", "") for s in suite.iter("skipped")})
    summary["tests"] = {**counts, "failed": failures, "skip_reasons": skipped}
for key, name in (("timing", "cuda_timing.json"), ("benchmark", "benchmark.json")):
    if (out / name).exists():
        try:
            summary[key] = json.loads((out / name).read_text())
        except json.JSONDecodeError as exc:
            summary[key] = f"unreadable: {exc}"
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

lines = [f"gpu-check summary ({mode}; BLAS: {blas})", f"gpu: {summary['gpu']}", "", "steps:"]
lines += [f"  {s['step']:<14} {s['status']:<24} {s['seconds']:>4} s" for s in steps]
lines += ["", "failed: " + (", ".join(failed) if failed else "none")]
for s in steps:
    if s["step"] in failed:
        lines += ["", f"--- {s['step']} ({s['status']}), last lines of its log:"]
        lines += [f"  {line}" for line in s["log_tail"]]
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
then
  echo "[gpu-check] the summary failed; the steps were:" | tee "$out/summary.txt"
  tee -a "$out/summary.txt" < "$steps_file"
fi

(( build == 0 && tests == 0 ))
