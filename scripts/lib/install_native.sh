# Sourced by scripts/build_native_*.sh: install_native DIST_DIR DIST_NAME builds the native
# distribution in DIST_DIR (scikit-build-core) and installs it, non-editable, into the virtual
# environment (.venv, or $VENV). Warnings are errors when CI=true or RH_WERROR=1. The base
# distribution rhuber must be installed first: a native one depends on exactly its version.
# --no-deps: the development build finds the CUDA libraries in the toolkit (RH_CUDA_TOOLKIT_RPATH),
# not in NVIDIA's PyPI wheels, which the installable CUDA wheel depends on (make dist).

python="${VENV:-.venv}/bin/python"

install_native() {
  local dist_dir="$1" dist_name="$2"
  if ! "$python" -m pip show --quiet rhuber >/dev/null 2>&1; then
    echo "rhuber is not installed in ${VENV:-.venv}; install it first (pip install -e .)" >&2
    exit 1
  fi
  local werror=OFF
  if [[ "${CI:-}" == "true" || "${RH_WERROR:-}" == "1" || "${RH_WERROR:-}" == "ON" ]]; then
    werror=ON
  fi
  # --no-build-isolation builds with the environment's own build requirements: those of the
  # distribution's pyproject.toml, which include scipy-openblas32, also the module's BLAS at run
  # time (the one dependency --no-deps would otherwise leave out).
  local requires
  mapfile -t requires < <("$python" -c 'import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))' \
    "$dist_dir/pyproject.toml")
  "$python" -m pip install --quiet "${requires[@]}"
  "$python" -m pip uninstall --quiet --yes "$dist_name" >/dev/null 2>&1 || true
  RH_WERROR="$werror" CMAKE_BUILD_PARALLEL_LEVEL="${RH_JOBS:-2}" \
    "$python" -m pip install --no-build-isolation --no-deps "$dist_dir"
}
