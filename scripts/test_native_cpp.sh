#!/usr/bin/env bash
# Builds and runs the C++ tests: a Release build with warnings as errors (build-native/), an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/, with the profiler's NVTX sink
# when nvtx3 headers exist) where any report fails the run, and a ThreadSanitizer build of the
# concurrency tests (build-tsan/), where any race reported fails the run. Needs cmake, g++, libopenblas-dev, liblapacke-dev, libgtest-dev, libgmock-dev.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${RH_JOBS:-2}"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

configure_build_test() {
  local dir="$1"
  shift
  cmake -S native -B "$dir" "${generator[@]}" -DRH_WERROR=ON "$@"
  cmake --build "$dir" --parallel "$jobs"
  ctest --test-dir "$dir" --output-on-failure --parallel "$jobs"
}

echo "== C++ tests: Release, -Werror (build-native/)"
configure_build_test build-native -DCMAKE_BUILD_TYPE=Release

echo "== C++ tests: ASan + UBSan (build-asan/)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The profiler's NVTX sink too, where the CUDA toolkit brings the nvtx3 headers: its test counts
# the ranges pushed and popped.
nvtx=OFF
if [[ -f /usr/local/cuda/include/nvtx3/nvToolsExt.h ]]; then nvtx=ON; fi
configure_build_test build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRH_SANITIZE=ON \
  -DRH_BUILD_EXAMPLES=OFF -DRH_BRICKS_NVTX="$nvtx"

echo "== C++ tests: ThreadSanitizer, the thread pool and the engine under concurrency (build-tsan/)"
# Only the concurrency tests' executable is built (a few compilation units), to keep CI short;
# any race reported fails it (halt_on_error, a non-zero exit).
unset ASAN_OPTIONS UBSAN_OPTIONS
cmake -S native -B build-tsan "${generator[@]}" -DRH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRH_SANITIZE_THREAD=ON -DRH_BUILD_EXAMPLES=OFF
cmake --build build-tsan --target rh_concurrency_tests --parallel "$jobs"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" build-tsan/tests/rh_concurrency_tests
