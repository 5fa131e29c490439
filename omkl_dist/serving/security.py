"""Who may reach the service: loopback only, unless a bearer token or TLS guards it.

A service bound beyond loopback answers anyone who can route to it, and learning from labels is a
write: so ``omkl serve --host`` anything but a loopback address needs ``--token-file`` (a bearer
token, compared in constant time) or ``--tls-dir`` (the CA, certificate and key ``omkl cluster
certs`` makes: mutual TLS, only holders of a certificate signed by that CA connect).
"""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path
from typing import Any

from omkl_dist.cluster.tls import tls_files
from omkl_dist.storage.errors import DataError

#: a token shorter than this is guessable
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it resolves to who knows what


def check_exposure(host: str, *, token: str | None, tls_dir: object) -> None:
    """Refuse to serve beyond loopback with neither a token nor TLS."""
    if not is_loopback(host) and token is None and tls_dir is None:
        raise DataError(
            f"serving on {host} without a token or TLS would let anyone who reaches it predict and learn",
            path="--host",
            fix="give --token-file FILE (a bearer token) and/or --tls-dir DIR (from `omkl cluster certs`), "
            "or serve on 127.0.0.1 behind your own proxy",
        )


def read_token(path: str | Path) -> str:
    """The bearer token in ``path`` (its one line, stripped): refused if missing, short or multi-line."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"the token file cannot be read ({exc})", path=file, fix="give a readable text file") from None
    if len(text) < MIN_TOKEN_CHARS or any(c.isspace() for c in text):
        raise DataError(
            f"the token file must hold one token of at least {MIN_TOKEN_CHARS} characters and no spaces",
            path=file,
            fix="write one, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE`",
        )
    return text


def tls_options(tls_dir: str | Path) -> dict[str, Any]:
    """uvicorn's TLS settings for the certificates ``omkl cluster certs`` made: the node's
    certificate and key, and clients must present a certificate signed by the same CA."""
    files = tls_files(tls_dir)
    return {
        "ssl_certfile": str(files["cert"]),
        "ssl_keyfile": str(files["key"]),
        "ssl_ca_certs": str(files["ca"]),
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }
