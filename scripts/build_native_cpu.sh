#!/usr/bin/env bash
# Builds the distribution rhuber-native-cpu (python-cpu/, CMake sources in native/) and
# installs it into the virtual environment (scripts/lib/install_native.sh says how).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/install_native.sh

install_native ./python-cpu rhuber-native-cpu
"$python" -c "import _rhuber_native_cpu as m; print('installed', m.__name__, m.__version__)"
