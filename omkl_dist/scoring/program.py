"""Compile a :class:`~omkl_dist.kernels.KernelPool` into flat arrays for the njit pair evaluator.

Why: numba code cannot iterate over Python spec objects, and evaluating 16 kernels per pair must
cost little more than one. All kernels derive from one dot product (linear, polynomial), one
squared distance (gaussian), one L1 distance (laplacian) or one chi-square sum. Gaussian widths that
are a factor 2 apart are related by ``k_{σ/2} = (k_σ)^4``: two squarings instead of an ``exp``.
Each squaring multiplies the relative rounding error by at most ~4, so chains are limited to
``MAX_CHAIN`` steps (error amplification ≤ 4**MAX_CHAIN ≈ 1e3, i.e. ~1e-13 relative) and a fresh
``exp`` anchors the next chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .rows import writeable

LINEAR, POLY, GAUSS, LAPLACE, CHI2, ACHI2 = 0, 1, 2, 3, 4, 5
MAX_CHAIN = 5


# Records the compiled loops take (numba passes a namedtuple of arrays as one typed argument). They
# are built in Python once per call from a program, never stored in it: a saved program stays as it was.
class PairProgram(NamedTuple):
    """Every kernel of a program, evaluated per pair (:func:`._pairs.pair_values`)."""

    kinds: np.ndarray
    param: np.ndarray
    src: np.ndarray
    order: np.ndarray
    need_l1: bool
    need_chi2: bool
    direct: bool
    vcols: np.ndarray
    vptr: np.ndarray


class DotGaussPlan(NamedTuple):
    """The dot-product kernels (sorted by degree) and gaussians (widest first) of a program, and which
    of them to evaluate (:func:`dot_gauss_plan`)."""

    dot_idx: np.ndarray  # int64: kernel index of each dot-product kernel
    dot_deg: np.ndarray  # int64: its degree (1: linear)
    g_idx: np.ndarray  # int64: kernel index of each gaussian
    g_param: np.ndarray  # float64: its 1/(2σ²)
    g_anchor: np.ndarray  # bool: an exp here, else the previous gaussian's values to the 4th power
    dot_on: np.ndarray  # bool: dot-product kernel scored
    g_on: np.ndarray  # bool: gaussian scored
    g_need: np.ndarray  # bool: gaussian computed (scored, or a chain predecessor of a scored one)


class SparsePlan(NamedTuple):
    """Per kernel (or per (kernel, class) column) for the sparse scans (:mod:`._sparse`)."""

    deg: np.ndarray  # int64: degree of a dot-product kernel, 0 for a gaussian
    anchor_param: np.ndarray  # float64: the gaussian's chain anchor's 1/(2σ²)
    steps: np.ndarray  # int64: double squarings from the anchor


@dataclass(frozen=True)
class KernelProgram:
    kinds: np.ndarray  # int64 (m,): LINEAR..CHI2
    param: np.ndarray  # float64 (m,): degree, 1/(2σ²), 1/σ or γ
    src: np.ndarray  # int64 (m,): gaussian computed as src's value**4, or -1 (direct)
    order: np.ndarray  # int64 (m,): evaluation order (sources before dependants)
    need_l1: bool
    need_chi2: bool
    # arguments of the specialised dot+gaussian scorer, or None if the pool needs the general one:
    # (dot_idx, dot_deg sorted by degree, g_idx widest first, g_param, g_anchor: exp here, else prev**4)
    fast: tuple | None = None
    # per kernel, for the sparse scan: (degree (0 = gaussian), gaussian anchor's 1/(2σ²), squaring steps)
    sparse: tuple | None = None
    # kernels on feature groups (or additive chi-square): every kernel's value is summed directly over
    # its own columns, vcols[vptr[k]:vptr[k+1]] (an empty range: every column), see _pairs.view_value
    direct: bool = False
    vcols: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    vptr: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    # bool (m,): the normalised kernels whose values normalisation changes (dot-product, additive chi2):
    # κ(x, z)·R(x)·R(z) with R = κ(x, x)^(-1/2), see kernel_scales
    norm: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))

    def __setstate__(self, state: dict) -> None:
        # A program unpickled with joblib's mmap_mode="r" holds read-only arrays, for which numba would
        # compile every kernel again (see rows.writeable); its arrays are small, so copy them.
        def own(v):
            if isinstance(v, np.ndarray):
                return writeable(v)
            return tuple(own(a) for a in v) if isinstance(v, tuple) else v

        for name, value in state.items():
            object.__setattr__(self, name, own(value))

    @property
    def m(self) -> int:
        return len(self.kinds)

    @property
    def uses_dots(self) -> bool:
        """Whether a kernel's value is made from the pair's dot product (the dot-product kernels, and
        gaussians through ``‖a‖² + ‖b‖² − 2 a·b``): laplacian, chi-square and feature-group
        programs take none."""
        return not self.direct and bool(np.isin(self.kinds, (LINEAR, POLY, GAUSS)).any())

    def pair_record(self) -> PairProgram:
        """The program as the per-pair evaluator's record."""
        return PairProgram(
            self.kinds,
            self.param,
            self.src,
            self.order,
            self.need_l1,
            self.need_chi2,
            self.direct,
            self.vcols,
            self.vptr,
        )

    def sparse_plan(self, n_classes: int = 1) -> SparsePlan:
        """``sparse`` as a record, each entry repeated per class: the sparse scans see each (kernel,
        class) column as a kernel of its own."""
        if n_classes == 1:
            return SparsePlan(*self.sparse)
        return SparsePlan(*(np.repeat(a, n_classes) for a in self.sparse))


