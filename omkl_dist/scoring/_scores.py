"""Score a block of instances against the SV pool: ``F[t, k] = Σ_s alpha[s, k] κ_k(x_t, sv_s)``.

Multi-class pools (K classes, :mod:`.pool`) have K coefficient columns per kernel: ``F[t, k·K + c]``
sums kernel k's values with column ``k·K + c``. The dense scans compute a kernel's values once and
take one reduction per class; the sparse scans treat every column as a kernel of its own (a row is
kept by about two classes per kernel, so its values are computed about twice). With K = 1 (binary)
the arithmetic is the single-column scan's.

The dot products come from one BLAS product per tile of the pool; kernel values and the
accumulation over the pool run in njit code parallel over the block's rows. Tiling bounds the
dot-matrix memory to ``B × TILE`` doubles. Pools of dot-product and gaussian kernels (the papers'
pools) take a kernel-major loop vectorised over the pool; pools with laplacian or chi-square
kernels take the general per-pair evaluator. Kernel values are computed with exactly the
arithmetic of :func:`._pairs.pair_values`, only the sums over the pool are reassociated; except
in the direct sparse scan for few features, which sums its own dot products and distances (and
leaves out of its sums the gaussian values it can tell are exactly 0 from one feature).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange

from ._blas import fixed_shape_dots
from ._pairs import CANCEL, overwrite_exact_columns, pair_values
from ._vexp import vexp_neg, vexp_neg_n
from .program import kernel_scales
from .rows import as_rows, csr_dots, later_dots, n_rows, rows_sqdist, transposed

TILE = 4096
ROW_CHUNK = 1024  # rows per BLAS dot matrix (TILE columns): bounds its memory for long segments
# up to this many features the sparse scan takes its dot products directly, in feature order
DIRECT_DOT_FEATURES = 32
ROWS_PER_PASS = 4  # rows of the block sharing one read of the support vectors in the direct scan
SV_CHUNK = 1024  # support vectors per stretch of the direct scan (fits L1 with ROWS_PER_PASS rows)
ZERO_ARG = 800.0  # exp(-a) raised to 4**s is exactly 0 for a >= ZERO_ARG / 4**s (e^-745.13 is the last non-zero)
_SCRATCH = threading.local()  # per thread: the dot-product tile, reused across calls


def _dots_out(rows: int, cols: int) -> np.ndarray:
    """A (rows, cols) C-contiguous scratch array for a tile's dot products. A fresh 32 MB array per
    tile costs several times the BLAS product itself in page faults when d is small."""
    buf = getattr(_SCRATCH, "dots", None)
    if buf is None or buf.size < rows * cols:
        buf = _SCRATCH.dots = np.empty(max(rows * cols, 1))
    return buf[: rows * cols].reshape(rows, cols)
# below this share of non-zero coefficients in a tile, scan each kernel's own rows instead of all
SPARSE_DENSITY = 0.2
KERNEL_VALUE_COST = 8  # see _sparse_limit


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _weighted_sum(a, b):
    """Σ a·b, reassociated so LLVM vectorises the reduction."""
    acc = 0.0
    for s in range(a.shape[0]):
        acc += a[s] * b[s]
    return acc


@njit(cache=True, nogil=True)
def _row_sqdist(Xb, t, P, xt, psq, dot_row, d2):
    for s in range(d2.shape[0]):
        d2[s] = xt + psq[s] - 2.0 * dot_row[s]
    for s in range(d2.shape[0]):
        if d2[s] < CANCEL * (xt + psq[s]):
            d2[s] = rows_sqdist(Xb, t, P, s)


@njit(cache=True, nogil=True)
def _power_up(cur, dot_row, deg, target):
    """``cur`` holds ``dot_row**deg``; raise it to ``dot_row**target`` by repeated multiplication."""
    while deg < target:
        for s in range(cur.shape[0]):
            cur[s] *= dot_row[s]
        deg += 1
    return deg


@njit(cache=True, nogil=True)
def _gauss_next(anchor, g, d2, cur, xg, scratch):
    """Replace ``cur`` by the next gaussian's values: ``exp(-g·d2)`` at a chain anchor, else the
    previous (twice as wide) gaussian's values to the 4th power."""
    if anchor:
        for s in range(cur.shape[0]):
            xg[s] = d2[s] * g
        vexp_neg(xg, cur, scratch)
    else:
        for s in range(cur.shape[0]):
            v = cur[s] * cur[s]
            cur[s] = v * v


