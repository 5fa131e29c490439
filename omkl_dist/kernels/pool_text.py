"""The text of a kernel pool: a spec string read into kernel specs, and specs written back as the
shortest string that reads back into them (``polynomial:1,2,3;gaussian:2^-6..2^6``).

The words of the text are :mod:`omkl_dist.kernels.grammar`'s and what a kernel kind means is
:mod:`omkl_dist.kernels.specs`'s; :mod:`omkl_dist.kernels.pools` builds pools on this module (so the
imports run one way: grammar <- specs <- pool_text <- pools).
"""

from __future__ import annotations

import types

from omkl_dist.kernels.grammar import (
    NORM_SUFFIX,
    check_kernel_count,
    format_number,
    format_values,
    parse_values,
    parse_view,
    split_item,
    split_runs,
    two_to,
)
from omkl_dist.kernels.specs import ChiSquare, Gaussian, KernelSpec, Polynomial, kind_class, make_spec, parse_spec

__all__ = ["NAMED_POOL_SPECS", "parse_pool", "format_pool"]


def parse_pool(text: str) -> list[KernelSpec]:
    """The kernels of a pool spec string, in order (see :func:`~omkl_dist.kernels.pools.make_pool`).

    Parameters
    ----------
    text : str
        ``;``-separated items, each a named pool, a kernel name or ``kind:values`` runs, optionally
        ``+norm`` and ``@ view``.

    Returns
    -------
    list of KernelSpec
        At most :data:`~omkl_dist.kernels.grammar.MAX_KERNELS` of them (the pool checks duplicates).

    Examples
    --------
    >>> [spec.name for spec in parse_pool("linear; gaussian:1,2")]
    ['linear', 'gaussian(sigma=1)', 'gaussian(sigma=2)']
    """
    items = [item for item in text.split(";") if item.strip()]
    if not items:
        raise ValueError(f"empty kernel pool spec {text!r}; try 'omkc16' or 'gaussian:0.5,1'")
    specs = []
    for item in items:
        specs.extend(_parse_item(item))
        check_kernel_count(len(specs), "the kernel pool spec")
    return specs


def format_pool(specs) -> str:
    """Compact text that :func:`parse_pool` reads back into the same kernels.

    Consecutive kernels of one kind are grouped (``gaussian:0.5,1``) and runs of at least three
    consecutive powers of two are written as ranges (``gaussian:2^-6..2^6``).

    Examples
    --------
    >>> format_pool([Gaussian(0.5), Gaussian(1.0), Polynomial(2)])
    'gaussian:0.5,1;polynomial:2'
    """
    items, run = [], []
    for spec in specs:
        if run and (spec.kind, spec.view, spec.normalize) != (run[0].kind, run[0].view, run[0].normalize):
            items.append(_format_run(run))
            run = []
        run.append(spec)
    items.append(_format_run(run))
    return ";".join(items)


def _format_run(run: list[KernelSpec]) -> str:
    kind, view = run[0].kind, run[0].view
    at = (NORM_SUFFIX if run[0].normalize else "") + (f"@{view}" if view else "")
    if run[0].param is None:
        return ";".join(kind + at for _ in run)
    values = [spec.value for spec in run]
    texts = [format_number(v) for v in values] if kind == "polynomial" else format_values(values)
    return f"{kind}:{','.join(texts)}{at}"


def _parse_item(item: str) -> list[KernelSpec]:
    """One ``;``-separated item: kernels, optionally ``@ view`` for all of them."""
    body, normalize, view = split_item(item)
    specs = [spec.normalized() if normalize else spec for spec in _parse_kernels(body, item)]
    if view is not None:
        where = parse_view(view, context=f"pool item {item.strip()!r}")
        return [spec.on_columns(**where) for spec in specs]
    return specs


def _parse_kernels(body: str, item: str) -> list[KernelSpec]:
    """``kind:values`` runs separated by commas (``linear,poly:2,3,chi2,gaussian:2^0``): a piece
    that starts with a letter begins a kernel kind, the others are more values of the last one."""
    word = body.strip()
    if not word:
        raise ValueError(f"pool item {item.strip()!r} names no kernel; write e.g. 'gaussian:1 @ fourier'")
    if word.lower() in NAMED_POOL_SPECS:
        return list(NAMED_POOL_SPECS[word.lower()])
    if "(" in word:
        return [parse_spec(word)]
    specs: list[KernelSpec] = []
    for run in split_runs(word):
        specs.extend(_parse_run(run, item))
        check_kernel_count(len(specs), f"pool item {item.strip()!r}")
    return specs


def _parse_run(word: str, item: str) -> list[KernelSpec]:
    if word.lower() in NAMED_POOL_SPECS:
        return list(NAMED_POOL_SPECS[word.lower()])
    kind, colon, values = word.partition(":")
    cls = kind_class(kind, {"named pools": sorted(NAMED_POOL_SPECS)})
    if not colon:
        if cls is ChiSquare:  # the OKS paper's "chi-square kernel": γ = 1 unless given
            return [ChiSquare(1.0)]
        return [make_spec(cls)]
    if cls.param is None:
        raise ValueError(f"{cls.kind} takes no parameter, got {item!r}; write just {cls.kind!r}")
    return [make_spec(cls, v) for v in parse_values(values, item)]


def _ladder(lo: int, hi: int) -> list[Gaussian]:
    return [Gaussian(two_to(e)) for e in range(lo, hi + 1)]


NAMED_POOL_SPECS: types.MappingProxyType[str, tuple[KernelSpec, ...]] = types.MappingProxyType(
    {
        # Hoi et al., OMKC (2013): 3 polynomial + 13 gaussian kernels.
        "omkc16": (*(Polynomial(p) for p in (1, 2, 3)), *_ladder(-6, 6)),
        # MKBoost (Xia & Hoi): 14 gaussian widths + 3 polynomial kernels.
        "mkboost17": (*_ladder(-6, 7), *(Polynomial(p) for p in (1, 2, 3))),
    }
)
"""The kernels of each named pool (:data:`~omkl_dist.kernels.pools.NAMED_POOLS` holds them as pools)."""