def dot_gauss_plan(program: KernelProgram, active=None) -> DotGaussPlan:
    """``program.fast`` plus which of its kernels to evaluate (``dot_on``, ``g_on``, ``g_need``).

    ``active`` (bool per kernel, default all) lets a shard that owns some kernels evaluate only
    those, with exactly the arithmetic of the full program: a gaussian is the 4th power of the
    previous (twice as wide) one within a chain, so the chain members before an active gaussian
    are still computed (``g_need``), just not scored.
    """
    dot_idx, _, g_idx, _, g_anchor = program.fast
    active = np.ones(program.m, dtype=np.bool_) if active is None else np.asarray(active, dtype=np.bool_)
    g_on = active[g_idx]
    g_need = g_on.copy()
    for j in range(len(g_idx) - 2, -1, -1):  # a needed non-anchor needs its predecessor
        g_need[j] |= g_need[j + 1] and not g_anchor[j + 1]
    return DotGaussPlan(*program.fast, active[dot_idx].copy(), g_on, g_need)


_KIND_CODES = {
    "linear": LINEAR,
    "polynomial": POLY,
    "gaussian": GAUSS,
    "laplacian": LAPLACE,
    "chi2": CHI2,
    "achi2": ACHI2,
}


def _spec_kind(spec):
    if not getattr(spec, "resolved", True):
        spec.view_of(np.empty((0, 0)))  # raises: the group's columns are not known
    try:
        return _KIND_CODES[spec.kind]
    except (AttributeError, KeyError):
        raise ValueError(
            f"kernel {spec!r} has no shared-pool online evaluator; allowed kinds: "
            f"{sorted(_KIND_CODES)} (OKS and the batch estimators take every kind)"
        ) from None


def compile_program(pool) -> KernelProgram:
    """Flatten ``pool`` (a KernelPool or sequence of specs) into a :class:`KernelProgram`."""
    specs = list(pool)
    m = len(specs)
    kinds = np.array([_spec_kind(s) for s in specs], dtype=np.int64)
    param = np.zeros(m)
    for k, s in enumerate(specs):
        if kinds[k] == POLY:
            param[k] = float(s.p)
        elif kinds[k] == GAUSS:
            param[k] = 1.0 / (2.0 * float(s.sigma) ** 2)
        elif kinds[k] == LAPLACE:
            param[k] = 1.0 / float(s.sigma)
        elif kinds[k] == CHI2:
            param[k] = float(s.gamma)
    norm = np.array([bool(getattr(s, "rescaled", False)) for s in specs], dtype=np.bool_)
    if any(getattr(s, "columns", None) is not None for s in specs) or (kinds == ACHI2).any():
        return _direct_program(specs, kinds, param, norm)
    src = np.full(m, -1, dtype=np.int64)
    chain = np.zeros(m, dtype=np.int64)
    gauss = sorted((k for k in range(m) if kinds[k] == GAUSS), key=lambda k: param[k])  # widest first
    for j in range(1, len(gauss)):
        prev, k = gauss[j - 1], gauss[j]
        # exactly a factor 2 narrower (param 4x larger; exact for power-of-two widths)
        if param[k] == 4.0 * param[prev] and chain[prev] < MAX_CHAIN:
            src[k], chain[k] = prev, chain[prev] + 1
    order = np.array([k for k in range(m) if kinds[k] != GAUSS] + gauss, dtype=np.int64)
    need_l1, need_chi2 = bool((kinds == LAPLACE).any()), bool((kinds == CHI2).any())
    fast = None
    if not (need_l1 or need_chi2):
        degree = {k: 1 if kinds[k] == LINEAR else int(param[k]) for k in range(m) if kinds[k] in (LINEAR, POLY)}
        dots = sorted(degree, key=lambda k: degree[k])
        fast = (
            np.array(dots, dtype=np.int64),
            np.array([degree[k] for k in dots], dtype=np.int64),
            np.array(gauss, dtype=np.int64),
            param[gauss].copy(),
            np.array([src[k] < 0 for k in gauss], dtype=np.bool_),
        )
    sparse = None
    if fast is not None:
        anchor_param, steps = param.copy(), np.zeros(m, dtype=np.int64)
        for k in gauss:
            if src[k] >= 0:
                anchor_param[k], steps[k] = anchor_param[src[k]], steps[src[k]] + 1
        deg = np.array(
            [1 if kinds[k] == LINEAR else (int(param[k]) if kinds[k] == POLY else 0) for k in range(m)], dtype=np.int64
        )
        sparse = (deg, anchor_param, steps)
    return KernelProgram(kinds, param, src, order, need_l1, need_chi2, fast, sparse, norm=norm)