@njit(cache=True, nogil=True, parallel=True)
def _accumulate_dot_gauss(Xb, xsq, P, psq, alphaT, dots, dot_idx, dot_deg, g_idx, g_param, g_anchor, dot_on, g_on,
                          g_need, K, xscale, out):
    """Kernel-major scan for dot-product kernels and gaussians.

    For one row t each kernel's values over the tile form one contiguous vector and its score one
    reduction. Dot kernels come sorted by degree (powers built incrementally); gaussians widest
    first, each either an exp anchor or the previous one to the 4th power. Only kernels flagged
    ``dot_on``/``g_on`` are scored; ``g_need`` marks the gaussians whose values must be computed
    (the scored ones and their chain predecessors), see :func:`fast_flags`. ``alphaT`` has K
    rows per kernel (one per class), kernel k's values meet rows ``k·K … k·K + K − 1``.
    ``xscale[t, c]`` multiplies column c's score of row t: the row's normalisation factor
    (:func:`.program.kernel_scales`; 1.0 for an unnormalised kernel, which leaves the bits as they
    are), the support vectors' factors being folded into ``alphaT``.
    """
    B = n_rows(Xb)
    n = n_rows(P)
    for t in prange(B):
        d2 = np.empty(n)
        cur = np.empty(n)
        xg = np.empty(n)
        scratch = np.empty(n)
        dot_row = dots[t]
        cur[:] = dot_row
        deg = 1
        for j in range(dot_idx.shape[0]):
            if dot_on[j]:
                deg = _power_up(cur, dot_row, deg, dot_deg[j])
                for c in range(dot_idx[j] * K, dot_idx[j] * K + K):
                    out[t, c] += xscale[t, c] * _weighted_sum(alphaT[c], cur)
        if not g_need.any():
            continue
        _row_sqdist(Xb, t, P, xsq[t], psq, dot_row, d2)
        for j in range(g_idx.shape[0]):
            if g_need[j]:
                _gauss_next(g_anchor[j], g_param[j], d2, cur, xg, scratch)
            if g_on[j]:
                for c in range(g_idx[j] * K, g_idx[j] * K + K):
                    out[t, c] += xscale[t, c] * _weighted_sum(alphaT[c], cur)


@njit(cache=True, nogil=True, inline="always")  # numba-level inlining: the loops vectorise as in place
def _sparse_values(base, ev, scratch, cnt, deg, g, steps):
    """``ev[:cnt]``: one kernel's values from ``base[:cnt]`` in the sparse scans -- dot products
    raised to ``deg`` by repeated multiplication, or (``deg`` 0, a gaussian) squared distances
    scaled in place by the chain anchor's ``g``, their exp, then ``steps`` double squarings (the
    dense scan's arithmetic, so the same bits)."""
    if deg > 0:
        for j in range(cnt):
            ev[j] = base[j]
        for _ in range(deg - 1):
            for j in range(cnt):
                ev[j] *= base[j]
    else:
        for j in range(cnt):
            base[j] *= g
        vexp_neg_n(base, ev, scratch, cnt)
        for _ in range(steps):
            for j in range(cnt):
                v = ev[j] * ev[j]
                ev[j] = v * v


@njit(cache=True, nogil=True, parallel=True)
def _accumulate_sparse(Xb, xsq, P, psq, dots, ptr, rows, coefs, deg, anchor_param, steps, xscale, out):
    """Per-kernel scan over only the rows with a non-zero coefficient (CSC: ``ptr``, ``rows``).

    Each kernel's rows are gathered into a contiguous buffer and processed like the dense scan:
    powers by repeated multiplication, a gaussian as its chain anchor's exp followed by the same
    number of double squarings (so the same bits), then one reassociated reduction.
    """
    B = n_rows(Xb)
    n = n_rows(P)
    m = ptr.shape[0] - 1
    cnt_max = 0
    for k in range(m):
        cnt_max = max(cnt_max, ptr[k + 1] - ptr[k])
    for t in prange(B):
        d2 = np.empty(n)
        _row_sqdist(Xb, t, P, xsq[t], psq, dots[t], d2)
        base = np.empty(cnt_max)
        ev = np.empty(cnt_max)
        scratch = np.empty(cnt_max)
        for k in range(m):
            lo, hi = ptr[k], ptr[k + 1]
            cnt = hi - lo
            if cnt == 0:
                continue
            src = dots[t] if deg[k] > 0 else d2
            for j in range(cnt):
                base[j] = src[rows[lo + j]]
            _sparse_values(base, ev, scratch, cnt, deg[k], anchor_param[k], steps[k])
            out[t, k] += xscale[t, k] * _weighted_sum(coefs[lo:hi], ev[:cnt])


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


