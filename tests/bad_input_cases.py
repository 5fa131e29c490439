"""What the bad-input tests share: the count of generated cases, and a snapshot of a folder.

Every generated bad-input test (``tests/test_bad_input*.py``) calls :func:`count` once per case;
``conftest.py`` collects each xdist worker's counts and prints the total at the end of the run.
:func:`tree_state` lets a test check that a command left every byte of the user's files as it was.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

CASES: Counter[str] = Counter()


def count(kind: str) -> None:
    """Record one generated case of ``kind`` (e.g. "readers", "store files")."""
    CASES[kind] += 1


def tree_state(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed): a file's sha256, a link's target, or "folder"."""
    state = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                state[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                state[key] = "folder"
            else:
                state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state
