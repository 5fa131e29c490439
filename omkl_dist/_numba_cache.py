"""numba's on-disk cache, keyed by this package's sources.

numba checks a cached function against its own source file only, not against the functions it
inlined from other modules (every kernel here inlines helpers such as ``scoring._vexp``): after an
edit, or an upgrade in place that leaves old cache files behind, a stale kernel could be loaded
and compute with the old arithmetic. So the cache lives in a directory named after a hash of
every module of the package: ``omkl_dist/__pycache__/numba-<hash>``, or that name under
``NUMBA_CACHE_DIR`` if the user set one. It is exported through the environment, so worker
processes started from here use the same directory (and a package with other sources, another).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def sources_digest() -> str:
    """A hash of the package's Python sources (paths and contents)."""
    h = hashlib.sha256()
    for path in sorted(ROOT.rglob("*.py")):
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def use_versioned_cache() -> str:
    """Point numba's cache at the directory of these sources (before any kernel is defined).

    numba reads ``NUMBA_CACHE_DIR`` when it is imported, so numba is not imported here (``import
    omkl_dist`` stays light: the ``omkl`` entry point handles a Ctrl-C during the heavy imports);
    only a numba imported before this package is told the directory directly."""
    name = f"numba-{sources_digest()}"
    current = os.environ.get("NUMBA_CACHE_DIR", "")
    if Path(current).name != name:  # not yet set by this package (here or in a parent process)
        os.environ["NUMBA_CACHE_DIR"] = str(Path(current) / name if current else ROOT / "__pycache__" / name)
    numba = sys.modules.get("numba")
    if numba is not None and hasattr(numba, "config"):
        numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
    return os.environ["NUMBA_CACHE_DIR"]
