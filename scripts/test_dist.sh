#!/usr/bin/env bash
# make test-dist: the wheels of dist/ (make dist), installed into a fresh virtual environment with
# no compiler on PATH, checked from outside the source tree so that nothing imports the checkout:
# scripts/dist_check.py (the BLAS from scipy-openblas32, golden corpus on numpy and native_cpu, the
# CUDA module and NVIDIA's wheels), then `rhuber --version` and `rhuber demo`. The dependencies
# come from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dist="${DIST_DIR:-dist}"
[[ "$dist" == /* ]] || dist="$root/$dist"

version="$(python3 -c 'import runpy; print(runpy.run_path("python/rhuber/_version.py")["__version__"])')"
pure="$dist/rhuber-$version-py3-none-any.whl"
wheels=("$pure" "$dist"/rhuber_native_cpu-"$version"-*manylinux*.whl)
cuda_wheel=("$dist"/rhuber_native_cuda-"$version"-*manylinux*.whl)
cuda_checks=(--cuda)
if [[ -f "${cuda_wheel[0]}" ]]; then
  wheels+=("${cuda_wheel[0]}")
elif [[ ! -x "${CUDACXX:-/usr/local/cuda/bin/nvcc}" ]]; then
  echo "test-dist: no CUDA toolkit here, so make dist built no CUDA wheel: its checks are skipped"
  cuda_checks=()
fi
for wheel in "${wheels[@]}"; do
  [[ -f "$wheel" ]] || { echo "test-dist: no $wheel: run make dist first" >&2; exit 1; }
done
if (( ${#cuda_checks[@]} )) && [[ ! -f "${cuda_wheel[0]}" ]]; then
  echo "test-dist: no CUDA wheel in $dist: run make dist first" >&2
  exit 1
fi
ls -l "${wheels[@]}"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The native wheels serve every CPython: tagged py3-none, and their shared objects (C ABIs loaded
# with ctypes) import no symbol of the interpreter.
for wheel in "${wheels[@]:1}"; do
  name="$(basename "$wheel")"
  if [[ "$name" != *-py3-none-manylinux_* ]]; then
    echo "test-dist: $name is not a py3-none-manylinux wheel" >&2
    exit 1
  fi
  python3 -m zipfile -e "$wheel" "$scratch/unpacked/$name"
  # A wheel keeps no symlinks: a library must be there once, by its soname, not also by its
  # full version (librh_cuda.so.5 and librh_cuda.so.5.0.1 would be two copies).
  if find "$scratch/unpacked/$name" -name '*.so.*.*' | grep .; then
    echo "test-dist: $name carries a library under its full version as well as its soname" >&2
    exit 1
  fi
  while IFS= read -r library; do
    if nm -D --undefined-only "$library" | grep -E ' _?Py'; then
      echo "test-dist: $(basename "$library") in $name imports Python symbols" >&2
      exit 1
    fi
    echo "test-dist: $name: $(basename "$library") imports no Py* symbol"
  done < <(find "$scratch/unpacked/$name" -name '*.so*' -type f)
done
python3 -m venv "$scratch/venv"
venv="$scratch/venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The pure wheel with the CLI's extra, and both native wheels (which pin it exactly).
"$venv/bin/python" -m pip install --quiet "$pure[cli]" "${wheels[@]:1}"
"$venv/bin/python" -m pip list 2>/dev/null | grep -Ei "rhuber|nvidia|openblas"
# Our names only: none of the seed system's distributions (renewable-huber*) came along.
if "$venv/bin/python" -m pip list 2>/dev/null | grep -Ei "renewable"; then
  echo "test-dist: a renewable-huber distribution was installed with ours" >&2
  exit 1
fi

# From here on: only the environment's own programs, and no compiler anywhere on PATH (a
# subshell, so that the cleanup above still finds rm).
(
  cd "$scratch"
  export PATH="$venv/bin"
  for compiler in cc gcc g++ c++ clang nvcc; do
    if command -v "$compiler" >/dev/null; then
      echo "test-dist: $compiler is on PATH" >&2
      exit 1
    fi
  done
  export CC=false CXX=false

  python -I "$root/scripts/dist_check.py" "$root/tests/golden/native_core_v2.json" "$root" \
    "${cuda_checks[@]}"
  out="$(rhuber --version)"
  echo "$out"
  [[ "$out" == *"$version"* ]] || { echo "test-dist: rhuber --version says '$out'" >&2; exit 1; }
  rhuber demo
)
echo "test-dist: passed (rhuber $version from wheels)"
