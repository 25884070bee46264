#!/usr/bin/env bash
# Builds the distribution rhuber-native-cuda (python-cuda/, CMake sources in
# native/cuda/) and installs it into the virtual environment (scripts/lib/install_native.sh says
# how). Needs the CUDA toolkit (nvcc; CUDACXX or /usr/local/cuda/bin/nvcc), not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/install_native.sh

export CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [[ ! -x "$CUDACXX" ]]; then
  echo "nvcc not found at $CUDACXX: install the CUDA toolkit or set CUDACXX" >&2
  exit 1
fi

install_native ./python-cuda rhuber-native-cuda
# Importing needs no GPU; making an engine does.
"$python" -c "from rhuber import _native; m = _native.load('cuda'); print('installed', m.LIBRARY_PATH, 'ABI', hex(m.abi_version()))"
