"""The ``omkl`` console script: a Ctrl-C while the command line is still importing is a Ctrl-C too.

Loading the command line imports numpy, numba, dask and more, which takes seconds; a Ctrl-C in
that time raised KeyboardInterrupt out of an import, outside every handler, and Python printed a
traceback. This module imports nothing heavy itself (its package ``omkl_dist`` and
``omkl_dist.pipelines`` load light), so it can catch that and answer as every command does after
starting: the ``interrupted`` line and exit status 130.
"""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
INTERRUPTED = "interrupted: nothing half-written was kept"


def main() -> None:
    """Run ``omkl`` (``omkl_dist.pipelines.cli:main``), an interrupted import included. A first
    ``omkl run`` starts its compile-ahead helper before the imports (:mod:`.compile_ahead`), and
    stops it when the command ends, however it ends."""
    helper = None
    pressed, before = _note_ctrl_c()
    try:
        try:
            if sys.argv[1:2] == ["run"]:
                from omkl_dist.pipelines import compile_ahead

                helper = compile_ahead.start(sys.argv[2:])
            from omkl_dist.pipelines.cli import main as cli
        except BaseException as exc:  # an extension may wrap the Ctrl-C (ImportError, SystemError, ...)
            if not (pressed or _interrupted(exc)):
                raise
            print(INTERRUPTED, file=sys.stderr)
            raise SystemExit(EXIT_INTERRUPTED) from None
        finally:
            signal.signal(signal.SIGINT, before)
        cli()
    finally:
        if helper is not None:
            helper.stop()


def _note_ctrl_c() -> tuple[list[bool], object]:
    """``(pressed, the handler before)``: a Ctrl-C during the imports is noted in ``pressed`` as it
    raises its KeyboardInterrupt -- which an extension's initialisation may swallow and fail otherwise,
    with no trace of it (scipy's HiGHS: a bare ``ImportError``, exit status 1 and a traceback). A
    Ctrl-C that was ignored (``nohup``, a background job) stays ignored."""
    pressed: list[bool] = []
    before = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: object) -> None:
        pressed.append(True)
        signal.default_int_handler(signum, frame)

    if before is signal.default_int_handler:
        signal.signal(signal.SIGINT, note)
    return pressed, before


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a Ctrl-C.

    A Ctrl-C that lands inside a C extension's module initialisation (scipy's HiGHS, for one)
    surfaces as ``ImportError: initialization failed`` with the KeyboardInterrupt as its context.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
