#!/usr/bin/env bash
# Rehearses `scripts/gpu_check.sh --offline` here, before GPU time is spent on it:
#
#   scripts/gpu_rehearsal.sh [OUT_DIR]      (make gpu-rehearsal; default out/gpu-rehearsal)
#
# Copies what would travel to the GPU machine (git ls-files: tracked and untracked-not-ignored
# files, plus the bundle .gpu-bundle/ of `make gpu-bundle`) into a fresh temporary tree, and runs
# gpu-check's build, install and import steps there (--offline --build-only) with the network
# namespace cut (unshare -n), no .venv, a bare environment (env -i: no proxy, no pip
# configuration) and the bundle's OpenBLAS/LAPACKE only (RH_GPU_CHECK_BLAS=bundle), as if the
# machine had none.
#
# The interpreter is a Python 3.12 when one is found (the GPU machine's is 3.12, and the
# bundle's binary wheels are cp312), else python3; RH_REHEARSAL_PYTHON names another. It lacks
# the packages that the GPU image has (numpy, scipy, scikit-learn, scikit-build-core,
# pytest, ...): they are installed from the registry, BEFORE the network is cut, into a cache
# folder outside the tree (~/.cache/rhuber/gpu-rehearsal/) that stands in for the
# image's site-packages. What the bundle carries (jsonschema, hatchling, ...) is left out of it,
# so that it really comes from the bundle. docs/cuda.md says what this proves and what it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/gpu-rehearsal}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
bundle="${RH_GPU_BUNDLE:-.gpu-bundle}"
t0=$(date +%s)

if [[ ! -f "$bundle/MANIFEST.tsv" ]]; then
  echo "gpu-rehearsal: no bundle at $bundle: run make gpu-bundle first" >&2
  exit 1
fi

# The interpreter: a 3.12 first, as on the GPU machine.
python="${RH_REHEARSAL_PYTHON:-}"
if [[ -z "$python" ]]; then
  for candidate in python3.12 /usr/bin/python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 \
                   python3; do
    if real="$("$candidate" -c 'import sys; print(sys.executable)' 2>/dev/null)"; then
      python="$real"
      break
    fi
  done
fi
version="$("$python" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"
echo "gpu-rehearsal: $python (cp$version)"
if [[ "$version" != 312 ]]; then
  echo "gpu-rehearsal: not Python 3.12: the bundle's cp312 wheels will not install" >&2
fi

# The GPU image's packages that the build, install and import steps use, from the registry.
image_packages=(numpy scipy scikit-learn "scikit-build-core>=0.10" packaging
                pathspec pluggy attrs typing-extensions pytest hypothesis threadpoolctl)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rhuber/gpu-rehearsal"
site="$cache/site-cp$version"
if [[ "$(cat "$site/.packages" 2>/dev/null)" != "${image_packages[*]}" ]]; then
  echo "gpu-rehearsal: installing the image's packages into $site (registry; network still up)"
  rm -rf "$site"
  "$python" -m pip install --quiet --disable-pip-version-check --target "$site" \
    "${image_packages[@]}"
  echo "${image_packages[*]}" > "$site/.packages"
fi

# What travels: the tree as the device tool sends it, and the bundle (carried).
tmp="$(mktemp -d /tmp/rh-gpu-rehearsal.XXXXXX)"
trap '[[ -n "${RH_REHEARSAL_KEEP:-}" ]] || rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree" "$tmp/home"
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$tmp/tree"
cp -a "$bundle" "$tmp/tree/.gpu-bundle"
echo "gpu-rehearsal: tree copied to $tmp/tree, $(du -sm "$tmp/tree" | cut -f1) MB with the bundle" \
  "(the device tool's limit: 64 MiB)"

# The network cut: unshare -n where permitted (root, or user namespaces); else say so.
cut=(unshare -n)
if ! unshare -n true 2>/dev/null; then
  echo "gpu-rehearsal: unshare -n is not permitted here: running without the network cut" \
    "(pip --no-index and a bare environment still keep the registry out)" >&2
  cut=()
fi
# The GPU machine has 16 cores: a slower machine gets longer time limits.
scale=$(( ($(nproc) + 15) / $(nproc) ))
status=0
(cd "$tmp/tree" && "${cut[@]}" env -i HOME="$tmp/home" TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  PIP_CONFIG_FILE=/dev/null PYTHON="$python" PYTHONPATH="$site" RH_GPU_CHECK_BLAS=bundle \
  RH_GPU_CHECK_TIME_SCALE="$scale" RH_GPU_CHECK_PREFIX="$tmp/prefix" \
  bash scripts/gpu_check.sh --offline --build-only "$out") || status=$?
echo "gpu-rehearsal: $([[ $status == 0 ]] && echo passed || echo "FAILED (exit $status)") in" \
  "$(( $(date +%s) - t0 )) s${cut:+ (network cut)}; summary in $out/summary.txt"
exit "$status"
