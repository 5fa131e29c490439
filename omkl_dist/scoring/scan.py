"""Score a block of instances against the SV pool: ``F[t, k] = Σ_s alpha[s, k] κ_k(x_t, sv_s)`` (:func:`pool_scores`).

Multi-class pools (K classes, :mod:`.support_vectors`) have K coefficient columns per kernel: ``F[t, k·K + c]``
sums kernel k's values with column ``k·K + c``. The dense scans compute a kernel's values once and
take one reduction per class; the sparse scans treat every column as a kernel of its own (a row is
kept by about two classes per kernel, so its values are computed about twice). With K = 1 (binary)
the arithmetic is the single-column scan's.

The dot products come from one BLAS product per tile of the pool; kernel values and the
accumulation over the pool run in njit code parallel over the block's rows. Tiling bounds the
dot-matrix memory to ``B × TILE`` doubles. Pools of dot-product and gaussian kernels (the papers'
pools) take a kernel-major loop vectorised over the pool; pools with laplacian or chi-square
kernels take the general per-pair evaluator. The tile loops live in :mod:`._dense`, :mod:`._sparse`
and :mod:`._general` (the direct scan for few features here), the tile layout in :mod:`.tiles`.
Kernel values are computed with exactly the arithmetic of :func:`._pairs.pair_values`
(:mod:`.values`), only the sums over the pool are reassociated; except in the direct sparse scan for
few features, which sums its own dot products and distances (and leaves out of its sums the gaussian
values it can tell are exactly 0 from one feature).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from ._blas import fixed_shape_dots
from ._dense import accumulate_dot_gauss, weighted_sum
from ._general import accumulate_general
from ._pairs import overwrite_exact_columns
from ._sparse import accumulate_sparse, accumulate_sparse_exact, sparse_values
from .program import dot_gauss_plan, kernel_scales
from .row_threads import over_rows
from .rows import as_rows, csr_dots
from .tiles import TileLayout, layout_key

TILE = 4096
ROW_CHUNK = 1024  # rows per BLAS dot matrix (TILE columns): bounds its memory for long segments
# up to this many features the sparse scan takes its dot products directly, in feature order
DIRECT_DOT_FEATURES = 32
ROWS_PER_PASS = 4  # rows of the block sharing one read of the support vectors in the direct scan
SV_CHUNK = 1024  # support vectors per stretch of the direct scan (fits L1 with ROWS_PER_PASS rows)
ZERO_ARG = 800.0  # exp(-a) raised to 4**s is exactly 0 for a >= ZERO_ARG / 4**s (e^-745.13 is the last non-zero)
# below this share of non-zero coefficients in a tile, scan each kernel's own rows instead of all
SPARSE_DENSITY = 0.2
_SCRATCH = threading.local()  # per thread: the dot-product tile, reused across calls


def _dots_out(rows: int, cols: int) -> np.ndarray:
    """A (rows, cols) C-contiguous scratch array for a tile's dot products. A fresh 32 MB array per
    tile costs several times the BLAS product itself in page faults when d is small."""
    buf = getattr(_SCRATCH, "dots", None)
    if buf is None or buf.size < rows * cols:
        buf = _SCRATCH.dots = np.empty(max(rows * cols, 1))
    return buf[: rows * cols].reshape(rows, cols)


def _row_scales(program, Xb, xsq, K) -> np.ndarray:
    """Each row's normalisation factor per (kernel, class) column, (B, m·K): ones without
    normalised kernels (a product by 1.0 changes no bit)."""
    if not program.norm.any():
        return np.ones((len(xsq), program.m * K))
    return np.repeat(kernel_scales(program, Xb, xsq), K, axis=1)


def _tile_layout(pool, s0, s1, program) -> TileLayout:
    """The pool's layout of tile ``[s0, s1)``, rebuilt if rows were added to it (or the settings changed)."""
    cache = pool.tile_layouts
    layout = cache.get(s0)
    if layout is None or layout.key != layout_key(s1, program, pool, SPARSE_DENSITY):
        layout = cache[s0] = TileLayout(pool, s0, s1, program, SPARSE_DENSITY, DIRECT_DOT_FEATURES)
    return layout


