#!/usr/bin/env bash
# Builds the distribution rhuber-native-cpu (python-cpu/, CMake sources in native/) and
# installs it into the virtual environment (scripts/lib/install_native.sh says how).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/install_native.sh

install_native ./python-cpu rhuber-native-cpu
"$python" -c "from rhuber import _native; m = _native.load('native_cpu'); print('installed', m.LIBRARY_PATH, m.__version__)"
