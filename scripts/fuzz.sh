#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/, docs/reliability.md): the atheris targets of fuzz/targets.py
# (checkpoint, checkpoint_fields, csv, parquet, npy, npz) and the libFuzzer target of the tuner's C++ safetensors
# reader, built here with clang -fsanitize=fuzzer,address,undefined. Each starts from its
# committed seeds (fuzz/corpus/<target>/) and first replays every committed regression input
# (fuzz/regressions/<target>/); new inputs go to $FUZZ_OUT/corpus/, crashes to
# $FUZZ_OUT/artifacts/<target>/, and the run fails on the first crash.
#
#   scripts/fuzz.sh [target ...]         every target when none is named
#   FUZZ_SECONDS=10                      seconds per target (make test runs 5, make fuzz 60)
#   FUZZ_RUNS=1000000                    executions per target instead of a time limit
#   FUZZ_FLAGS="-max_len=256"            more libFuzzer flags
#   FUZZ_OUT=build-fuzz                  where the new corpus, crashes, logs and summary go
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-.venv/bin/python}"
seconds="${FUZZ_SECONDS:-10}"
out="${FUZZ_OUT:-build-fuzz}"
all=(checkpoint checkpoint_fields csv parquet npy npz safetensors)
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=("${all[@]}"); fi

build_native() {
  local binary="$out/safetensors_fuzzer"
  local sources=(native/tuner/src/safetensors.cpp native/tuner/src/model.cpp
                 fuzz/native/safetensors_fuzzer.cpp)
  local newer=0
  for s in "${sources[@]}" native/tuner/include/rh/tuner/*.hpp; do
    [[ -x "$binary" && ! "$s" -nt "$binary" ]] || newer=1
  done
  if [[ $newer -eq 1 ]]; then
    echo "== building $binary (clang, libFuzzer + ASan + UBSan)"
    clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
      -I native/tuner/include -I native/include "${sources[@]}" -o "$binary"
  fi
}

mkdir -p "$out"
limit=(-max_total_time="$seconds")
if [[ -n "${FUZZ_RUNS:-}" ]]; then limit=(-runs="$FUZZ_RUNS"); fi
for target in "${targets[@]}"; do
  mkdir -p "$out/corpus/$target" "$out/artifacts/$target"
  # libFuzzer adds new inputs to the first directory only; the committed ones stay as they are.
  dirs=("$out/corpus/$target" "fuzz/corpus/$target")
  # A target without findings has no regressions directory in a clone (git keeps no empty ones).
  if [[ -d "fuzz/regressions/$target" ]]; then dirs+=("fuzz/regressions/$target"); fi
  # shellcheck disable=SC2206  # FUZZ_FLAGS is split into flags on purpose
  flags=("${limit[@]}" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix="$out/artifacts/$target/" ${FUZZ_FLAGS:-})
  budget="${seconds} s"
  if [[ -n "${FUZZ_RUNS:-}" ]]; then budget="$FUZZ_RUNS executions"; fi
  echo "== fuzzing $target ($budget)"
  log="$out/$target.log"
  if [[ "$target" == safetensors ]]; then
    build_native
    command=("$out/safetensors_fuzzer" "${flags[@]}" "${dirs[@]}")
  else
    command=("$python" fuzz/run.py "$target" "${flags[@]}" "${dirs[@]}")
  fi
  start=$(date +%s)
  if ! "${command[@]}" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz target $target failed: the input is in $out/artifacts/$target/; add it to" \
         "fuzz/regressions/$target/ once fixed" >&2
    exit 1
  fi
  runs=$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' || echo "?")
  echo "$target: $runs executions in $(( $(date +%s) - start )) s, no crash" | tee -a "$out/summary.txt"
done
