"""numba's cache directory is named after the package's sources (see ``omkl_dist._numba_cache``):
a kernel that inlines a helper from another module cannot be loaded stale after that module
changes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from omkl_dist import _numba_cache
from omkl_dist.scoring import scan as _scores


def test_kernels_are_cached_under_the_sources_digest():
    name = f"numba-{_numba_cache.sources_digest()}"
    assert Path(os.environ["NUMBA_CACHE_DIR"]).name == name
    assert name in Path(_scores._accumulate_sparse_direct._cache._cache_path).parts


def test_digest_changes_when_an_inlined_helper_changes(tmp_path, monkeypatch):
    copy = tmp_path / "omkl_dist"
    shutil.copytree(_numba_cache.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_numba_cache, "ROOT", copy)
    before = _numba_cache.sources_digest()
    assert before == _numba_cache.sources_digest()  # deterministic
    helper = copy / "scoring" / "_vexp.py"
    helper.write_text(helper.read_text() + "\n# changed\n")
    assert _numba_cache.sources_digest() != before


def test_worker_processes_use_the_same_directory():
    """A child process inherits the directory and does not nest another one inside it."""
    code = "import omkl_dist, numba; print(numba.config.CACHE_DIR)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ.copy()
    ).stdout.strip()
    assert out == os.environ["NUMBA_CACHE_DIR"]