def pool_scores(
    Xb: np.ndarray, xsq: np.ndarray, pool, program, extra_exact=None, blas_exact: bool = False, active=None
) -> np.ndarray:
    """Decision values of every kernel's classifier on the block, from the pool as it is now.

    ``active`` (bool per kernel, default all): score only those kernels (a shard's), with the
    same bits as the full scan; the other columns stay 0. Pools with laplacian/chi-square kernels
    take the general per-pair path, which evaluates every kernel.

    Dot products with pool rows flagged ``exact`` (and with ``extra_exact`` rows, e.g. pool rows
    equal to a row of this block) are recomputed in fixed order, see :mod:`.support_vectors`, unless
    ``blas_exact`` says BLAS is exact for this data anyway (integers). ``extra_exact`` may be a
    function returning those rows: it is called only if some tile needs BLAS dot products (the
    direct scans sum in a fixed order, or exactly, anyway).

    Returns ``(B, m·K)`` for a pool of K classes (:mod:`.support_vectors`): column ``k·K + c``.

    A pool of sparse rows (:mod:`.rows`) takes ``Xb`` as CSR (:func:`_sparse_pool_scores`).
    """
    if pool.sparse:
        return _sparse_pool_scores(Xb, xsq, pool, program, active)
    K = pool.n_classes
    out = np.zeros((Xb.shape[0], program.m * K))
    xscale = _row_scales(program, Xb, xsq, K)
    exact = None
    plan = dot_gauss_plan(program, active) if program.fast is not None else None
    per_column = program.sparse_plan(K) if program.sparse is not None else None
    column_active = None if active is None else np.repeat(np.asarray(active, dtype=bool), K)
    few_features = Xb.shape[1] <= DIRECT_DOT_FEATURES
    for s0 in range(0, pool.n, TILE):
        s1 = min(s0 + TILE, pool.n)
        tile = _tile_layout(pool, s0, s1, program)
        sparse = tile.sparse
        if sparse:  # (with ``active``, the density test counted every kernel, as the full scan does)
            csc = tile.csc(column_active)
            if few_features or blas_exact:
                PT, psq = tile.kept_rows(pool, s0, csc.rows)
                if few_features:  # rows by the key feature, if any: those scanned together skip alike
                    key = tile.sort_feature
                    order = np.argsort(Xb[:, key], kind="stable") if key >= 0 else np.arange(len(Xb))
                    out_sorted = out[order]
                    over_rows(
                        _accumulate_sparse_direct,
                        len(Xb),
                        Xb[order],
                        PT,
                        csc,
                        per_column,
                        key,
                        xscale[order],
                        out_sorted,
                        step=ROWS_PER_PASS,
                    )
                    out[order] = out_sorted
                else:
                    over_rows(accumulate_sparse_exact, len(Xb), Xb, xsq, PT, psq, csc, per_column, xscale, out)
                continue
        elif program.fast is not None:
            alphaT = tile.coefficients(pool, s0, s1, transpose=True)
        if exact is None:
            exact = np.zeros(pool.n, dtype=bool) if blas_exact else pool.exact[: pool.n].copy()
            rows = extra_exact() if callable(extra_exact) else extra_exact
            if not blas_exact and rows is not None and len(rows):
                exact[rows] = True
        P, psq = pool.X[s0:s1], pool.sq[s0:s1]
        cols = np.flatnonzero(exact[s0:s1]) + s0
        for r0, r1 in _row_chunks(len(Xb)):  # bounds the dot matrix whatever the segment length
            Xc, xc, oc, sc = Xb[r0:r1], xsq[r0:r1], out[r0:r1], xscale[r0:r1]
            if not program.uses_dots:  # (no kernel reads them: the product cost more than the scan)
                dots = _dots_out(r1 - r0, s1 - s0)
                dots.fill(0.0)
            elif blas_exact:  # integers: every partial sum exact, the same bits in any product
                dots = np.matmul(Xc, P.T, out=_dots_out(r1 - r0, s1 - s0))
            else:  # a row's bits must not depend on the rows scored with it (a shard's share)
                dots = fixed_shape_dots(Xc, P, out=_dots_out(r1 - r0, s1 - s0))
            if len(cols) and program.uses_dots:
                overwrite_exact_columns(Xc, pool.X, cols, s0, dots)
            if sparse:
                over_rows(accumulate_sparse, r1 - r0, Xc, xc, P, psq, dots, csc, per_column, sc, oc)
            elif program.fast is not None:
                over_rows(accumulate_dot_gauss, r1 - r0, Xc, xc, P, psq, alphaT, dots, plan, K, sc, oc)
            else:
                over_rows(
                    accumulate_general,
                    r1 - r0,
                    Xc,
                    xc,
                    P,
                    psq,
                    tile.coefficients(pool, s0, s1, transpose=False),
                    dots,
                    program.pair_record(),
                    K,
                    sc,
                    oc,
                )
    return out


