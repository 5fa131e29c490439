"""Compiled loops of Online Kernel Selection (Yang, Mahdavi, Jin, Yi & Hoi, AAAI 2012).

OKS samples **one** kernel per instance, i_t ~ p_t = (1 − δ) q_t + δ/m with q_t the normalised
weights, evaluates and updates only that kernel's predictor, and discounts only its weight:

* Algorithm 1 (any convex loss ℓ): w_i ← w_i exp(−η ℓ(f_i(x_t), y_t) / p_i) and
  f_i ← f_i − λ ∇ℓ(f_i(x_t), y_t) κ_i(x_t, ·) / p_i;
* Algorithm 2 (classification): z = I(y_t f_i(x_t) ≤ 0); w_i ← w_i exp(−η z / p_i) and
  f_i ← f_i + λ y_t z κ_i(x_t, ·) / p_i.

The weights are kept as logarithms: a rarely sampled kernel has p_i ≈ δ/m, and exp(−η/p_i) over
many rounds underflows in linear space. Multi-class models (K classes, one coefficient per class)
take the rival r = the highest-scoring other class: Algorithm 2's mistake is f_y ≤ f_r and its
update +λ/p on y, −λ/p on r; Algorithm 1's hinge loss is max(0, 1 − f_y + f_r) with the same step,
its logistic loss is the softmax cross-entropy (every class moves).

Each kernel keeps its own support vectors (rows of the shared store ``P``, listed per kernel in
``kidx``) and sees only its view's columns (``cols[col_ptr[k]:col_ptr[k+1]]``). A kernel's score is
one running sum over its support vectors in the order they were added, whichever path computes it,
so the block-speculative scoring (:func:`speculate`) gives the naive sequential result bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..scoring._pairs import view_value
from ..scoring.row_threads import over_rows

# algorithms and losses
MISTAKE, GENERAL = 0, 1
HINGE, LOGISTIC, SQUARED = 0, 1, 2
LOSS_CODES = {"hinge": HINGE, "logistic": LOGISTIC, "squared": SQUARED}


@njit(cache=True, nogil=True, inline="always")
def row_factor(k, x, views):
    """κ_k(x, x)^(-1/2) for a normalised kernel k (0 for a zero self-value), else 1. A normalised
    kernel's value is κ_k(x, z)·factor(x)·factor(z); a support vector's factor is folded into its
    coefficients when it is stored (:func:`oks_block`)."""
    kinds, param, norm, cols, col_ptr = views
    if not norm[k]:
        return 1.0
    self_value = view_value(kinds[k], param[k], x, x, cols, col_ptr[k], col_ptr[k + 1])
    return 1.0 / math.sqrt(self_value) if self_value > 0.0 else 0.0


@njit(cache=True, nogil=True)
def add_scores(k, x, lo, hi, views, store, acc):
    """``acc[c] += Σ coef[r, c] κ_k(x, P[r])`` over kernel k's support vectors ``lo..hi-1``
    (:class:`~.records.KernelViews`, :class:`~.records.Expansions`)."""
    kinds, param, norm, cols, col_ptr = views
    P, coef, kidx = store.P, store.coef, store.kidx
    K = acc.shape[0]
    rx = row_factor(k, x, views)
    for j in range(lo, hi):
        r = kidx[k, j]
        v = view_value(kinds[k], param[k], x, P[r], cols, col_ptr[k], col_ptr[k + 1]) * rx
        for c in range(K):
            acc[c] += coef[r, c] * v


@njit(cache=True, nogil=True, inline="always")
def _sample(logw, delta, u, p):
    """Fill ``p`` with (1 − δ) q + δ/m and return the kernel index the uniform ``u`` draws."""
    m = logw.shape[0]
    top = logw.max()
    total = 0.0
    for j in range(m):
        p[j] = math.exp(logw[j] - top)
        total += p[j]
    for j in range(m):
        p[j] = (1.0 - delta) * (p[j] / total) + delta / m
    cum = 0.0
    for j in range(m):
        cum += p[j]
        if u < cum:
            return j
    return m - 1  # u within rounding of 1


ROWS_PER_PASS = 32  # rows scored together against one kernel: each support vector is read once for all of them


@njit(cache=True, nogil=True)
def _add_scores_rows(k, X, rows, lo, hi, views, store, out):
    """:func:`add_scores` for several rows at once (``out[i] += ...`` for i in ``rows``): each
    support vector is loaded once for all of them; every row's sum runs in the same order as alone."""
    kinds, param, norm, cols, col_ptr = views
    P, coef, kidx = store.P, store.coef, store.kidx
    K = out.shape[1]
    rx = np.empty(X.shape[0])
    for i in rows:
        rx[i] = row_factor(k, X[i], views)
    for j in range(lo, hi):
        r = kidx[k, j]
        z = P[r]
        for i in rows:
            v = view_value(kinds[k], param[k], X[i], z, cols, col_ptr[k], col_ptr[k + 1]) * rx[i]
            for c in range(K):
                out[i, c] += coef[r, c] * v


@njit(cache=True, nogil=True)
def _passes(kernel_of_row):
    """Rows grouped by kernel, in passes of at most ``ROWS_PER_PASS`` rows of one kernel:
    (rows in pass order, start of each pass). The rows are grouped by a counting sort, stable like
    ``argsort(kind="mergesort")`` and linear; numba's mergesort alone took ~13 s to compile."""
    n = kernel_of_row.shape[0]
    # first[k]: the place in ``order`` of kernel k's next row (first the count of rows of kernels < k)
    first = np.zeros(kernel_of_row.max() + 2 if n else 1, dtype=np.int64)
    for i in range(n):
        first[kernel_of_row[i] + 1] += 1
    for k in range(1, first.shape[0]):
        first[k] += first[k - 1]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[first[kernel_of_row[i]]] = i
        first[kernel_of_row[i]] += 1
    starts = [0]
    for i in range(1, order.shape[0]):
        if kernel_of_row[order[i]] != kernel_of_row[order[i - 1]] or i - starts[-1] == ROWS_PER_PASS:
            starts.append(i)
    starts.append(order.shape[0])
    return order, np.array(starts)


def _score_passes(X, kernel_of_row, views, store, out):
    """``out[t] = f_k(X[t])`` (K class columns) for each row's kernel ``kernel_of_row[t]``, over every
    support vector the kernel has; passes of rows of one kernel on threads (:func:`over_rows`: a
    serial loop compiles in a fraction of a parallel one's time, the same bits)."""
    order, starts = _passes(kernel_of_row)
    over_rows(_score_pass_range, len(starts) - 1, X, kernel_of_row, order, starts, views, store, out)


@njit(cache=True, nogil=True)
def _score_pass_range(lo, hi, X, kernel_of_row, order, starts, views, store, out):
    """Passes ``[lo, hi)`` of :func:`_score_passes`."""
    for q in range(lo, hi):
        rows = order[starts[q] : starts[q + 1]]
        k = kernel_of_row[rows[0]]
        for i in rows:
            out[i, :] = 0.0
        _add_scores_rows(k, X, rows, 0, store.nk[k], views, store, out)


@njit(cache=True, nogil=True)
def _guesses(U, logw, delta, guess):
    p = np.empty(logw.shape[0])
    for t in range(U.shape[0]):
        guess[t] = _sample(logw, delta, U[t], p)


def speculate(X, U, logw, delta, views, store, guess, pre):
    """For every row of a block: the kernel its uniform draws under the block's first weights
    (``guess``) and that kernel's score over its support vectors from before the block (``pre``).

    The recurrence uses ``pre[t]`` when the weights it reaches still draw ``guess[t]``; the draw
    moves only when earlier updates of the block moved a boundary of the sampling distribution
    past ``U[t]`` (then the score is computed there, by the same sums: the same bits)."""
    _guesses(U, logw, delta, guess)
    if len(guess):
        _score_passes(X, guess, views, store, pre)


@njit(cache=True, nogil=True)
def _loss_step(algo, loss, f, y, K, step):
    """The loss of score ``f`` on label ``y``, the mistake flag, and the coefficients ``step`` of
    the new support vector before the factor λ/p (all zero: no update). Binary models (K = 1)
    code y as ±1, multi-class ones as the class index; squared loss takes a real y."""
    step[:] = 0.0
    if K == 1:
        fy = f[0]
        if loss == SQUARED and algo == GENERAL:
            diff = fy - y
            step[0] = -diff
            return 0.5 * diff * diff, False
        margin = y * fy
        wrong = margin <= 0.0
        if algo == MISTAKE:
            if wrong:
                step[0] = y
            return 1.0 if wrong else 0.0, wrong
        if loss == HINGE:
            if margin < 1.0:
                step[0] = y
            return max(0.0, 1.0 - margin), wrong
        # logistic: log(1 + e^{−margin}), gradient −y / (1 + e^{margin})
        if margin > 0.0:
            e = math.exp(-margin)
            step[0] = y * e / (1.0 + e)
            return math.log1p(e), wrong
        e = math.exp(margin)
        step[0] = y / (1.0 + e)
        return -margin + math.log1p(e), wrong
    yi = int(y)
    r = -1
    for c in range(K):
        if c != yi and (r < 0 or f[c] > f[r]):
            r = c
    wrong = f[yi] <= f[r]
    if algo == MISTAKE:
        if wrong:
            step[yi] = 1.0
            step[r] = -1.0
        return 1.0 if wrong else 0.0, wrong
    if loss == HINGE:
        value = 1.0 - f[yi] + f[r]
        if value > 0.0:
            step[yi] = 1.0
            step[r] = -1.0
            return value, wrong
        return 0.0, wrong
    # logistic: softmax cross-entropy, −∇ = onehot(y) − softmax(f)
    top = f.max()
    total = 0.0
    for c in range(K):
        total += math.exp(f[c] - top)
    for c in range(K):
        step[c] = (1.0 if c == yi else 0.0) - math.exp(f[c] - top) / total
    return top + math.log(total) - f[yi], wrong


@njit(cache=True, nogil=True)
def oks_block(rows, logw, params, views, store, n_rows, trace):
    """Run OKS over one block in order (:class:`~.records.OKSRows`, :class:`~.records.OKSParams`,
    :class:`~.records.KernelViews`, :class:`~.records.Expansions`); returns the number of rows in
    ``P`` after it.

    ``P``/``coef``/``kidx`` must have room for one more support vector per row of the block.
    Per row it records (:class:`~.records.OKSTrace`) the kernel drawn (``picked``), whether that
    kernel erred (``wrong``), its loss, its scores before the update and whether the row became a
    support vector (``support``)."""
    X, y, U, guess, pre = rows
    delta, eta, lam, algo, loss = params
    P, coef, kidx, nk = store
    picked, wrong, losses, scores, support, kernel_mistakes, kernel_updates = trace
    m = logw.shape[0]
    K = coef.shape[1]
    p = np.empty(m)
    f = np.empty(K)
    step = np.empty(K)
    start = nk.copy()  # each kernel's support vectors from before the block
    for t in range(X.shape[0]):
        i = _sample(logw, delta, U[t], p)
        if i == guess[t]:
            for c in range(K):  # (loops, not slice assignments: those compile numba's shape-error text)
                f[c] = pre[t, c]
        else:
            f[:] = 0.0
            add_scores(i, X[t], np.int64(0), start[i], views, store, f)  # a literal 0 compiles it twice
        add_scores(i, X[t], start[i], nk[i], views, store, f)
        value, err = _loss_step(algo, loss, f, y[t], K, step)
        picked[t] = i
        wrong[t] = err
        losses[t] = value
        for c in range(K):
            scores[t, c] = f[c]
        if err:
            kernel_mistakes[i] += 1
        logw[i] -= eta * value / p[i]
        support[t] = np.any(step != 0.0)
        if support[t]:
            scale = lam / p[i] * row_factor(i, X[t], views)
            for col in range(X.shape[1]):
                P[n_rows, col] = X[t, col]
            for c in range(K):
                coef[n_rows, c] = scale * step[c]
            kidx[i, nk[i]] = n_rows
            nk[i] += 1
            kernel_updates[i] += 1
            n_rows += 1
    return n_rows


def kernel_block_scores(X, k, views, store, out):
    """``out[t] = f_k(X[t])`` for every row (K class columns), parallel over passes of rows."""
    if len(X):
        _score_passes(X, np.full(len(X), k, dtype=np.int64), views, store, out)
