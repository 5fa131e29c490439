"""The small typed records the compiled recurrences take in place of long argument lists.

Each is a :class:`typing.NamedTuple` (numba passes it to an njit function as one argument and
reads its fields like local variables), built once per call in Python. Arrays in a record are
mutated in place where the loop says so; scalars are read only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class HedgeState(NamedTuple):
    """A combiner's weight state: log-weights (SPA), weights, their block-start snapshot
    (block-sync mode) and each kernel's mistake count. Mutated by the recurrences."""

    logw: np.ndarray
    w: np.ndarray
    wsync: np.ndarray
    kmistakes: np.ndarray


class OMKCParams(NamedTuple):
    """The OMKC family's rule (:mod:`omkl_dist.combiners.codes`) and scalars over one segment starting at
    global instance ``t0``; ``pa``: PA-I components of aggressiveness ``pa_c`` instead of Perceptrons."""

    rule: int
    t0: int
    block_size: int
    block_sync: bool
    beta: float
    delta: float
    pa: bool
    pa_c: float


class SPAParams(NamedTuple):
    """SPA's scalars over one segment starting at global instance ``t0`` (see :class:`~._recurrence.SPASegment`)."""

    t0: int
    block_size: int
    block_sync: bool
    log_gamma: float
    delta: float
    alpha: float
    beta: float
    eta: float
    hedge_mistake: bool


class SPARows(NamedTuple):
    """A segment's rows as SPA's recurrence reads them: labels, the in-block kernel values ``G`` (unless
    computed lazily), the rows (dense or :class:`~omkl_dist.scoring.rows.CSRRows`) and their transpose,
    squared norms, self kernel values ``kxx`` (m, n), uniforms ``U`` (n, m, 2) and the learning kernels'
    mask ``on``."""

    y: np.ndarray
    G: np.ndarray
    Xb: Any
    XbT: Any
    xsq: np.ndarray
    kxx: np.ndarray
    U: np.ndarray
    on: np.ndarray


class SPAOutputs(NamedTuple):
    """What SPA's recurrence writes over a segment: the segment's own terms of each score ``Fk``, a new
    support vector's kernel values ``col`` (lazy), per-kernel scores ``F``, combined ``score``,
    ``mistakes`` and ``coef``."""

    Fk: np.ndarray
    col: np.ndarray
    F: np.ndarray
    score: np.ndarray
    mistakes: np.ndarray
    coef: np.ndarray


class BudgetRows(NamedTuple):
    """A chunk of a budget engine's rows, cut into segments (rows ``bounds[i]:bounds[i + 1]``, each inside
    one global block): labels, rows, squared norms, each row's dots with the rows of its segment ``XXt``
    (n, MAX_SEGMENT: row t of segment i, columns ``0:bounds[i + 1] − bounds[i]``), the squared distances
    ``SQ`` in the same layout (upper triangle of each segment, filled when a kernel is gaussian; see
    :func:`~..learners._budget.row_sqdists`), uniforms ``U`` (n, m),
    the global index ``g`` of the first row, and per segment whether every row seen up to its end (so
    every buffer row) holds integers only (``integral``: finite values, see
    :func:`~..learners._budget.own_dots`); ``selected`` (n, m): whether kernel k's learner takes its
    step on row t (always, for the deterministic update; drawn, for the stochastic one). ``cols``,
    ``vals``, ``counts``: each row's non-zero features (:func:`~..learners._budget.row_nonzeros`),
    found once for every kernel's dots when a segment is integral ((0, 0) and (0,) arrays if none is)."""

    y: np.ndarray
    Xb: np.ndarray
    xsq: np.ndarray
    XXt: np.ndarray
    SQ: np.ndarray
    U: np.ndarray
    g: int
    bounds: np.ndarray
    integral: np.ndarray
    selected: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    counts: np.ndarray


class BudgetKernels(NamedTuple):
    """The kernels of a budget engine, each evaluated on its own: kind codes, parameters, normalised flags."""

    kinds: np.ndarray
    param: np.ndarray
    norm: np.ndarray


class BudgetBuffers(NamedTuple):
    """The budget engine's per-kernel buffers and counters (see
    :meth:`~omkl_dist.engine.budget.BudgetEngine.buffers`), mutated by the block loop."""

    sv_X: np.ndarray
    sv_sq: np.ndarray
    coef: np.ndarray
    sv_index: np.ndarray
    sv_kxx: np.ndarray
    acc: np.ndarray
    acc_lo: np.ndarray
    scale: np.ndarray
    used: np.ndarray
    head: np.ndarray
    Q: np.ndarray
    M: np.ndarray
    kmistakes: np.ndarray
    kinv: np.ndarray