@njit(cache=True, nogil=True, parallel=True)
def _accumulate_sparse_direct(Xb, PT, ptr, coefs, deg, anchor_param, steps, key, xscale, out):
    """:func:`_accumulate_sparse` for few features: dot products (polynomial kernels) and squared
    distances (gaussians) are summed right where they are used, in feature order, from ``PT``
    (d × nnz: the pool rows of every kernel's support vectors, kernel after kernel, transposed so
    the loop over them vectorises). That replaces a BLAS product of the block with every pool
    row -- bound at small d by writing and re-reading the dot matrix -- and the fixed-order
    recomputation for duplicated rows (every sum is taken in one fixed order: features in groups
    of four, then a pair, then a single one, in feature order). Distances summed from
    differences need no repair for cancellation (‖x‖² + ‖s‖² − 2 x·s does, for near rows with
    large norms: raw cod-rna) and give exactly 0 for a repeated row.

    With ``key >= 0`` each kernel's support vectors come sorted by feature ``key``, and a
    gaussian skips those whose value is exactly 0 by that feature's difference alone
    (:func:`_live_range`: on raw cod-rna, 28 % of all pairs); each row's sum runs over its own
    stretch, whatever rows it is scanned with (the caller sorts the rows by the key feature, so
    the rows of a pass have near stretches). Rows are taken ``ROWS_PER_PASS`` at a time and each
    kernel's support vectors ``SV_CHUNK`` at a time, so the stretch of ``PT`` and the sums being
    built stay in L1 cache (over a whole kernel of thousands of vectors the loop is bound by L2
    bandwidth); each chunk's weighted sum is added to the score in chunk order."""
    B, d = Xb.shape
    m = ptr.shape[0] - 1
    R, C = ROWS_PER_PASS, SV_CHUNK
    for tb in prange((B + R - 1) // R):
        t0 = tb * R
        nr = min(R, B - t0)
        dots = np.empty((R, C))
        ev = np.empty(C)
        scratch = np.empty(C)
        live = np.empty((R, 2), dtype=np.int64)
        for k in range(m):
            klo, khi = ptr[k], ptr[k + 1]
            gauss = deg[k] == 0
            ua, ub = khi, klo  # the union of the rows' stretches
            for r in range(nr):
                a, b = klo, khi
                if gauss and key >= 0 and klo < khi:
                    a, b = _live_range(PT[key], klo, khi, Xb[t0 + r, key], anchor_param[k],
                                       ZERO_ARG / 4.0 ** steps[k])
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
                        _sparse_values(dots[r, a - ca:b - ca], ev, scratch, b - a, deg[k], anchor_param[k], steps[k])
                        out[t0 + r, k] += xscale[t0 + r, k] * _weighted_sum(coefs[a:b], ev[:b - a])


@njit(cache=True, nogil=True, parallel=True)
def _accumulate_sparse_exact(Xb, xsq, PT, psq, ptr, coefs, deg, anchor_param, steps, xscale, out):
    """:func:`_accumulate_sparse` for integer data (binary, counts) with many features: a row's dot
    products with a kernel's support vectors are summed over the row's non-zero features only,
    from ``PT`` (d × nnz, as in the direct scan; ``psq`` their squared norms). Integer dot
    products and ``‖x‖² + ‖s‖² − 2 x·s`` are exact in any order (see :func:`.pool.blas_dots_exact`),
    so these are the BLAS path's values bit for bit, and the rest is :func:`_accumulate_sparse`'s
    arithmetic: the same scores, without a dense product over features that are mostly zero."""
    B, d = Xb.shape
    m = ptr.shape[0] - 1
    cnt_max = 1
    for k in range(m):
        cnt_max = max(cnt_max, ptr[k + 1] - ptr[k])
    for t in prange(B):
        feats = np.empty(d, dtype=np.int64)
        nf = 0
        for f in range(d):
            if Xb[t, f] != 0.0:
                feats[nf] = f
                nf += 1
        base = np.empty(cnt_max)
        ev = np.empty(cnt_max)
        scratch = np.empty(cnt_max)
        xt = xsq[t]
        for k in range(m):
            lo, hi = ptr[k], ptr[k + 1]
            cnt = hi - lo
            if cnt == 0:
                continue
            acc, ev_k = base[:cnt], ev[:cnt]
            acc[:] = 0.0
            i = 0
            while i + 4 <= nf:  # four features per pass over the sums (exact: any order)
                f0, f1, f2, f3 = feats[i], feats[i + 1], feats[i + 2], feats[i + 3]
                x0, x1, x2, x3 = Xb[t, f0], Xb[t, f1], Xb[t, f2], Xb[t, f3]
                p0, p1, p2, p3 = PT[f0, lo:hi], PT[f1, lo:hi], PT[f2, lo:hi], PT[f3, lo:hi]
                for j in range(cnt):
                    acc[j] += (x0 * p0[j] + x1 * p1[j]) + (x2 * p2[j] + x3 * p3[j])
                i += 4
            for i in range(i, nf):
                xf = Xb[t, feats[i]]
                pf = PT[feats[i], lo:hi]
                for j in range(cnt):
                    acc[j] += xf * pf[j]
            if deg[k] == 0:  # squared distances (exact, as the dot products)
                ps = psq[lo:hi]
                for j in range(cnt):
                    acc[j] = xt + ps[j] - 2.0 * acc[j]
            _sparse_values(acc, ev, scratch, cnt, deg[k], anchor_param[k], steps[k])
            out[t, k] += xscale[t, k] * _weighted_sum(coefs[lo:hi], ev_k)


@njit(cache=True, nogil=True, parallel=True)
def _accumulate_general(Xb, xsq, P, psq, alpha, dots, kinds, param, src, order, need_l1, need_chi2, direct, vcols,
                        vptr, K, xscale, out):
    B = Xb.shape[0]
    m = kinds.shape[0]
    for t in prange(B):
        vals = np.empty(m)
        work = np.empty(3)
        acc = np.zeros(m * K)
        for s in range(P.shape[0]):
            pair_values(Xb, t, P, s, dots[t, s], xsq[t], psq[s], kinds, param, src, order, need_l1, need_chi2,
                        direct, vcols, vptr, vals, work)
            for k in range(m):
                for c in range(k * K, k * K + K):
                    acc[c] += alpha[s, c] * vals[k]
        for c in range(m * K):
            out[t, c] += xscale[t, c] * acc[c]


@njit(cache=True, nogil=True, parallel=True)
def _gram_dot_gauss(Xb, xsq, XXt, G, dot_idx, dot_deg, g_idx, g_param, g_anchor, dot_on, g_on, g_need):
    """``G[k, t, s] = κ_k(x_t, x_s)`` inside one block, same arithmetic as the pool scan (only the
    kernels flagged on; the others' slices are left unset).

    Full rows rather than the triangle the recurrence reads: uniform work per row vectorises and
    balances across threads better than rows of growing length.
    """
    B = n_rows(Xb)
    n = B
    for t in prange(B):
        d2 = np.empty(n)
        cur = np.empty(n)
        xg = np.empty(n)
        scratch = np.empty(n)
        dot_row = XXt[t]
        cur[:] = dot_row
        deg = 1
        for j in range(dot_idx.shape[0]):
            if dot_on[j]:
                deg = _power_up(cur, dot_row, deg, dot_deg[j])
                G[dot_idx[j], t, :] = cur
        if not g_need.any():
            continue
        _row_sqdist(Xb, t, Xb, xsq[t], xsq, dot_row, d2)
        for j in range(g_idx.shape[0]):
            if g_need[j]:
                _gauss_next(g_anchor[j], g_param[j], d2, cur, xg, scratch)
            if g_on[j]:
                G[g_idx[j], t, :] = cur
    return G


@njit(cache=True, nogil=True, parallel=True)
def _gram_general(Xb, xsq, XXt, kinds, param, src, order, need_l1, need_chi2, direct, vcols, vptr):
    m = kinds.shape[0]
    B = Xb.shape[0]
    G = np.zeros((m, B, B))
    for t in prange(1, B):
        vals = np.empty(m)
        work = np.empty(3)
        for s in range(t):
            pair_values(Xb, t, Xb, s, XXt[t, s], xsq[t], xsq[s], kinds, param, src, order, need_l1, need_chi2,
                        direct, vcols, vptr, vals, work)
            G[:, t, s] = vals
    return G


@njit(cache=True, nogil=True)
def gram_column(Xb, XbT, xsq, s, col, dot_idx, dot_deg, g_idx, g_param, g_anchor, dot_on, g_on, g_need, want, scale,
                norm):
    """Fill ``col[k, t] = κ_k(x_t, x_s)`` for the rows t > s of the block and the kernels k with
    ``want[k]`` (those row s became a support vector of): its kernel values against the rows still
    to come. Same arithmetic as the pool scan (query norm + support-vector norm − 2·dot),
    vectorised over t; for learners that keep few rows this replaces the full block Gram (the
    recurrence adds the column to the later rows' scores at once, so one (m, B) buffer serves
    every support vector of the block). The dot products are summed in feature order, as
    :func:`._pairs.overwrite_exact_columns` does, so duplicated rows cancel exactly without a
    block-wide check; ``XbT`` is the block :func:`.rows.transposed` (d × B), so they are read
    contiguously. ``Xb`` may be dense or :class:`.rows.CSRRows` (:func:`.rows.later_dots`). A
    normalised kernel (``norm[k]``) gets its values times ``scale[t, k]·scale[s, k]``
    (:func:`.program.kernel_scales` of the block's rows; only dot-product kernels change)."""
    B = n_rows(Xb)
    n = B - s - 1
    if n <= 0:
        return
    q = np.empty(n)
    cur = np.empty(n)
    d2 = np.empty(n)
    xg = np.empty(n)
    scratch = np.empty(n)
    q[:] = 0.0
    later_dots(Xb, XbT, s, q)
    cur[:] = q
    deg = 1
    for j in range(dot_idx.shape[0]):
        if dot_on[j] and want[dot_idx[j]]:  # powers built in the same order whichever are skipped
            deg = _power_up(cur, q, deg, dot_deg[j])
            k = dot_idx[j]
            if norm[k]:
                for i in range(n):
                    col[k, s + 1 + i] = cur[i] * scale[s + 1 + i, k] * scale[s, k]
            else:
                col[k, s + 1:] = cur
    need = np.zeros(g_idx.shape[0], dtype=np.bool_)  # the wanted gaussians and their chain predecessors
    for j in range(g_idx.shape[0] - 1, -1, -1):
        need[j] = g_need[j] and ((g_on[j] and want[g_idx[j]]) or (j + 1 < g_idx.shape[0] and need[j + 1]
                                                                   and not g_anchor[j + 1]))
    if not need.any():
        return
    for i in range(n):
        t = s + 1 + i
        d2[i] = xsq[t] + xsq[s] - 2.0 * q[i]
        if d2[i] < CANCEL * (xsq[t] + xsq[s]):
            d2[i] = rows_sqdist(Xb, t, Xb, s)
    for j in range(g_idx.shape[0]):
        if need[j]:
            _gauss_next(g_anchor[j], g_param[j], d2, cur, xg, scratch)
        if need[j] and g_on[j] and want[g_idx[j]]:
            col[g_idx[j], s + 1:] = cur


def fast_flags(program, active=None) -> tuple:
    """``program.fast`` plus which of its kernels to evaluate: ``(…fast, dot_on, g_on, g_need)``.

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
    return (*program.fast, active[dot_idx].copy(), g_on, g_need)


def block_gram(Xb: np.ndarray, xsq: np.ndarray, XXt: np.ndarray, program, active=None, out=None,
               scale=None) -> np.ndarray:
    """Kernel values between rows of one block (lower triangle), (m, B, B); with ``active`` only
    those kernels' slices are set. ``out``: a C-contiguous (m, B, B) array to fill (reusing one
    saves the page faults of a fresh allocation, which cost more than the arithmetic). ``scale``:
    the rows' :func:`.program.kernel_scales`, needed when the program has normalised kernels."""
    if program.fast is not None:
        G = np.empty((program.m, len(xsq), len(xsq))) if out is None else out
        _gram_dot_gauss(Xb, xsq, XXt, G, *fast_flags(program, active))
    else:
        G = _gram_general(Xb, xsq, XXt, program.kinds, program.param, program.src, program.order,
                          program.need_l1, program.need_chi2, program.direct, program.vcols, program.vptr)
    for k in np.flatnonzero(program.norm if active is None else program.norm & np.asarray(active, dtype=bool)):
        G[k] *= scale[:, k][:, None]
        G[k] *= scale[:, k][None, :]
    return G


