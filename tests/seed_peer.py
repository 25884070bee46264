"""Running the seed system (renewable-huber 0.7.1) from its own venv, for the differential test.

The seed is never imported here: ``.venv-seed/bin/python scripts/seed/driver.py stream`` runs
it and the two sides exchange ``.npz`` files in a temporary folder (``make seed-venv`` builds
that venv with the seed's two distributions only).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEED_PYTHON = ROOT / ".venv-seed" / "bin" / "python"
DRIVER = ROOT / "scripts" / "seed" / "driver.py"
MISSING = (f"the seed system's venv {SEED_PYTHON.parent.parent} is missing: build it with "
           "`make seed-venv` (renewable-huber 0.7.1 from PyPI); `make test-seed` builds it "
           "and runs this test")


def run_seed(config: dict[str, Any], batches: list[tuple], probe: np.ndarray,
             folder: Path) -> dict[str, Any]:
    """Stream ``batches`` ((X, y, w or None), ...) through the seed's estimator.

    Returns ``{"coef": [...], "information": [...], "batches": [records], "predictions"}``:
    the state after every batch and the predictions on ``probe`` after the last.
    """
    if not SEED_PYTHON.exists():
        raise RuntimeError(MISSING)
    inputs: dict[str, np.ndarray] = {"probe": probe}
    for b, (X, y, w) in enumerate(batches):
        inputs[f"X{b}"], inputs[f"y{b}"] = X, y
        if w is not None:
            inputs[f"w{b}"] = w
    np.savez(folder / "inputs.npz", **inputs)
    request = {"config": config, "inputs": str(folder / "inputs.npz"),
               "output": str(folder / "output.npz")}
    (folder / "request.json").write_text(json.dumps(request))
    done = subprocess.run([str(SEED_PYTHON), str(DRIVER), "stream", str(folder / "request.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the seed driver failed ({done.returncode}): {done.stderr[-2000:]}")
    with np.load(folder / "output.npz", allow_pickle=False) as out:
        n = len(batches)
        records = json.loads(str(out["records"]))
        return {"coef": [out[f"coef{b}"] for b in range(n)],
                "information": [out[f"information{b}"] for b in range(n)],
                "batches": records["batches"], "backend": records["backend"],
                "predictions": out["predictions"]}
