"""The count of generated bad-input cases, by kind, summed over the pytest workers.

Every generated bad-input test (``tests/test_bad_input*.py``) calls :func:`count` once per case;
``conftest.py`` collects each xdist worker's counts and prints the total at the end of the run.
"""

from __future__ import annotations

from collections import Counter

CASES: Counter[str] = Counter()


def count(kind: str) -> None:
    """Record one generated case of ``kind`` (e.g. "readers", "store files")."""
    CASES[kind] += 1
