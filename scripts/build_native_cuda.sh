#!/usr/bin/env bash
# Builds the distribution renewable-huber-native-cuda (python-cuda/, CMake sources in
# native/cuda/) and installs it, non-editable, into the virtual environment (.venv, or $VENV).
# Needs the CUDA toolkit (nvcc; CUDACXX or /usr/local/cuda/bin/nvcc), not a GPU. Warnings are
# errors when CI=true or RH_WERROR=1. The base distribution renewable-huber must be installed
# first: the native one depends on exactly its version.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${VENV:-.venv}/bin/python"
if ! "$python" -m pip show --quiet renewable-huber >/dev/null 2>&1; then
  echo "renewable-huber is not installed in ${VENV:-.venv}; install it first (pip install -e .)" >&2
  exit 1
fi
export CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [[ ! -x "$CUDACXX" ]]; then
  echo "nvcc not found at $CUDACXX: install the CUDA toolkit or set CUDACXX" >&2
  exit 1
fi

werror=OFF
if [[ "${CI:-}" == "true" || "${RH_WERROR:-}" == "1" || "${RH_WERROR:-}" == "ON" ]]; then
  werror=ON
fi

# --no-build-isolation builds with the environment's own build requirements.
"$python" -m pip install --quiet "scikit-build-core>=0.10" "nanobind>=2.0"
"$python" -m pip uninstall --quiet --yes renewable-huber-native-cuda >/dev/null 2>&1 || true
RH_WERROR="$werror" CMAKE_BUILD_PARALLEL_LEVEL="${RH_JOBS:-2}" \
  "$python" -m pip install --no-build-isolation ./python-cuda
# Importing needs no GPU; making an engine does.
"$python" -c "import _renewable_huber_native_cuda as m; print('installed', m.__name__, m.__version__, 'ABI', hex(m.abi_version()))"
