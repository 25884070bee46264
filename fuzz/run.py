"""Fuzz one target of fuzz/targets.py with atheris: ``python fuzz/run.py <target> [libFuzzer
flags and corpus directories]``, e.g. ``python fuzz/run.py csv -max_total_time=60 corpus/csv``.
scripts/fuzz.sh runs every target this way. The parsers' own Python code (this package's
checkpoint and io modules, NumPy's .npy/.npz readers, zipfile) is instrumented for coverage;
pandas' and pyarrow's C parsers are exercised but not instrumented."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
import targets  # imported plainly, then instrumented in place: see _instrument

INSTRUMENTED = ["rhuber.checkpoint", "rhuber.seed_checkpoint", "rhuber.io._arrays",
                "rhuber.io._base", "rhuber.io._tables",
                "rhuber.io", "numpy.lib._format_impl", "numpy.lib._npyio_impl",
                "zipfile"]


def _instrument(module_name: str) -> int:
    """Instrument, in place, the functions and methods defined in an imported module.

    atheris.instrument_imports would do it at import time, but its import hook slows every
    import inside it (NumPy, scikit-learn: ~15 s of start-up); these modules are a few dozen
    functions."""
    module = importlib.import_module(module_name)
    count = 0
    for obj in vars(module).values():
        if getattr(obj, "__module__", None) != module_name:
            continue
        members = vars(obj).values() if inspect.isclass(obj) else [obj]
        for member in members:
            function = getattr(member, "__func__", member)  # classmethods, staticmethods
            if inspect.isfunction(function):
                atheris.instrument_func(function)
                count += 1
    return count


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in targets.TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(targets.TARGETS)}}} [libFuzzer flags] [corpus]")
    for name in INSTRUMENTED:
        _instrument(name)
    atheris.Setup([sys.argv[0], *sys.argv[2:]], targets.TARGETS[sys.argv[1]])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
