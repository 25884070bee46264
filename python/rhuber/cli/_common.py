"""The option groups, readers, streaming loop and tables the `rhuber` commands share."""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning

from .._atomic import atomic_write
from ..core import L1_SOLVERS
from ..core.ladder import ill_conditioned, ill_conditioning_message
from ..datasets import make_contaminated_stream
from ..errors import DriftWarning, IllConditionedWarning
from ..io import DEFAULT_BATCH_SIZE, BatchReader, DataFileError, read_batches

all__ = ["main"]


BACKENDS = ("auto", "numpy", "native_cpu", "cuda")


MAX_TABLE_ROWS = 20  # longer per-batch or coefficient tables show their head and tail


def fail(message: str) -> int:
    print(f"rhuber: error: {message}", file=sys.stderr)
    return 2


def positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def add_engine_options(parser: argparse.ArgumentParser, batch_size: int) -> None:
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=batch_size,
        metavar="N",
        help=f"rows per batch (default {batch_size:,})",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="engine: auto picks native_cpu when installed, else numpy (default auto)",
    )


def add_lambda_scale(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lambda-scale", type=float, default=None, metavar="C",
        help="the paper's L1 schedule λ_b = C · τ_b · √(log(max(p, 2)) / N_b) instead of --alpha",
    )


def add_penalty_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--alpha", type=float, default=0.0, help="L1 strength per unit of weight (default 0)"
    )
    parser.add_argument(
        "--l1-solver", choices=L1_SOLVERS, default="lamm",
        help="solver of L1 batches: lamm (the contract's, default) or prox_newton (opt-in, "
             "native_cpu only: fewer passes over each batch)",
    )


def add_column_options(parser: argparse.ArgumentParser, *, target_help: str) -> None:
    parser.add_argument("--target", metavar="COL", help=target_help)
    parser.add_argument(
        "--features",
        type=lambda text: [c.strip() for c in text.split(",") if c.strip()],
        metavar="A,B,C",
        help="the feature columns, in order (default: every column but the target)",
    )


def labelled(reader: BatchReader, named: bool) -> Iterator[tuple[Any, NDArray | None]]:
    """``(X, y)`` of every batch; with ``named``, X as a DataFrame named by the file's columns
    (:meth:`BatchReader.frames`; arrays have no names).

    Fitted on named columns, the estimator records ``feature_names_in_`` in the checkpoint,
    and ``predict`` can then take the same columns by name from a file that orders them
    differently.
    """
    for X, y, _ in (reader.frames() if named else reader):
        yield X, y