def _direct_program(specs, kinds, param, norm) -> KernelProgram:
    """A program whose kernels are summed directly over their own columns (no shared dot product,
    no gaussian chains): the general per-pair path of the pool scan."""
    vcols, vptr = [], [0]
    for spec in specs:
        if spec.columns is not None:
            vcols.extend(spec.columns)
        vptr.append(len(vcols))
    return independent_program(
        kinds, param, norm, direct=True, vcols=np.array(vcols, dtype=np.int64), vptr=np.array(vptr, dtype=np.int64)
    )


def check_width(program: KernelProgram, n_features: int) -> None:
    """Refuse a program with a kernel on a column at or beyond ``n_features``: the compiled loops
    index rows by ``vcols`` unchecked (an engine checks here when it binds a program to a width;
    an estimator has already named the kernel, :meth:`~omkl_dist.kernels.KernelPool.check_width`)."""
    if program.direct and len(program.vcols) and int(program.vcols.max()) >= n_features:
        raise ValueError(f"a kernel sees column {int(program.vcols.max())}, but the data has {n_features} columns")


def independent_program(kinds, param, norm, **layout) -> KernelProgram:
    """A program of independently evaluated kernels, in their own order, without gaussian chains (a
    direct program, or a subset of another program's kernels); ``layout``: further
    :class:`KernelProgram` fields (``direct``, ``vcols``, ``vptr``)."""
    m = len(kinds)
    return KernelProgram(
        kinds,
        param,
        np.full(m, -1, dtype=np.int64),
        np.arange(m, dtype=np.int64),
        bool((kinds == LAPLACE).any()),
        bool((kinds == CHI2).any()),
        norm=norm,
        **layout,
    )


def kernel_scales(program: KernelProgram, X, xsq) -> np.ndarray:
    """``R[t, k] = κ_k(x_t, x_t)^(-1/2)`` for the normalised kernels (``program.norm``; 0 where
    κ_k(x_t, x_t) = 0), 1 for the others: (n, m). A normalised kernel's value is κ_k(x, z)·R(x)·R(z).
    ``xsq``: the rows' squared norms; ``X`` (dense, or sparse) is read only for kernels on feature
    groups and for additive chi-square."""
    R = np.ones((len(xsq), program.m))
    for k in np.flatnonzero(program.norm):
        lo, hi = (program.vptr[k], program.vptr[k + 1]) if program.direct else (0, 0)
        Xk = X[:, program.vcols[lo:hi]] if hi > lo else X
        if program.kinds[k] == ACHI2:
            raw = np.asarray(Xk.sum(axis=1), dtype=np.float64).ravel()
            R[:, k] = _inverse_sqrt(raw)
            continue
        r = _inverse_sqrt(xsq if hi == lo else np.einsum("ij,ij->i", Xk, Xk))  # (x·x)^(-1/2)
        v = r.copy()
        for _ in range((1 if program.kinds[k] == LINEAR else int(program.param[k])) - 1):
            v *= r  # (x·x)^(-p/2) by repeated multiplication, as the powers of the dot products
        R[:, k] = v
    return R


def _inverse_sqrt(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values))
    np.divide(1.0, np.sqrt(values), out=out, where=values > 0)
    return out
