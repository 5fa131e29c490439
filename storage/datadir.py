"""Where the real datasets live: ``OMKL_DATA_DIR``, else ``../shared/datasets`` beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    env = os.environ.get("OMKL_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return (REPO_ROOT / ".." / "shared" / "datasets").resolve()