@contextmanager
def output(path: Path | None) -> Iterator[TextIO]:
    """stdout, or a file that appears only once it is complete (never half written)."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    check_directory(path)
    with atomic_write(path, newline="") as file:
        yield file


def batch_count_text(count: int) -> str:
    """"1 batch", "3 batches"."""
    return f"{count:,} batch" if count == 1 else f"{count:,} batches"


def check_directory(path: Path) -> None:
    """Fail before a long run, not after it, when the output cannot be written."""
    if not path.parent.is_dir():
        raise FileNotFoundError(2, "no such directory for the output", str(path.parent))


def add_stream_source(parser: argparse.ArgumentParser) -> None:
    """``[FILE | demo]`` with the demo's size options and a file's column options."""
    parser.add_argument(
        "source",
        nargs="?",
        default="demo",
        metavar="FILE | demo",
        help="a data file (as for fit), or 'demo' for the built-in workload (default demo)",
    )
    parser.add_argument(
        "--rows", type=positive_int, default=100_000, metavar="N",
        help="demo rows (default 100,000)",
    )
    parser.add_argument(
        "--n-features", type=positive_int, default=90, metavar="P",
        help="demo features (default 90)",
    )
    parser.add_argument("--seed", type=int, default=0, help="demo seed (default 0)")
    add_column_options(parser, target_help="the response column of FILE")
    add_engine_options(parser, DEFAULT_BATCH_SIZE)
    add_penalty_options(parser)


def open_source(args: argparse.Namespace, *, seed_offset: int = 0) -> tuple[str, Any, int | None]:
    """``(description, batches of (X, y), total rows)`` of the source."""
    if args.source == "demo" and (args.features is not None or args.target is not None):
        option = "--features" if args.features is not None else "--target"
        raise ValueError(f"{option} names a data file's columns, and the source is the demo "
                         "(give FILE first); the demo's size is --rows N and --n-features P")
    if args.source == "demo":
        stream = make_contaminated_stream(
            args.rows, args.n_features, batch_size=args.batch_size, seed=args.seed + seed_offset
        )
        return (
            f"demo {stream.n_samples:,} rows × {stream.n_features} features", stream,
            stream.n_samples,
        )
    path = Path(args.source)
    reader = read_batches(
        path, target=args.target, features=args.features, batch_size=args.batch_size
    )
    if reader.target is None:
        raise DataFileError(path, "name the response column with --target")
    description = f"{path} ({reader.format}), {len(reader.feature_columns)} features"
    return description, ((X, y) for X, y, _ in reader), reader.n_rows


@dataclass
class StreamStats:
    rows: int = 0
    batches: int = 0
    update_seconds: float = 0.0
    wall_seconds: float = 0.0


def stream_batches(
    estimator: Any,
    batches: Iterable[tuple[Any, NDArray]],
    *,
    total: int | None,
    observe: Callable[[Any, NDArray], None] | None = None,
    after: Callable[[Any], None] | None = None,
) -> StreamStats:
    """``partial_fit`` every batch, timing the updates alone.

    ``observe`` sees each batch before the update and outside the timing (the demo's least
    squares); ``after`` sees the estimator after each update, outside the timing too.
    Convergence, conditioning and drift warnings are silenced here because the per-batch table
    reports them, once for the run.
    """
    stats = StreamStats()
    start = time.perf_counter()
    with progress(total) as bar, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", IllConditionedWarning)
        warnings.simplefilter("ignore", DriftWarning)
        for X, y in batches:
            if observe is not None:
                observe(X, y)
            tick = time.perf_counter()
            estimator.partial_fit(X, y)
            stats.update_seconds += time.perf_counter() - tick
            if after is not None:
                after(estimator)
            stats.rows += len(y)
            stats.batches += 1
            bar.update(len(y))
    stats.wall_seconds = time.perf_counter() - start
    return stats


def progress(total: int | None) -> Any:
    """A tqdm bar on stderr in rows; silent when stderr is not a terminal."""
    try:
        from tqdm import tqdm
    except ImportError as exc:
        raise ImportError(
            "the command line needs tqdm: pip install 'rhuber[cli]'"
        ) from exc
    return tqdm(
        total=total,
        unit="rows",
        unit_scale=True,
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        dynamic_ncols=True,
    )


def print_throughput(stats: StreamStats, *, excluded: str) -> None:
    rate = stats.rows / stats.update_seconds if stats.update_seconds > 0 else float("inf")
    print(
        f"update time: {stats.update_seconds:.3f} s for {stats.rows:,} rows in "
        f"{batch_count_text(stats.batches)} = {rate:,.0f} rows/s over all of them, the first "
        f"included ({excluded}; wall {stats.wall_seconds:.3f} s)"
    )


def print_diagnostics(diagnostics: list[dict], dtype: np.dtype, *, drift: bool = False,
                      factorization: str = "cholesky") -> None:
    """The per-batch table, then each kind of warning once for the whole run; ``drift`` adds
    the drift test's p-value column; ``factorization`` is the stream's (the warning names the
    qr mode as the remedy in the Cholesky mode only)."""
    header = (
        f"{'batch':>5}  {'converged':>9}  {'n_iter':>6}  {'bandwidth':>10}  "
        f"{'solver':>11}  {'rcond':>8}  {'objective':>12}"
    ) + (f"  {'drift p':>8}" if drift else "")
    lines = [
        f"{k:>5}  {'yes' if d['converged'] else 'NO':>9}  {d['n_iter']:>6}  "
        f"{d['bandwidth']:>10.4g}  {d['solver']:>11}  {format_rcond(d['rcond']):>8}  "
        f"{d['objective']:>12.6g}"
        + (f"  {format_pvalue(d.get('drift_pvalue')):>8}" if drift else "")
        for k, d in enumerate(diagnostics, start=1)
    ]
    print_rows(lines, header=header)
    unconverged = sum(not d["converged"] for d in diagnostics)
    if unconverged:
        print(f"warning: {unconverged} of {len(diagnostics)} batches did not converge")
    ill = [k for k, d in enumerate(diagnostics, start=1) if ill_conditioned(d["rcond"], dtype)]
    if ill:
        first = ill_conditioning_message(ill[0], diagnostics[ill[0] - 1], dtype, factorization)
        print(f"warning: {len(ill)} of {len(diagnostics)} batches were ill-conditioned; {first}")


def format_pvalue(p: float | None) -> str:
    """A drift p-value; "—" where the batch has no test (the first, a penalized one)."""
    return "—" if p is None or p != p else f"{p:.2g}"


def format_rcond(rcond: float | None) -> str:
    return "—" if rcond is None else f"{rcond:.1e}"


def print_rows(lines: list[str], *, header: str) -> None:
    print(header)
    if len(lines) > MAX_TABLE_ROWS:
        head, tail = MAX_TABLE_ROWS // 2, MAX_TABLE_ROWS // 4
        lines = [*lines[:head], f"  … {len(lines) - head - tail} more …", *lines[-tail:]]
    for line in lines:
        print(line)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(s|m|h)?\s*$")

def parse_duration(text: str) -> float:
    """Seconds from '90', '90s', '10m' or '1.5h'."""
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 10m or 1h, got "
                                         f"{text!r}")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]
