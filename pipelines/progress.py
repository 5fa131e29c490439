"""The progress bar of a run: fed by either runner's ``on_progress`` reports."""

from __future__ import annotations

import sys

from tqdm import tqdm

from omkl_dist._numba_cache import cache_is_cold

COLD_CACHE_NOTE = (
    "note: first run of this omkl-dist version: numba compiles each code path on its first block "
    "(10-20 s at 0 %), once; later runs start at once (`omkl warmup` compiles them all ahead)"
)


class ProgressBar:
    """A tqdm bar on standard error, started at a runner's first report (its total and starting
    row) and updated with the rows seen and the mistake rate so far; a context manager that closes
    it. Shown, it first says when numba's cache is cold (:data:`COLD_CACHE_NOTE`).

    >>> with ProgressBar("spa on codrna", show=False) as bar:  # doctest: +SKIP
    ...     LocalRunner(on_progress=bar).fit(job, "codrna")
    """

    def __init__(self, desc: str, *, show: bool = True):
        self.desc, self.show, self.bar = desc, show, None

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
        self.bar.update(progress["n_seen"] - self.bar.n)
        rate = 100.0 * progress["n_mistakes"] / max(progress["n_seen"], 1)
        self.bar.set_postfix(mistakes=f"{rate:.2f}%", refresh=False)

    def __enter__(self) -> ProgressBar:
        if self.show and cache_is_cold():
            print(COLD_CACHE_NOTE, file=sys.stderr, flush=True)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()
