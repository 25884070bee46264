#!/usr/bin/env bash
# Nsight Systems timeline of the CUDA engine: launches, synchronizations, transfers, cuBLAS and
# cuSOLVER calls, under the NVTX ranges of profile_cuda_update.py.
#
#   scripts/profiling/nsys_profile.sh OUT_DIR [profile_cuda_update.py options]
#
# Writes OUT_DIR/cuda_update.nsys-rep (local artifact, not committed), OUT_DIR/stats.txt (the
# summaries that answer the RFC's first-trace questions) and OUT_DIR/metadata.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: nsys_profile.sh OUT_DIR [profile_cuda_update.py options]}"
shift
mkdir -p "$out"
python="${VENV:-.venv}/bin/python"
command=("$python" scripts/profiling/profile_cuda_update.py --json "$out/timings.json" "$@")

"$python" scripts/profiling/capture_metadata.py "$out/metadata.json" --tool nsys -- "${command[@]}"
nsys profile --force-overwrite true --output "$out/cuda_update" \
  --trace cuda,nvtx,osrt,cublas,cusolver --cuda-memory-usage true --sample none \
  "${command[@]}"
nsys stats --force-export true --report nvtx_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum \
  --format column "$out/cuda_update.nsys-rep" > "$out/stats.txt"
echo "wrote $out/cuda_update.nsys-rep, $out/stats.txt, $out/metadata.json"
