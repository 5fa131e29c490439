"""omkl serve: a model served over HTTP, predicting from a snapshot and learning through a write-ahead log."""

from typing import Any


def __getattr__(name: str) -> Any:
    # create_app imported on first use: the learning core (learning.py, wal.py) needs no web stack
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