def _csc_ptr(nz_k, m):
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(nz_k, minlength=m), out=ptr[1:])
    return ptr


@njit(cache=True, nogil=True)
def _tile_csc(alpha, X, max_nnz, by_key):
    """A tile's non-zero coefficients in CSC order (kernel after kernel): ``(ptr, nz_k, nz_s,
    coefs, key)``, or empty arrays if there are ``max_nnz`` or more. Within a kernel the rows come
    in index order, or with ``by_key`` sorted by the feature of widest spread ``key`` (ties by
    index; else ``key`` is -1)."""
    n, m = alpha.shape
    ptr = np.zeros(m + 1, dtype=np.int64)
    for s in range(n):
        for k in range(m):
            if alpha[s, k] != 0.0:
                ptr[k + 1] += 1
    for k in range(m):
        ptr[k + 1] += ptr[k]
    nnz = ptr[m]
    key = -1
    if nnz >= max_nnz:
        return ptr, np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), key
    order = np.arange(n)
    if by_key and n > 0:
        widest = -1.0
        for f in range(X.shape[1]):
            lo, hi = X[0, f], X[0, f]
            for s in range(n):
                lo, hi = min(lo, X[s, f]), max(hi, X[s, f])
            if hi - lo > widest:
                widest, key = hi - lo, f
        order = np.argsort(X[:, key], kind="mergesort")  # stable: ties by row index
    nz_k, nz_s, coefs = np.empty(nnz, np.int64), np.empty(nnz, np.int64), np.empty(nnz)
    fill = ptr[:m].copy()
    for s in order:  # rows in scan order fill each kernel's stretch in that order
        for k in range(m):
            if alpha[s, k] != 0.0:
                i = fill[k]
                nz_k[i], nz_s[i], coefs[i] = k, s, alpha[s, k]
                fill[k] += 1
    return ptr, nz_k, nz_s, coefs, key