def _sparse_pool_scores(Xb, xsq, pool, program, active) -> np.ndarray:
    """:func:`pool_scores` for a pool of sparse rows: the dot products of a row chunk with a tile
    from :func:`.rows.csr_dots` (feature order: no exact-row repair), then the dense scan's
    kernel-value loops, which read rows only for the direct distances near cancellation
    (:func:`.rows.rows_sqdist`). Only dot-product and gaussian kernels (``program.fast``)."""
    if program.fast is None:
        raise ValueError("sparse rows are scanned with dot-product and gaussian kernels only")
    K = pool.n_classes
    out = np.zeros((Xb.shape[0], program.m * K))
    xscale = _row_scales(program, Xb, xsq, K)
    plan = dot_gauss_plan(program, active)
    per_column = program.sparse_plan(K)
    column_active = None if active is None else np.repeat(np.asarray(active, dtype=bool), K)
    chunks = [(r0, r1, as_rows(Xb[r0:r1])) for r0, r1 in _row_chunks(Xb.shape[0])]
    for s0 in range(0, pool.n, TILE):
        s1 = min(s0 + TILE, pool.n)
        tile = _tile_layout(pool, s0, s1, program)
        P, PT, psq = pool.X.rows(s0, s1), tile.rows_transposed(pool, s0, s1), pool.sq[s0:s1]
        if tile.sparse:
            csc = tile.csc(column_active)
        else:
            alphaT = tile.coefficients(pool, s0, s1, transpose=True)
        for r0, r1, Xc in chunks:
            dots = _dots_out(r1 - r0, s1 - s0)
            csr_dots(Xc, PT, dots)
            if tile.sparse:
                over_rows(
                    accumulate_sparse, r1 - r0, Xc, xsq[r0:r1], P, psq, dots, csc, per_column, xscale[r0:r1], out[r0:r1]
                )
            else:
                over_rows(
                    accumulate_dot_gauss,
                    r1 - r0,
                    Xc,
                    xsq[r0:r1],
                    P,
                    psq,
                    alphaT,
                    dots,
                    plan,
                    K,
                    xscale[r0:r1],
                    out[r0:r1],
                )
    return out


def _row_chunks(n: int):
    """Ranges of at most ``ROW_CHUNK`` rows covering ``n``."""
    bounds = list(range(0, n, ROW_CHUNK)) + [n]
    return list(zip(bounds[:-1], bounds[1:]))


@njit(cache=True, nogil=True)
def _live_range(keys, lo, hi, x, g, limit):
    """``(a, b)``: the stretch of ``keys[lo:hi]`` (ascending) outside which a gaussian's value is
    exactly 0 for a query whose key feature is ``x``: where ``fl(fl((x − key)²)·g) ≥ limit``.

    The scan's squared distance sums non-negative terms, this one among them, so (rounding being
    monotone) its chain-anchor argument ``fl(d2·g)`` is at least as large; and ``exp(−a)`` raised
    by ``steps`` double squarings to the power ``4**steps`` is exactly 0 once
    ``a ≥ ZERO_ARG / 4**steps`` (``vexp_neg`` gives 0 above 745.13; for smaller ``a`` the value is
    within 1e-12 relative of ``e^{-a·4^steps} ≤ e^{-800}``, below half the least subnormal, or
    goes subnormal on the way and squares to 0). The predicate is monotone on each side of ``x``,
    so two binary searches find the stretch."""
    e_lo, e_hi = x - keys[lo], x - keys[hi - 1]
    if not ((keys[lo] < x and (e_lo * e_lo) * g >= limit) or (keys[hi - 1] > x and (e_hi * e_hi) * g >= limit)):
        return lo, hi  # nothing to skip at either end (the common case where no value is 0)
    a, b = lo, hi
    while a < b:  # first key not (left of x and far enough)
        mid = (a + b) >> 1
        e = x - keys[mid]
        if keys[mid] < x and (e * e) * g >= limit:
            a = mid + 1
        else:
            b = mid
    left, b = a, hi
    while a < b:  # first key right of x and far enough
        mid = (a + b) >> 1
        e = x - keys[mid]
        if keys[mid] > x and (e * e) * g >= limit:
            b = mid
        else:
            a = mid + 1
    return left, a


