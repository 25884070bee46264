"""The ``rhuber`` command line: stream a built-in demo or a data file through the estimator.

One module per command group (``demo``, ``fit``, ``predict``, ``profile``, ``top``, ``trace``,
``tune``) and ``_common`` for what they share; each has ``add_<name>``, which declares the
command's arguments, and a function that runs it and returns the exit status. Every error a
user can cause (a bad file, a bad checkpoint, a bad parameter, an engine that is not installed)
ends as one line, ``rhuber: error: <message>``, and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

from .._version import __version__
from ._common import fail
from .demo import add_demo
from .fit import add_fit
from .predict import add_predict
from .profile import add_profile
from .top import add_top
from .trace import add_trace
from .tune import add_tune


def main(argv: list[str] | None = None) -> int:
    """Run ``rhuber`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name.

    Returns
    -------
    int
        0 on success, 2 on a usage or data error (the message is on stderr), 130 when
        interrupted, 141 when stdout is closed early (a pipe into ``head``).
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors; stay callable in-process
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.run(args)
    except (ValueError, ArithmeticError, ImportError) as exc:
        # DataFileError, CheckpointError and the estimator's parameter errors are ValueErrors,
        # NumericalError an ArithmeticError, EngineNotAvailableError an ImportError.
        return fail(str(exc))
    except BrokenPipeError:
        # The reader of stdout went away (``rhuber predict ... | head``): stop quietly, as a
        # command killed by SIGPIPE would, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        print("rhuber: interrupted", file=sys.stderr)
        return 130


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A warning as one line in the command's words (what a library shows as a source line)."""
    print(f"rhuber: warning: {message}", file=sys.stderr if file is None else file)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rhuber",
        description="Streaming robust (Huber) regression, one batch at a time.",
    )
    parser.add_argument("--version", action="version", version=f"rhuber {__version__}")
    parser.set_defaults(run=None)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (add_demo, add_fit, add_predict, add_profile, add_top, add_trace, add_tune):
        add(commands)
    return parser


if __name__ == "__main__":
    sys.exit(main())
