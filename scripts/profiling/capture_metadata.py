#!/usr/bin/env python
"""Writes what a profile was taken with, next to the report (RFC 0001, "Nsight baseline"): the
tool's version, the driver, the CUDA runtime, the GPU, the command line, the workload shape and
the git revision. Binary reports stay local; this JSON is what may be committed.

    capture_metadata.py OUT.json --tool nsys -- <the profiled command line>
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*command: str) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout or out.stderr).strip() or None


def cuda_runtime_version() -> str | None:
    """The runtime librh_cuda loads (cudaRuntimeGetVersion), found the way the module finds it."""
    for name in ("libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so"):
        try:
            cudart = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int()
        if cudart.cudaRuntimeGetVersion(ctypes.byref(version)) == 0:
            return f"{version.value // 1000}.{version.value % 1000 // 10}"
    return None


def shape_of(command: list[str]) -> dict[str, str]:
    """The --rows/--features/... options of profile_cuda_update.py in the command line."""
    keys = ("--rows", "--features", "--batch-size", "--dtype", "--alpha", "--fits",
            "--device-resident")
    shape = {}
    for k, word in enumerate(command):
        if word in keys:
            value = command[k + 1] if k + 1 < len(command) and not command[k + 1].startswith(
                "--") else "true"
            shape[word.lstrip("-")] = value
    return shape


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tool", choices=("nsys", "ncu"), required=True)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    gpu = _run("nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
               "--format=csv,noheader")
    metadata = {
        "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "tool": args.tool,
        "tool_version": _run(args.tool, "--version"),
        "gpu": gpu,
        "driver": _run("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"),
        "cuda_runtime": cuda_runtime_version(),
        "nvcc": _run("nvcc", "--version"),
        "command_line": command,
        "shape": shape_of(command),
        "git_revision": _run("git", "-C", str(ROOT), "rev-parse", "HEAD"),
        "git_dirty": bool(_run("git", "-C", str(ROOT), "status", "--porcelain")),
        "host": platform.node(),
        "python": sys.version.split()[0],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(metadata, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