class _TileLayout:
    """How the scans read one pool tile: whether it is scanned sparsely and, if so, its non-zero
    coefficients in CSC order per kernel (``nz_k``, ``nz_s``, ``coefs``, ``ptr``) and (made on
    first use) the kept rows transposed (``PT``, d × nnz) with their squared norms. For the
    direct scan (few features, some gaussian) each kernel's rows are sorted by the feature
    ``sort_feature``, see :func:`_accumulate_sparse_direct`. Pool rows are append-only and their
    coefficients never change, so a tile's layout stays valid until rows are added to it: the
    pool keeps it, and a segment's scan rebuilds only the last tile's. (Dense tiles keep
    nothing: their scan is dominated by the kernel values.) With normalised kernels the tile
    keeps its rows' :func:`.program.kernel_scales` (``scales``), folded into ``coefs``.)"""

    def __init__(self, pool, s0, s1, program):
        self.key = _layout_key(s1, program, pool)
        self.sparse = program.sparse is not None
        self.sort_feature = -1
        self.scales = None
        if program.norm.any():
            rows = pool.X.csr(s0, s1) if pool.sparse else pool.X[s0:s1]
            self.scales = kernel_scales(program, rows, pool.sq[s0:s1])
        if self.sparse:
            by_key = (not pool.sparse and pool.n_features <= DIRECT_DOT_FEATURES
                      and bool((program.sparse[0] == 0).any()))
            max_nnz = _sparse_limit(pool, s1 - s0)
            self.ptr, self.nz_k, self.nz_s, self.coefs, self.sort_feature = _tile_csc(
                pool.alpha[s0:s1], _NO_ROWS if pool.sparse else pool.X[s0:s1], max_nnz, by_key)
            self.sparse = self.ptr[-1] < max_nnz
            if self.sparse and self.scales is not None:  # a support vector's factor R(s) in its coefficient
                self.coefs = self.coefs * self.scales[self.nz_s, self.nz_k // pool.n_classes]
        self._PT = None
        self._rows_T = None

    def coefficients(self, pool, s0, s1, transpose: bool) -> np.ndarray:
        """The tile's coefficients (K columns per kernel), times the support vectors' normalisation
        factors; (kernel columns × rows) when ``transpose``."""
        alpha = pool.alpha[s0:s1]
        if self.scales is not None:
            alpha = alpha * np.repeat(self.scales, pool.n_classes, axis=1)
        return np.ascontiguousarray(alpha.T) if transpose else alpha

    def rows_transposed(self, pool, s0, s1):
        """The tile's rows of a sparse pool by feature (:func:`.rows.transposed`), for :func:`.rows.csr_dots`."""
        if self._rows_T is None:
            self._rows_T = transposed(pool.X.csr(s0, s1))
        return self._rows_T

    def csc(self, active=None):
        """``(nz_s, ptr, coefs)`` of the columns flagged in ``active`` (default all)."""
        if active is None:
            return self.nz_s, self.ptr, self.coefs
        keep = active[self.nz_k]
        return self.nz_s[keep], _csc_ptr(self.nz_k[keep], len(self.ptr) - 1), self.coefs[keep]

    def kept_rows(self, pool, s0, nz_s):
        """``(PT, sq)``: the tile's rows ``nz_s`` (from :meth:`csc`: the support vectors, kernel
        after kernel) transposed (d × nnz), and their squared norms; kept for all kernels."""
        if nz_s is self.nz_s and self._PT is not None:
            return self._PT
        rows = s0 + nz_s
        PT = (np.ascontiguousarray(pool.X[rows].T), pool.sq[rows])
        if nz_s is self.nz_s:
            self._PT = PT
        return PT


_NO_ROWS = np.empty((0, 0))  # _tile_csc reads rows only to sort by a feature (dense pools of few features)


def _sparse_limit(pool, rows: int) -> int:
    """The non-zero coefficients at which a tile of ``rows`` pool rows is scanned densely. Binary
    pools: a share ``SPARSE_DENSITY`` of its coefficients. Multi-class ones: where the costs meet --
    the sparse scan takes a product (or distance) over the d features and a kernel value per
    non-zero (kernel, class) column of a row, the dense one a product per row and, per kernel, one
    value and K multiply-adds (``KERNEL_VALUE_COST``: a kernel value in multiply-adds). OM-2 keeps
    every row for every kernel (2m non-zeros a row: dense), OMKC only for the kernels that erred."""
    m, K, d = pool.n_kernels, pool.n_classes, pool.n_features
    if K == 1:
        return int(np.ceil(SPARSE_DENSITY * rows * m))  # nnz < density · size
    return int(np.ceil(rows * (d + m * (KERNEL_VALUE_COST + K)) / (d + KERNEL_VALUE_COST)))


def _layout_key(s1, program, pool):
    return s1, pool.alpha.shape[1], program.sparse is not None, SPARSE_DENSITY, program.norm.tobytes()


def _row_scales(program, Xb, xsq, K) -> np.ndarray:
    """Each row's normalisation factor per (kernel, class) column, (B, m·K): ones without
    normalised kernels (a product by 1.0 changes no bit)."""
    if not program.norm.any():
        return np.ones((len(xsq), program.m * K))
    return np.repeat(kernel_scales(program, Xb, xsq), K, axis=1)


def _tile_layout(pool, s0, s1, program) -> _TileLayout:
    cache = pool.tile_layouts
    layout = cache.get(s0)
    if layout is None or layout.key != _layout_key(s1, program, pool):
        layout = cache[s0] = _TileLayout(pool, s0, s1, program)
    return layout


def pool_scores(Xb: np.ndarray, xsq: np.ndarray, pool, program, extra_exact=None,
                blas_exact: bool = False, active=None) -> np.ndarray:
    """Decision values of every kernel's classifier on the block, from the pool as it is now.

    ``active`` (bool per kernel, default all): score only those kernels (a shard's), with the
    same bits as the full scan; the other columns stay 0. Pools with laplacian/chi-square kernels
    take the general per-pair path, which evaluates every kernel.

    Dot products with pool rows flagged ``exact`` (and with ``extra_exact`` rows, e.g. pool rows
    equal to a row of this block) are recomputed in fixed order, see :mod:`.pool`, unless
    ``blas_exact`` says BLAS is exact for this data anyway (integers). ``extra_exact`` may be a
    function returning those rows: it is called only if some tile needs BLAS dot products (the
    direct scans sum in a fixed order, or exactly, anyway).

    Returns ``(B, m·K)`` for a pool of K classes (:mod:`.pool`): column ``k·K + c``.

    A pool of sparse rows (:mod:`.rows`) takes ``Xb`` as CSR (:func:`_sparse_pool_scores`).
    """
    if pool.sparse:
        return _sparse_pool_scores(Xb, xsq, pool, program, active)
    K = pool.n_classes
    out = np.zeros((Xb.shape[0], program.m * K))
    xscale = _row_scales(program, Xb, xsq, K)
    exact = None
    flags = fast_flags(program, active) if program.fast is not None else None
    # the sparse scans see each (kernel, class) column as a kernel of its own
    per_column = program.sparse if K == 1 or program.sparse is None else tuple(np.repeat(a, K) for a in program.sparse)
    column_active = None if active is None else np.repeat(np.asarray(active, dtype=bool), K)
    few_features = Xb.shape[1] <= DIRECT_DOT_FEATURES
    for s0 in range(0, pool.n, TILE):
        s1 = min(s0 + TILE, pool.n)
        tile = _tile_layout(pool, s0, s1, program)
        sparse = tile.sparse
        if sparse:  # (with ``active``, the density test counted every kernel, as the full scan does)
            nz_s, ptr, coefs = tile.csc(column_active)
            if few_features or blas_exact:
                PT, psq = tile.kept_rows(pool, s0, nz_s)
                if few_features:  # rows by the key feature, if any: those scanned together skip alike
                    key = tile.sort_feature
                    order = np.argsort(Xb[:, key], kind="stable") if key >= 0 else np.arange(len(Xb))
                    out_sorted = out[order]
                    _accumulate_sparse_direct(Xb[order], PT, ptr, coefs, *per_column, key, xscale[order], out_sorted)
                    out[order] = out_sorted
                else:
                    _accumulate_sparse_exact(Xb, xsq, PT, psq, ptr, coefs, *per_column, xscale, out)
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
            if blas_exact:  # integers: every partial sum exact, the same bits in any product
                dots = np.matmul(Xc, P.T, out=_dots_out(r1 - r0, s1 - s0))
            else:  # a row's bits must not depend on the rows scored with it (a shard's share)
                dots = fixed_shape_dots(Xc, P, out=_dots_out(r1 - r0, s1 - s0))
            if len(cols):
                overwrite_exact_columns(Xc, pool.X, cols, s0, dots)
            if sparse:
                _accumulate_sparse(Xc, xc, P, psq, dots, ptr, nz_s, coefs, *per_column, sc, oc)
            elif program.fast is not None:
                _accumulate_dot_gauss(Xc, xc, P, psq, alphaT, dots, *flags, K, sc, oc)
            else:
                _accumulate_general(Xc, xc, P, psq, tile.coefficients(pool, s0, s1, transpose=False), dots,
                                    program.kinds, program.param, program.src, program.order, program.need_l1,
                                    program.need_chi2, program.direct, program.vcols, program.vptr, K, sc, oc)
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
    flags = fast_flags(program, active)
    per_column = program.sparse if K == 1 else tuple(np.repeat(a, K) for a in program.sparse)
    column_active = None if active is None else np.repeat(np.asarray(active, dtype=bool), K)
    chunks = [(r0, r1, as_rows(Xb[r0:r1])) for r0, r1 in _row_chunks(Xb.shape[0])]
    for s0 in range(0, pool.n, TILE):
        s1 = min(s0 + TILE, pool.n)
        tile = _tile_layout(pool, s0, s1, program)
        P, PT, psq = pool.X.rows(s0, s1), tile.rows_transposed(pool, s0, s1), pool.sq[s0:s1]
        if tile.sparse:
            nz_s, ptr, coefs = tile.csc(column_active)
        else:
            alphaT = tile.coefficients(pool, s0, s1, transpose=True)
        for r0, r1, Xc in chunks:
            dots = _dots_out(r1 - r0, s1 - s0)
            csr_dots(Xc, PT, dots)
            if tile.sparse:
                _accumulate_sparse(Xc, xsq[r0:r1], P, psq, dots, ptr, nz_s, coefs, *per_column, xscale[r0:r1],
                                   out[r0:r1])
            else:
                _accumulate_dot_gauss(Xc, xsq[r0:r1], P, psq, alphaT, dots, *flags, K, xscale[r0:r1], out[r0:r1])
    return out


def _row_chunks(n: int):
    """Ranges of at most ``ROW_CHUNK`` rows covering ``n``."""
    bounds = list(range(0, n, ROW_CHUNK)) + [n]
    return list(zip(bounds[:-1], bounds[1:]))
