"""rhuber profile and rhuber top, as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import NATIVE_CPU, require_module
from rhuber.cli import main

require_module(*NATIVE_CPU)

SMALL = ["--rows", "6000", "--n-features", "8", "--batch-size", "2000"]


def test_profile_prints_the_table_and_writes_the_files(capsys, tmp_path):
    trace, dot, report = tmp_path / "out.json", tmp_path / "out.dot", tmp_path / "report.json"
    status = main(["profile", "demo", *SMALL, "--trace", str(trace), "--dot", str(dot),
                   "--json", str(report), "--tree"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "rhuber profile: demo 6,000 rows × 8 features, 3 batches" in out
    assert "brick            category        calls" in out
    for brick in ("gram", "solve", "residual", "predict"):
        assert f"\n{brick} " in out
    assert "steady batches" in out and "critical path" in out and "busiest brick" in out
    assert json.loads(trace.read_text())["traceEvents"]
    assert dot.read_text().startswith("digraph")
    assert json.loads(report.read_text())["metadata"]["batches"] == 3


def test_profile_a_file_on_the_reference(capsys, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    np.savetxt(tmp_path / "d.csv", np.column_stack([X, X @ [1, 2, 3]]), delimiter=",",
               header="a,b,c,y", comments="")
    status = main(["profile", str(tmp_path / "d.csv"), "--target", "y", "--backend", "numpy",
                   "--batch-size", "1000"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "backend numpy" in out and "\ngram " in out


def test_profile_refuses_a_missing_directory(capsys, tmp_path):
    status = main(["profile", *SMALL, "--trace", str(tmp_path / "no" / "t.json")])
    assert status == 2
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_top_in_a_real_terminal(tmp_path):
    session = f"rhuber-top-{os.getpid()}"
    status_file = tmp_path / "status"
    command = (
        f"{sys.executable} -m rhuber.cli top demo --rows 20000 --n-features 10 "
        f"--batch-size 2000 --duration 4 --interval 0.2; echo $? > {status_file}; sleep 30"
    )
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    command], check=True)
    try:
        live = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "suggest" not in live:
            time.sleep(0.3)
            live = _capture(session)
        assert "rhuber top" in live and "rows/s" in live and "bottleneck:" in live, live
        assert "gram" in live and "share" in live and "convergence:" in live, live
        assert "q or Ctrl-C to stop" in live
        # the tuner's panel: the workload streamed, the plan running against the advisor's
        assert "recommendations" in live, live
        assert "workload n2000/p10/float64/l1=0/icpt=1/host" in live, live
        assert "running  native_cpu/" in live and "measured " in live, live
        assert "advisor  " in live and "predicted " in live and "suggest  " in live, live
        assert all(len(line) <= 120 for line in live.splitlines())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not status_file.exists():
            time.sleep(0.3)
        assert status_file.read_text().strip() == "0"
        final = _capture(session)  # back on the normal screen: the last frame stays
        assert "rhuber top (finished)" in final and "batches" in final, final
        assert "recommendations" in final and "suggest  " in final, final
        assert "\x1b" not in final
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def _capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                          text=True, check=False).stdout


def test_top_without_a_terminal_prints_the_final_frame(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "rhuber.cli", "top", *SMALL, "--batches", "4"],
        capture_output=True, text=True, timeout=120, cwd=Path(tmp_path), check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "rhuber top (finished)" in done.stdout and "bottleneck:" in done.stdout
    assert "workload n2000/p8/float64/l1=0/icpt=1/host" in done.stdout
    assert "running  " in done.stdout and "advisor  " in done.stdout
    assert "batches      4" in done.stdout
