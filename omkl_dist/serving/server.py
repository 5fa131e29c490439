"""Run the app under uvicorn in this process, saying where it listens once it does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .security import tls_options


def run(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    tls_dir: str | Path | None = None,
    on_listening: Callable[[str], None] = print,
    log_level: str = "warning",
) -> None:
    """Serve ``app`` until SIGINT/SIGTERM (then the app's shutdown closes its source).

    ``port`` 0 takes a free port; ``on_listening`` gets the URL actually bound (``http://127.0.0.1:PORT``
    or ``https://...``) once the socket listens.
    """
    import uvicorn

    tls = {} if tls_dir is None else tls_options(tls_dir)
    scheme = "https" if tls else "http"

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.should_exit:  # (the bind failed: uvicorn said why)
                return
            for server in self.servers:
                for sock in server.sockets:
                    bound_host, bound_port = sock.getsockname()[:2]
                    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
                    on_listening(f"{scheme}://{shown}:{bound_port}")

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False, lifespan="on", **tls)
    Server(config).run()
