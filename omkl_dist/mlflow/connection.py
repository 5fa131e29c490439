"""Where MLflow is (a tracking URI and an experiment) and a client for it that fails fast.

MLflow is optional (``pip install 'omkl-dist[mlflow]'``: the ``mlflow-skinny`` client) and the model
store is the source of truth, so every MLflow step of a command is an addition to work already done:
an MLflow that is missing, down or refusing raises :class:`MlflowUnavailable`, which the commands
turn into a note on their status line (``omkl models sync`` reconciles later). MLflow's own client
retries a refused connection for minutes (seven retries, doubling backoff); a scheduled retrain
must not hang on it, so a server is probed once first and the client's retries are bounded unless
the user set them.
"""

from __future__ import annotations

import contextlib
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

URI_ENV = "MLFLOW_TRACKING_URI"
INSTALL = "pip install 'omkl-dist[mlflow]'"
# MLflow's own settings, used only when the user did not set them: a few quick retries, short timeouts
_CLIENT_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}
PROBE_SECONDS = 5.0


class MlflowUnavailable(RuntimeError):
    """MLflow is not installed, not reachable, or refused a request: nothing of ours was lost."""


@dataclass(frozen=True)
class Target:
    """An MLflow tracking server (or any tracking URI) and the experiment of a command's runs."""

    uri: str
    experiment: str = "omkl-dist"

    @classmethod
    def from_options(cls, enabled: bool, uri: str | None, experiment: str | None) -> Target | None:
        """The target of ``--mlflow``/``--mlflow-uri``/``--experiment`` (None without ``--mlflow``).
        The URI is ``--mlflow-uri`` or ``MLFLOW_TRACKING_URI``; there is no default, since MLflow's
        own (a local folder or database in the working directory) would write files nobody asked for."""
        if not enabled:
            if uri is not None or experiment is not None:
                raise ValueError("--mlflow-uri and --experiment take effect only with --mlflow: add --mlflow")
            return None
        uri = uri or os.environ.get(URI_ENV)
        if not uri:
            raise ValueError(f"--mlflow needs a tracking server: give --mlflow-uri http://HOST:PORT or set {URI_ENV}")
        return cls(uri=uri, experiment=experiment or cls.experiment)


@contextlib.contextmanager
def bounded_retries() -> Iterator[None]:
    """MLflow's HTTP retries and timeouts bounded (:data:`_CLIENT_DEFAULTS`) where the user set none."""
    added = {k: v for k, v in _CLIENT_DEFAULTS.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def probe(uri: str) -> None:
    """Raise :class:`MlflowUnavailable` unless the server at an ``http(s)`` URI answers its health
    check within :data:`PROBE_SECONDS` (other URIs -- a database, a folder -- are not probed)."""
    if not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=PROBE_SECONDS) as answer:
            answer.read()
    except (OSError, urllib.error.URLError) as exc:
        raise MlflowUnavailable(f"MLflow at {uri} is not reachable ({_reason(exc)})") from exc


def _reason(exc: BaseException) -> str:
    return str(getattr(exc, "reason", None) or exc)


def client(target: Target) -> Any:
    """An ``mlflow.MlflowClient`` for ``target``'s tracking and registry, after the probe."""
    try:
        from mlflow import MlflowClient
    except ImportError as exc:
        raise MlflowUnavailable(f"the mlflow client is not installed ({INSTALL})") from exc
    probe(target.uri)
    return MlflowClient(tracking_uri=target.uri, registry_uri=target.uri)


@contextlib.contextmanager
def talking(target: Target) -> Iterator[Any]:
    """``with talking(target) as client``: a client with bounded retries; any failure of MLflow's
    (a connection lost midway, a refused request) comes out as :class:`MlflowUnavailable`."""
    with bounded_retries():
        try:
            yield client(target)
        except MlflowUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - MLflow's errors (requests', its own) have no common base
            if not _from_mlflow(exc):
                raise
            raise MlflowUnavailable(f"MLflow at {target.uri} failed: {_short(exc)}") from exc


def _from_mlflow(exc: BaseException) -> bool:
    """Whether an exception came from talking to MLflow (its client or the network), not from our code."""
    from mlflow.exceptions import MlflowException

    return isinstance(exc, (MlflowException, OSError)) or type(exc).__module__.startswith(("requests", "urllib3"))


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
