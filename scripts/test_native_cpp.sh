#!/usr/bin/env bash
# Builds and runs the C++ tests twice: a Release build with warnings as errors (build-native/),
# and an AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) where any report
# fails the run. Needs cmake, g++, libopenblas-dev, liblapacke-dev, libgtest-dev, libgmock-dev.
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
configure_build_test build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRH_SANITIZE=ON \
  -DRH_BUILD_EXAMPLES=OFF
