"""Resolving the dataset and algorithm names a user typed for the paper reproductions."""

from __future__ import annotations

from omkl_dist._validation import did_you_mean


def pick_names(names, lookup: dict, order: list, what: str, *, groups=None, suggest=None, choices=None) -> list:
    """The keys named by ``names``, each once, in ``order``.

    ``lookup`` maps a lower-case name or alias to a key, ``groups`` a name to several keys (e.g.
    "omkc" to its four variants). Blank names are ignored. An unknown name raises ValueError with
    the closest of ``suggest`` (default: every name known) and the list ``choices`` (default:
    ``order``); so does a list that names nothing.
    """
    groups = groups or {}
    out = []
    for raw in names:
        name = str(raw).strip().lower()
        if not name:
            continue
        keys = groups.get(name) or ([lookup[name]] if name in lookup else None)
        if keys is None:
            hint = did_you_mean(name, suggest if suggest is not None else [*lookup, *groups], quote=False)
            hint = f" ({hint})" if hint else ""
            raise ValueError(f"unknown {what} {raw!r}{hint}; choose from {choices or ', '.join(order)}")
        out += [k for k in keys if k not in out]
    if not out:
        raise ValueError(f"no {what} given")
    return sorted(out, key=order.index)
