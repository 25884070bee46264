"""Checkpoints under faults: a full disk, and writers killed with SIGKILL at random points.

Both run in a child process: the disk is "filled" with RLIMIT_FSIZE (SIGXFSZ ignored, so write()
fails with EFBIG like a full disk fails with ENOSPC), and the kill loop forks writers from a
child that imported NumPy once, so that 200 kills take seconds. docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rhuber import RenewableHuberRegressor

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork, flock and rlimits: Linux")

KILLS = 200

# The child of the kill test. It writes a state numbered k (coef = [k, k]) with write_checkpoint
# in a loop, in a forked writer that says which k it starts before each write; the loop kills
# the writer after a random delay, then checks what is on disk.
KILL_LOOP = textwrap.dedent(
    """
    import json, os, random, signal, sys, time
    from pathlib import Path

    import numpy as np
    from rhuber.checkpoint import read_checkpoint, write_checkpoint

    def payload(k):
        return {"format_version": np.int64(2), "coef": np.full(2, float(k)),
                "information": np.eye(2) * (k + 1), "n_samples_seen": np.int64(k),
                "effective_weight": np.float64(k), "batch_count": np.int64(k),
                "previous_lambda": np.float64(0), "scale": np.float64(1),
                "dtype": np.str_("float64"), "fit_intercept": np.bool_(True),
                "n_features_in": np.int64(1), "params": np.str_("{}"),
                "library_version": np.str_("test"),
                # bulk, so that a write takes long enough to be killed in its middle
                "feature_names_in": np.array(["x" * 200_000])}

    def on_disk(path):
        p = read_checkpoint(path)
        k = p["n_samples_seen"]
        assert np.array_equal(p["coef"], np.full(2, float(k))), "coef does not match its k"
        assert np.array_equal(p["information"], np.eye(2) * (k + 1)), "information torn"
        return k

    directory, kills, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    path = directory / "model.npz"
    rng = random.Random(seed)
    write_checkpoint(path, payload(0))
    t0 = time.perf_counter(); write_checkpoint(path, payload(0))
    write_seconds = time.perf_counter() - t0
    report = {"kills": 0, "errors": [], "max_debris": 0, "final_debris": None,
              "states": set(), "interrupted": 0, "write_seconds": write_seconds}
    for i in range(kills):
        start = on_disk(path)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: k = start + 1, start + 2, ... until killed
            os.close(read_end)
            k = start
            while True:
                k += 1
                os.write(write_end, f"{k} ".encode())
                write_checkpoint(path, payload(k))
        os.close(write_end)
        time.sleep(rng.uniform(0, 4 * write_seconds))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read_end) as pipe:
            started = [int(k) for k in pipe.read().split()]
        report["kills"] += 1
        last = started[-1] if started else start
        try:
            k = on_disk(path)
        except Exception as exc:
            report["errors"].append(f"kill {i}: the file does not load: {exc}")
            break
        if k not in (last - 1, last) and not (k == start and not started):
            report["errors"].append(f"kill {i}: on disk k={k}, the writer had started {last}")
        report["states"].add(k)
        report["interrupted"] += bool(started) and k == last - 1  # killed inside a write
        debris = len(list(directory.glob(".model.npz.*.tmp")))
        report["max_debris"] = max(report["max_debris"], debris)
    write_checkpoint(path, payload(on_disk(path) + 1))  # one clean write sweeps the last one
    report["final_debris"] = sorted(p.name for p in directory.iterdir() if p.name != "model.npz")
    report["states"] = len(report["states"])
    print(json.dumps(report))
    """
)

# The child of the disk-full test: the old checkpoint is on disk; the new one is larger than
# the file size limit.
DISK_FULL = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path

    from rhuber import RenewableHuberRegressor

    path = Path(sys.argv[1])
    model = RenewableHuberRegressor.load_checkpoint(sys.argv[2])  # the larger state
    before = path.read_bytes()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    results = []
    for limit in [int(a) for a in sys.argv[3:]]:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        try:
            model.save_checkpoint(path)
            outcome = {"limit": limit, "raised": None}
        except OSError as exc:
            outcome = {"limit": limit, "raised": type(exc).__name__, "errno": exc.errno,
                       "message": str(exc)}
        outcome["intact"] = path.read_bytes() == before
        outcome["files"] = sorted(p.name for p in path.parent.iterdir())
        results.append(outcome)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    model.save_checkpoint(path)  # room again: the write goes through
    results.append({"limit": None, "loads": RenewableHuberRegressor.load_checkpoint(path)
                    .n_features_in_})
    print(json.dumps(results))
    """
)


def _run(code: str, *args: object, timeout: float) -> object:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kill_9_during_checkpoint_writes_leaves_old_or_new_and_no_debris(tmp_path):
    report = _run(KILL_LOOP, tmp_path, KILLS, 20261201, timeout=240)
    assert report["errors"] == []
    assert report["kills"] == KILLS
    # An interrupted temporary lives only until the next write: never more than one here.
    assert report["max_debris"] <= 1
    assert report["final_debris"] == []
    # The kills landed at many points: inside writes, and between them as the stream advanced
    # (how many of each depends on the machine's load; these bounds hold with room to spare).
    assert report["interrupted"] >= KILLS // 10
    assert report["states"] >= KILLS // 20


def _fitted(n_features: int, seed: int) -> RenewableHuberRegressor:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, n_features))
    return RenewableHuberRegressor(backend="numpy").fit(X, X.sum(axis=1) + rng.normal(size=200))


def test_disk_full_during_save_is_a_clear_error_and_the_old_checkpoint_is_intact(tmp_path):
    path, larger = tmp_path / "disk" / "model.npz", tmp_path / "source.npz"
    path.parent.mkdir()
    _fitted(2, 0).save_checkpoint(path)
    _fitted(60, 1).save_checkpoint(larger)
    size = larger.stat().st_size
    limits = [0, 1, 100, 1000, size // 2, size - 1]
    results = _run(DISK_FULL, path, larger, *limits, timeout=120)
    for outcome in results[:-1]:
        assert outcome["raised"] == "OSError", outcome
        assert outcome["errno"] == 27  # EFBIG, as ENOSPC would be on a full disk
        assert "file system is full or the file size limit is reached" in outcome["message"]
        assert "previous checkpoint, if any, is intact" in outcome["message"]
        assert outcome["intact"], outcome
        assert outcome["files"] == ["model.npz"], outcome  # no temporary left behind
    assert results[-1] == {"limit": None, "loads": 60}


def test_a_live_writers_temporary_is_not_removed(tmp_path):
    """The sweep removes only unlocked temporaries: a concurrent writer's file survives."""
    import fcntl

    from rhuber.checkpoint import write_checkpoint

    model = _fitted(2, 0)
    live = tmp_path / ".model.npz.live.tmp"
    dead = tmp_path / ".model.npz.dead.tmp"
    dead.write_bytes(b"half a checkpoint")
    with open(live, "wb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        write_checkpoint(tmp_path / "model.npz", model.state_dict())
        assert live.exists() and not dead.exists()
    # Its writer gone (the lock released), it is swept like any other; another checkpoint's
    # temporary is not ours.
    other = tmp_path / ".other.npz.x.tmp"
    other.write_bytes(b"")
    write_checkpoint(tmp_path / "model.npz", model.state_dict())
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.npz.x.tmp", "model.npz"]
