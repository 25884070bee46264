#!/usr/bin/env bash
# Nsight Compute on the engine's own kernels (occupancy, memory traffic, divergence, roofline),
# restricted to the first timed fit so the warm-up is not measured.
#
#   scripts/profiling/ncu_profile.sh OUT_DIR [profile_cuda_update.py options]
#
# Writes OUT_DIR/cuda_kernels.ncu-rep (local artifact, not committed), OUT_DIR/details.txt and
# OUT_DIR/metadata.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: ncu_profile.sh OUT_DIR [profile_cuda_update.py options]}"
shift
mkdir -p "$out"
python="${VENV:-.venv}/bin/python"
command=("$python" scripts/profiling/profile_cuda_update.py --fits 1 --json "$out/timings.json"
         "$@")

"$python" scripts/profiling/capture_metadata.py "$out/metadata.json" --tool ncu -- "${command[@]}"
ncu --force-overwrite --export "$out/cuda_kernels" --set full \
  --nvtx --nvtx-include "rh.profile/fit[0]/" \
  --kernel-name regex:"huber|scale_rows|residual|one_norm|assemble|change|syrk|gemv|potrf|getrf" \
  --launch-count 60 "${command[@]}"
ncu --import "$out/cuda_kernels.ncu-rep" --page details --print-units base > "$out/details.txt"
echo "wrote $out/cuda_kernels.ncu-rep, $out/details.txt, $out/metadata.json"
