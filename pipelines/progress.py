"""The progress bars of a run (fed by either runner's ``on_progress`` reports), of a data file's bytes
read (an ingest, a run's or a prediction's loading) and of the rows predicted."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from tqdm import tqdm

from omkl_dist._numba_cache import use_versioned_cache
from omkl_dist.evaluation.compile_clock import CompileClock

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
        self._clock: CompileClock | None = None
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
            self._clock = CompileClock(on_first=self.compiling).__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._clock is not None:
            self._clock.__exit__(*exc)
            self.compile_seconds = self._clock.seconds + (self._helper.waited if self._helper is not None else 0.0)
        if self.bar is not None:
            self.bar.close()
        if self.compile_seconds > 0:
            how = "" if self._helper is None else f", {self._helper.note()}"
            took = f"{self.compile_seconds:.1f} s" if self.compile_seconds >= 0.05 else "under 0.1 s"  # (not "0.0 s")
            print(f"compiling took {took} (first use{how})", file=sys.stderr, flush=True)


class CountProgress:
    """A tqdm bar of a count -- a file's bytes read (``unit="B"``, :func:`~omkl_dist.storage.ingest`'s
    and :func:`~omkl_dist.storage.read_dataset`'s ``progress`` reports), rows predicted -- on standard
    error, shown from the first report that is not already the end (a small file, read or predicted in
    one go, shows none); a context manager that closes it. A 6 GB export takes a minute or two to read,
    which a silent command shows as hung."""

    def __init__(self, desc: str, *, show: bool = True, unit: str = "B"):
        self.desc, self.show, self.unit, self.bar = desc, show, unit, None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if done >= total:  # all in one go: a bar would only flash
                return
            self.bar = tqdm(
                total=total,
                unit=self.unit,
                unit_scale=True,
                unit_divisor=1024 if self.unit == "B" else 1000,
                desc=self.desc,
                disable=not self.show,
                file=sys.stderr,
                dynamic_ncols=True,
            )
        elif done < self.bar.n or total != self.bar.total:  # (another file, or the same one read again)
            self.bar.reset(total)
        self.bar.update(done - self.bar.n)

    def __enter__(self) -> CountProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Leave the bar as it is (its time stops); a later report starts another."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
            sys.stderr.flush()  # (the bar's last newline, before anything printed next on standard output)


# the learners that keep a support vector for every update, with no budget: a row is scored against all
# of them, so the time a pass takes grows as much as the square of the stream's length (OMKC on a
# generated 1,000,000-row stream: 600 rows/s at row 125,000 and slowing, where SPA took 70 s in all)
UNBUDGETED = ("omkc", "omkc-pa", "om2", "perceptron", "perceptron-u", "perceptron-star")
NOTE_SECONDS = 600.0  # a pass projected to take longer than this is noted
SAMPLE = 0.05  # share of the stream seen before the projection is trusted


def advising(algo: str, bar: Callable[[dict], None]) -> Callable[[dict], None]:
    """``bar`` (a :class:`ProgressBar`), first saying on standard error, once, when ``algo`` has no
    budget and the whole stream, at its pace so far, would take more than :data:`NOTE_SECONDS`: its
    time per row grows with the support vectors, so the projection is quadratic in the rows (the
    bar's own estimate assumes a constant speed). The clock starts after the first block (whose
    time includes compiling)."""
    told, first = algo not in UNBUDGETED, None

    def progress(counts: dict) -> None:
        nonlocal told, first
        n, total = counts["n_seen"], counts["n_rows"]
        if not told and n > 0:
            now = time.perf_counter()
            if first is None:
                first = (n, now)
            elif n >= max(2 * first[0], SAMPLE * total):
                told = True
                n0, t0 = first
                projected = (now - t0) * (total**2 - n0**2) / (n**2 - n0**2)
                if projected > NOTE_SECONDS:
                    took = f"{projected / 3600:.1f} hours" if projected >= 7200 else f"{projected / 60:.0f} minutes"
                    print(
                        f"note: {algo} keeps a support vector for every update, with no budget, so each row costs "
                        f"more than the last: at this pace the {total:,} rows take about {took} (the bar assumes a "
                        "constant speed). For long streams: bpas, rbp, forgetron or bogd (a budget per kernel), "
                        "fogd or nogd (explicit features), or spa (sparse updates).",
                        file=sys.stderr,
                        flush=True,
                    )
        bar(counts)

    return progress
