"""The one "did you mean" helper: the known names closest to what a user typed."""

from __future__ import annotations

import difflib

__all__ = ["close_matches", "did_you_mean"]


def close_matches(word: str, names, *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` of ``names`` closest to ``word`` (difflib's ratio >= ``cutoff``), best first."""
    return difflib.get_close_matches(word, list(names), n=n, cutoff=cutoff)


def did_you_mean(word: str, names, *, n: int = 3, quote: bool = True) -> str:
    """``"did you mean 'a' or 'b'?"`` for the :func:`close_matches` of ``word`` (``""`` when none);
    ``quote=False`` writes the names bare."""
    close = close_matches(word, names, n=n)
    if not close:
        return ""
    return f"did you mean {' or '.join(repr(c) if quote else c for c in close)}?"
