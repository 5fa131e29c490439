"""Is a Dask scheduler listening at an address? A bounded look at what answers, before a Client.

distributed's own connect waits for the peer's handshake without a deadline and allocates
whatever frame size the first 8 bytes announce, so a port where something else listens either
hangs a client for minutes (a silent server) or fails with a MemoryError (garbage). A Dask server
writes its handshake as soon as it accepts a connection: one message of a few hundred bytes,
its size first (8 bytes, little-endian). This module reads that, within the caller's deadline and
at most :data:`MAX_HANDSHAKE` bytes, and checks it decodes as a Dask handshake.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time

MAX_HANDSHAKE = 1 << 20  # bytes; a real handshake is under 1 KiB


class NotAScheduler(ConnectionError):
    """What answers at the address is not a Dask scheduler (or nothing answers in time)."""


def check_scheduler(address: str, *, ssl_context=None, timeout: float) -> None:
    """Raise :class:`NotAScheduler` unless a Dask server answers at ``address`` (``tcp://`` or
    ``tls://HOST:PORT``) with its handshake within ``timeout``; ``ValueError`` for another kind of
    address. An ``inproc://`` address is a scheduler in this very process (a
    ``LocalCluster(processes=False)``), no socket another program could answer on: it only has to exist."""
    from distributed.comm import inproc
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme == "inproc":
            if inproc.global_manager.get_listener_for(location) is None:
                raise NotAScheduler(f"no scheduler of this process listens at {address}")
            return
        if scheme not in ("tcp", "tls"):
            raise ValueError(f"the scheme {scheme}:// is not one a scheduler of `omkl cluster up` listens on")
        host, port = parse_host_port(location)
        if not 0 < port < 65536:
            raise ValueError("the port must be 1..65535")
    except ValueError as exc:
        raise ValueError(
            f"not a scheduler address: {address!r} ({exc}); give tcp://HOST:PORT (tls://HOST:PORT with TLS)"
        ) from None
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            sock = ssl_context.wrap_socket(raw) if scheme == "tls" and ssl_context else raw
            with sock:
                size = struct.unpack("<Q", _read(sock, 8, deadline))[0]
                if not 0 < size <= MAX_HANDSHAKE:
                    raise NotAScheduler(f"it sent a message of {size} bytes instead of a Dask handshake")
                _decode(_read(sock, size, deadline))
    except NotAScheduler:
        raise
    except ssl.SSLError as exc:
        raise NotAScheduler(f"the TLS handshake failed ({exc.reason or exc})") from None
    except (TimeoutError, socket.timeout):
        raise NotAScheduler("nothing answered in time") from None
    except OSError as exc:
        raise NotAScheduler(exc.strerror or str(exc)) from None


def _read(sock, n: int, deadline: float) -> bytes:
    """Exactly ``n`` bytes from ``sock`` before ``deadline`` (monotonic)."""
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(min(n - got, 65536))
        if not chunk:
            raise NotAScheduler("it closed the connection without a Dask handshake")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _decode(message: bytes) -> None:
    """Check ``message`` (frames as distributed packs them) is a handshake: a dict."""
    from distributed.protocol import loads
    from distributed.protocol.utils import unpack_frames

    try:
        handshake = loads(unpack_frames(message), deserialize=False)
    except Exception:  # noqa: BLE001 - any decoding failure means the same: not a Dask peer
        handshake = None
    if not isinstance(handshake, dict):
        raise NotAScheduler("what it sent does not decode as a Dask handshake")
