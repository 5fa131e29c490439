"""A real ``mlflow server`` for the tests (SQLite backend, artifacts in a local folder, 127.0.0.1, a
free port), run from its own cached venv (tests/mlflow_env.py), and a relay in front of it that can
refuse connections as a stopped server does.

Starting the server takes 10-40 s (its imports and the database's first migration), so one server
serves a whole test module; the test of an outage closes the relay instead of stopping the server
(a client sees the same refused connection) and opens it again on the same port.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

START_SECONDS = 180  # a cold start on two shared cores


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    """``mlflow server`` in its own process group under ``root`` (``db.sqlite``, ``artifacts/``, ``server.log``)."""

    def __init__(self, venv: Path, root: Path):
        self.venv, self.root, self.port = venv, root, free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> MlflowServer:
        self.root.mkdir(parents=True, exist_ok=True)
        command = [
            str(self.venv / "bin" / "mlflow"),
            "server",
            "--backend-store-uri",
            f"sqlite:///{self.root / 'db.sqlite'}",
            "--artifacts-destination",
            str(self.root / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]
        # no job runner (its consumers are eight more processes the registry does not need)
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        env.pop("MLFLOW_TRACKING_URI", None)
        log = open(self.root / "server.log", "ab")
        self.proc = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited ({self.proc.returncode}):\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2):
                    return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer within {START_SECONDS} s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.is_file() else ""

    def stop(self) -> None:
        """SIGTERM to the server's process group (its uvicorn worker too), SIGKILL after 15 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # what the group leader left (its worker) goes with it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _die_with_parent() -> None:
    """(In the server's process, before exec: SIGTERM when the test process dies, even by SIGKILL, so
    a killed pytest leaves no server behind; the server takes its uvicorn worker down with it.)"""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Relay:
    """A TCP relay on its own port to ``target_port``: :meth:`close` refuses connections (as a stopped
    server does) and drops open ones, :meth:`open` listens again on the same port."""

    def __init__(self, target_port: int):
        self.target_port, self.port = target_port, free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()

    def open(self) -> Relay:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
