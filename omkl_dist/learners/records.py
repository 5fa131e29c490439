"""The typed records the budget learners' compiled steps take (one argument each in numba).

Built once per call of the block loop (:mod:`omkl_dist.engine._budget_loops`), not per instance.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class BudgetParams(NamedTuple):
    """A budget learner's hyper-parameters: its code (:data:`~._budget.LEARNER_CODES`), the budget B,
    the step / aggressiveness η, BOGD's regularisation λ and the number of classes K (1: binary)."""

    learner: int
    budget: int
    eta: float
    lam: float
    n_classes: int


class Slots(NamedTuple):
    """One kernel's slots inside a block (see :mod:`._budget`): their unscaled coefficients (K per slot)
    and which block row each slot holds (-1: a buffer row)."""

    coef: np.ndarray
    entry: np.ndarray


class BlockValues(NamedTuple):
    """The kernel values a step reads, per slot: κ(x_t, slot j) for the current row t (``V``) and the
    slot's self value κ(x_j, x_j) (``kxx``)."""

    V: np.ndarray
    kxx: np.ndarray


class SegmentScratch(NamedTuple):
    """One kernel's work arrays for the segments of a chunk (:mod:`omkl_dist.engine._budget_loops`),
    allocated once per chunk, not per segment (a dozen allocations per segment and kernel: ~30,000
    sets per BPAS pass over cod-rna): sized for the chunk's longest segment S, the budget B, d features
    and K classes."""

    V: np.ndarray  # (B) a row's kernel values per slot
    work: np.ndarray  # (max(S B, S (S - 1) / 2, S)) the kernel values' scratch, twice
    scratch: np.ndarray
    values: np.ndarray  # (S B) the rows' kernel values with the buffer of the segment start
    dots: np.ndarray  # (S B) their dot products
    BT: np.ndarray  # (d, B) the buffer's rows transposed
    G: np.ndarray  # (S (S - 1) / 2) the segment's own Gram values
    entry: np.ndarray  # (B) int64: the block row each slot holds
    block_slots: np.ndarray  # (B) int64: the slots holding a block row
    listed: np.ndarray  # (B) bool: a slot in block_slots
    deg: np.ndarray  # (B) BPAS's degradations, the Projectron's projection
    parts: np.ndarray  # (MSUM_SIZE) an exact sum's partials
    fc: np.ndarray  # (K) one row's class scores
    row: np.ndarray  # (K) BPAS's scratch


class Accumulators(NamedTuple):
    """The Forgetron's double-double accumulators of f' at each slot's support vector (``acc + acc_lo``),
    unscaled."""

    acc: np.ndarray
    acc_lo: np.ndarray


class KernelViews(NamedTuple):
    """OKS's kernels: kind codes, parameters, normalised flags, and each kernel's view of the columns
    (``cols[col_ptr[k]:col_ptr[k + 1]]``; an empty range: every column)."""

    kinds: np.ndarray
    param: np.ndarray
    norm: np.ndarray
    cols: np.ndarray
    col_ptr: np.ndarray


class Expansions(NamedTuple):
    """OKS's support vectors: the shared row store ``P``, their coefficients (one column per class),
    kernel k's rows ``kidx[k, :nk[k]]`` in the order they were added."""

    P: np.ndarray
    coef: np.ndarray
    kidx: np.ndarray
    nk: np.ndarray


class OKSParams(NamedTuple):
    """OKS's scalars: exploration δ, weight step η, predictor step λ, algorithm and loss codes."""

    delta: float
    eta: float
    lam: float
    algo: int
    loss: int


class OKSRows(NamedTuple):
    """A block's rows, labels, uniforms, and the speculative pass's draws and scores (:func:`~.oks.speculate`)."""

    X: np.ndarray
    y: np.ndarray
    U: np.ndarray
    guess: np.ndarray
    pre: np.ndarray


class OKSTrace(NamedTuple):
    """What OKS records per row of a block (the kernel drawn, its mistake, loss, scores, whether the row
    became a support vector) and per kernel (mistakes, updates; accumulated)."""

    picked: np.ndarray
    wrong: np.ndarray
    losses: np.ndarray
    scores: np.ndarray
    support: np.ndarray
    kernel_mistakes: np.ndarray
    kernel_updates: np.ndarray
