"""The ``omkl`` console script: a Ctrl-C while the command line is still importing is a Ctrl-C too.

Loading a command imports numpy, numba, dask and more, which takes seconds; a Ctrl-C in that time
raised KeyboardInterrupt out of an import, outside every handler, or an extension's initialisation
turned it into an ImportError, and Python printed a traceback. This module imports nothing heavy
itself (its package ``omkl_dist`` and ``omkl_dist.pipelines`` load light), so it can catch that and
answer as every command does after starting: the ``interrupted`` line and exit status 130. The
command line imports each command's module when it runs (:mod:`.cli`), inside
:func:`imports_interruptible` too.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import signal
import sys
import threading
from collections.abc import Iterator

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
INTERRUPTED = "interrupted: nothing half-written was kept"


def main() -> None:
    """Run ``omkl`` (``omkl_dist.pipelines.cli:main``), an interrupted import included. A first
    ``omkl run`` starts its compile-ahead helper before the imports (:mod:`.compile_ahead`), and
    stops it when the command ends, however it ends."""
    collect_once_at_exit()
    helper = None
    try:
        try:
            with imports_interruptible():
                if sys.argv[1:2] == ["run"]:
                    from omkl_dist.pipelines import compile_ahead

                    helper = compile_ahead.start(sys.argv[2:])
                from omkl_dist.pipelines.cli import main as cli
        except KeyboardInterrupt:
            print(INTERRUPTED, file=sys.stderr)
            raise SystemExit(EXIT_INTERRUPTED) from None
        cli()
    finally:
        if helper is not None:
            helper.stop()


@functools.cache  # registered once per process (the command line may be called again in one)
def collect_once_at_exit() -> None:
    """Have this process's exit collect its garbage once and then leave every object still alive
    out of the collections the interpreter runs as it shuts down (``gc.freeze``, at exit: atexit
    handlers registered later -- Dask's, logging's -- run before it). Those collections traverse
    every object of the modules loaded -- numba's, scipy's, scikit-learn's, pandas', millions --
    again and again, only to free memory the process gives back anyway: 0.5-1 s at the end of
    every ``omkl`` command on a 2-core machine, 0.05 s after this. What only a collection frees (an
    object of the command's in a reference cycle) is still collected and finalised, and now while
    the modules are intact (at the shutdown's own collection a finalizer could find ``open`` gone)."""
    atexit.register(_collect_then_freeze)


def _collect_then_freeze() -> None:
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def imports_interruptible() -> Iterator[None]:
    """A Ctrl-C during the block's imports raises KeyboardInterrupt out of it, also when an extension
    wrapped it (ImportError, SystemError, ...) or swallowed it; Ctrl-C's handler is given back after.
    Outside the main thread (the command line invoked from a thread), which Ctrl-C does not reach and
    where no handler can be set: nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed, before = _note_ctrl_c()
    unraisable = sys.unraisablehook

    def quiet_ctrl_c(info: object) -> None:
        if not isinstance(getattr(info, "exc_value", None), KeyboardInterrupt):
            unraisable(info)  # type: ignore[arg-type]

    # a Ctrl-C that lands in a callback Python cannot raise from (importlib's module locks' weakref
    # callbacks) was "Exception ignored ... Traceback ... KeyboardInterrupt" and the command went on:
    # it is noted in ``pressed`` and raised when the block ends
    sys.unraisablehook = quiet_ctrl_c
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        if not (pressed or _interrupted(exc)):
            raise
        raise KeyboardInterrupt from exc
    finally:
        signal.signal(signal.SIGINT, before)
        sys.unraisablehook = unraisable
    if pressed:
        raise KeyboardInterrupt


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
