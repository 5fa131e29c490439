"""Progress lines for the batch fits that can run for minutes (the MKL methods, svc, the kernel
selectors): on standard error, at most one every :data:`EVERY` seconds, so a fit of seconds says
nothing and one of minutes says where it is."""

from __future__ import annotations

import sys
import time

EVERY = 5.0  # seconds: the least time between two lines (the first comes this long after the start)


class Progress:
    """``progress(what)`` prints ``OWNER: what, S s`` (S: seconds since the fit started) when
    ``on`` and :data:`EVERY` seconds have passed since the last line (or the start)."""

    def __init__(self, owner: str, on: object) -> None:
        self.owner, self.on = owner, bool(on)
        self.started = self.said = time.perf_counter()

    def __call__(self, what: str) -> None:
        now = time.perf_counter()
        if not self.on or now - self.said < EVERY:
            return
        self.said = now
        print(f"{self.owner}: {what}, {now - self.started:.1f} s", file=sys.stderr, flush=True)
