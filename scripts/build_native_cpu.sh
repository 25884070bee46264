#!/usr/bin/env bash
# Builds the distribution renewable-huber-native-cpu (python-cpu/, CMake sources in native/) and
# installs it, non-editable, into the virtual environment (.venv, or $VENV). Warnings are errors
# when CI=true or RH_WERROR=1. The base distribution renewable-huber must be installed first:
# the native one depends on exactly its version.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${VENV:-.venv}/bin/python"
if ! "$python" -m pip show --quiet renewable-huber >/dev/null 2>&1; then
  echo "renewable-huber is not installed in ${VENV:-.venv}; install it first (pip install -e .)" >&2
  exit 1
fi

werror=OFF
if [[ "${CI:-}" == "true" || "${RH_WERROR:-}" == "1" || "${RH_WERROR:-}" == "ON" ]]; then
  werror=ON
fi

# --no-build-isolation builds with the environment's own build requirements.
"$python" -m pip install --quiet "scikit-build-core>=0.10" "nanobind>=2.0"
"$python" -m pip uninstall --quiet --yes renewable-huber-native-cpu >/dev/null 2>&1 || true
RH_WERROR="$werror" CMAKE_BUILD_PARALLEL_LEVEL="${RH_JOBS:-2}" \
  "$python" -m pip install --no-build-isolation ./python-cpu
"$python" -c "import _renewable_huber_native_cpu as m; print('installed', m.__name__, m.__version__)"
