"""What the model-store commands (models, retrain, predict, report, schedule) share."""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

import click

from ..cli_base import (
    STORE_PATH,
    FiniteFloat,
)

STORE_OPTION = click.option(
    "--store",
    envvar="OMKL_STORE",
    required=True,
    show_envvar=True,
    type=STORE_PATH,
    help="The model store's folder.",
)


LOCK_TIMEOUT_OPTION = click.option(
    "--lock-timeout",
    default=30.0,
    show_default=True,
    type=FiniteFloat(min=0),
    help="Seconds to wait for the store's lock before exiting 75.",
)


@contextlib.contextmanager
def store_change():
    """A store change made whole or not at all: a signal that arrives once it is made is reported
    (the change stands and the command says so), one before it stops the command (exit 130)."""
    from omkl_dist.storage.model_store import signal_arrived, signals_held

    with signals_held(deliver=False):
        yield
        if signal_arrived() is not None:
            name = signal.Signals(signal_arrived()).name
            click.echo(f"note: {name} arrived after the change was made; it is complete", err=True)


def parse_params(pairs) -> dict:
    """``--param key=value`` (repeatable); a value is read as JSON when it parses (numbers, true, lists)."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--param")
        try:
            params[key.strip()] = json.loads(value)
        except ValueError:
            params[key.strip()] = value
    return params


def open_store(store: Path, name: str, lock_timeout: float = 30.0):
    from omkl_dist.storage.model_store import ModelStore

    return ModelStore(store, name, lock_timeout=lock_timeout)