@njit(cache=True, nogil=True)
def _accumulate_sparse_direct(lo_row, hi_row, Xb, PT, csc, plan, key, xscale, out):
    """:func:`._sparse.accumulate_sparse` for few features, rows ``[lo_row, hi_row)`` (a thread's,
    :func:`.row_threads.over_rows`; ``lo_row`` a multiple of ``ROWS_PER_PASS``): dot products
    (polynomial kernels) and squared distances (gaussians) are summed right where they are used, in
    feature order, from ``PT`` (d × nnz: the pool rows of every kernel's support vectors, kernel
    after kernel, transposed so the loop over them vectorises). That replaces a BLAS product of the
    block with every pool row -- bound at small d by writing and re-reading the dot matrix -- and
    the fixed-order recomputation for duplicated rows (every sum is taken in one fixed order:
    features in groups of four, then a pair, then a single one, in feature order). Distances summed
    from differences need no repair for cancellation (‖x‖² + ‖s‖² − 2 x·s does, for near rows with
    large norms: raw cod-rna) and give exactly 0 for a repeated row.

    With ``key >= 0`` each kernel's support vectors come sorted by feature ``key``, and a
    gaussian skips those whose value is exactly 0 by that feature's difference alone
    (:func:`_live_range`: on raw cod-rna, 28 % of all pairs); each row's sum runs over its own
    stretch, whatever rows it is scanned with (the caller sorts the rows by the key feature, so
    the rows of a pass have near stretches). Rows are taken ``ROWS_PER_PASS`` at a time and each
    kernel's support vectors ``SV_CHUNK`` at a time, so the stretch of ``PT`` and the sums being
    built stay in L1 cache (over a whole kernel of thousands of vectors the loop is bound by L2
    bandwidth); each chunk's weighted sum is added to the score in chunk order."""
    ptr, _, coefs = csc
    deg, anchor_param, steps = plan
    d = Xb.shape[1]
    m = ptr.shape[0] - 1
    R, C = ROWS_PER_PASS, SV_CHUNK
    dots = np.empty((R, C))
    ev = np.empty(C)
    scratch = np.empty(C)
    live = np.empty((R, 2), dtype=np.int64)
    for t0 in range(lo_row, hi_row, R):
        nr = min(R, hi_row - t0)
        for k in range(m):
            klo, khi = ptr[k], ptr[k + 1]
            gauss = deg[k] == 0
            ua, ub = khi, klo  # the union of the rows' stretches
            for r in range(nr):
                a, b = klo, khi
                if gauss and key >= 0 and klo < khi:
                    a, b = _live_range(PT[key], klo, khi, Xb[t0 + r, key], anchor_param[k], ZERO_ARG / 4.0 ** steps[k])
                live[r, 0], live[r, 1] = a, b
                ua, ub = min(ua, a), max(ub, b)
            for lo in range(klo, khi, C):  # chunks at fixed places: a row's sums do not depend on the others
                hi = min(lo + C, khi)
                ca, cb = max(lo, ua), min(hi, ub)
                if ca >= cb:
                    continue
                cnt = cb - ca
                for r in range(nr):
                    dots[r, :cnt] = 0.0
                f = 0
                while f + 4 <= d:  # four features per pass over the sums: a quarter of the stores
                    p0, p1, p2, p3 = PT[f, ca:cb], PT[f + 1, ca:cb], PT[f + 2, ca:cb], PT[f + 3, ca:cb]
                    for r in range(nr):
                        t = t0 + r
                        x0, x1, x2, x3 = Xb[t, f], Xb[t, f + 1], Xb[t, f + 2], Xb[t, f + 3]
                        acc = dots[r, :cnt]  # 1-D views: LLVM vectorises loops over them
                        if gauss:  # squared distances summed directly: no cancellation to repair
                            for j in range(cnt):
                                e0, e1, e2, e3 = x0 - p0[j], x1 - p1[j], x2 - p2[j], x3 - p3[j]
                                acc[j] += (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3)
                        else:
                            for j in range(cnt):
                                acc[j] += (x0 * p0[j] + x1 * p1[j]) + (x2 * p2[j] + x3 * p3[j])
                    f += 4
                if f + 2 <= d:  # then a pair, then a last single feature
                    p0, p1 = PT[f, ca:cb], PT[f + 1, ca:cb]
                    for r in range(nr):
                        x0, x1 = Xb[t0 + r, f], Xb[t0 + r, f + 1]
                        acc = dots[r, :cnt]
                        if gauss:
                            for j in range(cnt):
                                e0, e1 = x0 - p0[j], x1 - p1[j]
                                acc[j] += e0 * e0 + e1 * e1
                        else:
                            for j in range(cnt):
                                acc[j] += x0 * p0[j] + x1 * p1[j]
                    f += 2
                for f in range(f, d):
                    pt = PT[f, ca:cb]
                    for r in range(nr):
                        xf = Xb[t0 + r, f]
                        acc = dots[r, :cnt]
                        if gauss:
                            for j in range(cnt):
                                diff = xf - pt[j]
                                acc[j] += diff * diff
                        else:
                            for j in range(cnt):
                                acc[j] += xf * pt[j]
                for r in range(nr):
                    a, b = max(ca, live[r, 0]), min(cb, live[r, 1])
                    if a < b:
                        sparse_values(dots[r, a - ca : b - ca], ev, scratch, b - a, deg[k], anchor_param[k], steps[k])
                        out[t0 + r, k] += xscale[t0 + r, k] * weighted_sum(coefs[a:b], ev[: b - a])
