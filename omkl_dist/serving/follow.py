"""Follow a store alias: serve the version it points at, and swap in the next one when it moves (or
serve a saved model folder as it is: :class:`SavedModel`).

``omkl models promote`` and a scheduled ``omkl retrain`` move an alias by rewriting the store's
refs.json atomically; a poller reads it every ``poll_seconds``, loads the new version completely (every
hash checked) beside the one being served, then replaces the served snapshot with one reference
assignment. A request holds the snapshot it started with, so none fails or sees a half-loaded model;
a version that cannot be loaded is reported and the current one kept.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from omkl_dist.persistence import load_model
from omkl_dist.storage.model_store import ModelStore

from .learning import Snapshot

log = logging.getLogger(__name__)


class AliasFollower:
    """The version ``store``'s ``alias`` points at, reloaded when the alias moves.

    Parameters
    ----------
    store : ModelStore
    alias : str
        An alias (``champion``) or a fixed version number (then never reloaded).
    poll_seconds : float
        How often the poller (:meth:`start`) reads the alias.
    """

    def __init__(self, store: ModelStore, alias: str = "champion", *, poll_seconds: float = 1.0) -> None:
        if not poll_seconds > 0:
            raise ValueError(f"poll_seconds must be > 0, got {poll_seconds!r}")
        self.store, self.alias, self.poll_seconds = store, alias, float(poll_seconds)
        version = store.resolve(alias)  # (a missing alias is the caller's DataError, before serving)
        self._served = Snapshot(load_model(store.path(version)), version, 0)
        self.swaps = 0
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def snapshot(self) -> Snapshot:
        return self._served

    def check(self) -> bool:
        """Read the alias once and swap in the version it names if it moved; True if it swapped."""
        try:
            version = self.store.resolve(self.alias)
            if version == self._served.version:
                self.last_error = None
                return False
            served = Snapshot(load_model(self.store.path(version)), version, 0)
        except (OSError, ValueError) as exc:  # (a DataError is a ValueError) the current version stays
            if str(exc) != self.last_error:
                log.warning("omkl serve: keeping v%s: %s", self._served.version, exc)
            self.last_error = str(exc)
            return False
        self._served, self.last_error = served, None  # one reference assignment: atomic for readers
        self.swaps += 1
        log.info("omkl serve: now serving v%s (%s moved)", version, self.alias)
        return True

    def start(self) -> None:
        """Poll the alias in a daemon thread until :meth:`close`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._poll, name="omkl-serve-follow", daemon=True)
            self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self.check()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def serves(self) -> str:
        """What this predict-only service serves, for messages."""
        return f"it follows alias {self.alias!r}"

    def describe(self) -> dict[str, Any]:
        return {"mode": "follow", "alias": self.alias, "swaps": self.swaps, "last_error": self.last_error}


class SavedModel:
    """A saved model folder (``omkl run``/``fit --model-out``, ``omkl submit --out``) served as it is:
    predict only, never reloaded, no store version (``version`` None).

    Parameters
    ----------
    path : path-like
        The folder :func:`~omkl_dist.persistence.load_model` reads (every hash checked).
    """

    def __init__(self, path) -> None:
        self.path = path
        self._served = Snapshot(load_model(path), None, 0)  # type: ignore[arg-type]  # (no store version)

    @property
    def serves(self) -> str:
        return f"it serves the saved model {self.path}"

    def snapshot(self) -> Snapshot:
        return self._served

    def start(self) -> None:
        """Nothing to poll: the folder is read once."""

    def close(self) -> None:
        """Nothing to stop."""

    def describe(self) -> dict[str, Any]:
        return {"mode": "model-dir", "model_dir": str(self.path)}
