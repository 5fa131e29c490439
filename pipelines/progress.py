"""The progress bar of a run: fed by either runner's ``on_progress`` reports."""

from __future__ import annotations

import sys
import threading
import time

from tqdm import tqdm

from omkl_dist._numba_cache import use_versioned_cache

COMPILING = "compiling numba's kernels for this code path (first use; kept in the cache, later runs load them) ..."


class ProgressBar:
    """A tqdm bar on standard error, started at a runner's first report (its total and starting
    row) and updated with the rows seen and the mistake rate so far; a context manager that closes
    it. Shown, it says when numba compiles (:data:`COMPILING`, once, and the bar's label reads
    "compiling" until the next report) and, at the end, how long compiling took: a path's first
    run spends 5-20 s there before its first block, which a bar alone shows as stuck at 0 %.

    >>> with ProgressBar("spa on codrna", show=False) as bar:  # doctest: +SKIP
    ...     LocalRunner(on_progress=bar).fit(job, "codrna")
    """

    def __init__(self, desc: str, *, show: bool = True):
        self.desc, self.show, self.bar = desc, show, None
        self._labelled_compiling = False  # the bar's label says "compiling" (a disabled tqdm has no label)
        self.compile_seconds = 0.0  # numba's compiling inside the block, wall seconds
        self._watch: _CompileWatch | None = None
        self._listener = None
        self._helper = None  # the run's compile_ahead.Helper, if its first block was compiled ahead

    def compiled_ahead(self, helper) -> None:
        """The run compiled its first block ahead, beside a helper process
        (:func:`.compile_ahead.compile_first_use`; None: it did not): the time waiting for the
        helper is compiling too, and the closing line says on how many cores."""
        self._helper = helper

    def __call__(self, progress: dict) -> None:
        if self.bar is None:
            self.bar = tqdm(
                total=progress["n_rows"],
                initial=progress["n_seen"],
                unit="inst",
                desc=self.desc,
                disable=not self.show,
                file=sys.stderr,
                dynamic_ncols=True,
            )
        elif self._labelled_compiling:  # a block learnt since compiling began
            self.bar.set_description_str(self.desc, refresh=False)
            self._labelled_compiling = False
        rate = 100.0 * progress["n_mistakes"] / max(progress["n_seen"], 1)
        self.bar.set_postfix(mistakes=f"{rate:.2f}%", refresh=False)  # before the update, which draws it
        self.bar.update(progress["n_seen"] - self.bar.n)

    def compiling(self) -> None:
        """numba began its first compile in this block: say so (once), the bar's label too."""
        tqdm.write(COMPILING, file=sys.stderr)
        if self.bar is not None and self.show:
            self.bar.set_description_str(f"{self.desc}: compiling (first use)")
            self._labelled_compiling = True

    def __enter__(self) -> ProgressBar:
        if self.show:
            use_versioned_cache()  # (numba reads its cache folder when imported)
            from numba.core import event

            self._watch = _CompileWatch(self)
            self._listener = _listener(self._watch)
            event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        if self._watch is not None:
            from numba.core import event

            event.unregister("numba:compile", self._listener)
            self.compile_seconds = self._watch.seconds + (self._helper.waited if self._helper is not None else 0.0)
        if self.bar is not None:
            self.bar.close()
        if self.compile_seconds > 0:
            how = "" if self._helper is None else f", {self._helper.note()}"
            print(f"compiling took {self.compile_seconds:.1f} s (first use{how})", file=sys.stderr, flush=True)


class _CompileWatch:
    """numba's compile events (a cache miss: loading from the cache raises none) -> the bar. A
    compile's nested compiles (its callees) count once; per thread, for an in-process cluster's."""

    def __init__(self, bar: ProgressBar):
        self.bar, self.seconds, self.said = bar, 0.0, False
        self._local = threading.local()
        self._lock = threading.Lock()

    def on_start(self, event) -> None:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0:
            self._local.started = time.perf_counter()
            with self._lock:
                first, self.said = not self.said, True
            if first:
                self.bar.compiling()

    def on_end(self, event) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            with self._lock:
                self.seconds += time.perf_counter() - self._local.started


def _listener(watch: _CompileWatch):
    """``watch`` as numba's events take it (numba imported only here, after its cache folder is set)."""
    from numba.core.event import Listener

    class Forward(Listener):
        def on_start(self, event) -> None:
            watch.on_start(event)

        def on_end(self, event) -> None:
            watch.on_end(event)

    return Forward()
