"""numba's compiling, timed while it happens: what a first run spends compiling is not learning.

numba compiles a kernel the first time it meets its argument types (a cache miss: loading from
the cache raises no event). A run on a fresh installation spends 5-20 s there, inside its first
blocks, and its learning time and speed would count it. :class:`CompileClock` listens to numba's
``numba:compile`` events while it is entered and adds up their wall time: a compile's nested
compiles (the functions it calls) once, and every thread's (numba compiles under one lock per
process, so two threads' compiles never overlap in time; a thread waiting for the lock waits
inside the other's compile).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class CompileClock:
    """Wall seconds numba spent compiling, in any thread, while entered (``seconds``).

    ``on_first``: called once, from the compiling thread, when the first compile begins (a
    progress bar says "compiling" there).

    >>> with CompileClock() as clock:  # doctest: +SKIP
    ...     model.fit(X, y)
    >>> clock.seconds  # doctest: +SKIP
    12.4
    """

    def __init__(self, on_first: Callable[[], None] | None = None):
        self.seconds = 0.0
        self._on_first = on_first
        self._began = False
        self._local = threading.local()  # per thread: the depth of nested compiles, when the outer began
        self._lock = threading.Lock()
        self._listener = None

    def __enter__(self) -> CompileClock:
        from numba.core import event

        self._listener = _listener(self)
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)

    def began(self) -> None:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0:
            self._local.started = time.perf_counter()
            with self._lock:
                first, self._began = not self._began, True
            if first and self._on_first is not None:
                self._on_first()

    def ended(self) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            with self._lock:
                self.seconds += time.perf_counter() - self._local.started


def _listener(clock: CompileClock):
    """``clock`` as numba's events take it."""
    from numba.core.event import Listener

    class Forward(Listener):
        def on_start(self, event) -> None:
            clock.began()

        def on_end(self, event) -> None:
            clock.ended()

    return Forward()
