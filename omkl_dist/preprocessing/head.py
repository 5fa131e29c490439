"""The scaler a job fits on its stream's head, and the settings decided on the same rows.

Both runners call :func:`fit_head` -- in this process on the rows it read
(:func:`omkl_dist.storage.job_data.load_job_data`), on a cluster in a worker's task
(:func:`omkl_dist.distributed.runner.fit_head_task`) -- so the default's 0/1 rule
(:meth:`omkl_dist.defaults.Settings.for_zero_one_head`) and the rule for sparse rows
(:meth:`~omkl_dist.defaults.Settings.for_sparse_rows`) decide the same wherever a job runs, and a
resume takes what the job recorded. The head is read once: the rule is checked on the rows the
scaler is folded over, and sparse rows are never densified (their stored values are checked; the
implicit zeros are 0).

>>> import numpy as np
>>> from omkl_dist.defaults import resolve_settings
>>> settings, scaler = fit_head(resolve_settings(), np.array([[0.0, 1.0], [1.0, 1.0]]), 10_000)
>>> settings.origin, scaler.method
('defaults-zero-one', 'none')
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from omkl_dist.defaults import Settings

from .scaler import Scaler


def all_zero_one(X) -> bool:
    """Whether every value of ``X`` (an array, or a sparse matrix: its stored values) is 0 or 1."""
    values = X.data if sp.issparse(X) else np.asarray(X)
    return bool(np.all((values == 0) | (values == 1)))


def fit_head(settings: Settings, head, n_rows: int, *, sparse: bool | None = None) -> tuple[Settings, Scaler]:
    """``settings`` as decided on a stream's head -- the 0/1 rule for the defaults, the rule for
    sparse rows -- and the scaler they fit on it.

    Parameters
    ----------
    settings : Settings
        The job's (fixed: an automatic setting is raced first, :mod:`omkl_dist.race`).
    head : array, sparse matrix or iterable of blocks
        The stream's rows in memory or its blocks (``X`` or ``(X, y)``); either way its first
        ``n_rows`` rows are folded in fixed pieces (:meth:`Scaler.fit_prefix`): the same scaler,
        frozen, for any block size and for a file read into memory as for its ingested copy read
        on a cluster.
    n_rows : int
        The rows the scaler is fitted on (``settings.scale_rows``, or the stream's length if shorter).
    sparse : bool, optional
        Whether the blocks are sparse (a matrix ``head`` says so itself).

    Returns
    -------
    (Settings, Scaler)
    """
    in_memory = sp.issparse(head) or isinstance(head, np.ndarray)
    sparse = sp.issparse(head) if in_memory else bool(sparse)
    if in_memory:
        X = head[:n_rows]
        zero_one = settings.checks_head and all_zero_one(X)
        decided = _decided(settings, zero_one, sparse)
        # (``fit`` at once rounded the statistics of a head over 4,096 rows otherwise than the pieces
        # a cluster's worker folds: `omkl run` on a file and `omkl submit` differed in the last bits;
        # an empty head gets ``fit``'s error, which says so)
        scaler = Scaler(decided.scaling)
        return decided, scaler.fit_prefix((X,), X.shape[0]) if X.shape[0] else scaler.fit(X)
    if not settings.checks_head:
        decided = _decided(settings, False, sparse)
        return decided, Scaler(decided.scaling).fit_prefix(head, n_rows)
    # one pass over the head: the scaler the defaults would fit (none for sparse rows) folds in the
    # rows while they are checked, and an unscaled one is fitted beside it in case the rule fires
    watch = _ZeroOneWatch(head, n_rows)
    scaler = Scaler(settings.for_sparse_rows().scaling if sparse else settings.scaling).fit_prefix(watch, n_rows)
    decided = _decided(settings, watch.zero_one, sparse)
    return decided, scaler if decided.scaling == scaler.method else watch.unscaled.freeze()


def _decided(settings: Settings, zero_one: bool, sparse: bool) -> Settings:
    decided = settings.for_zero_one_head() if zero_one else settings
    return decided.for_sparse_rows() if sparse else decided


class _ZeroOneWatch:
    """The first ``n_rows`` rows of a stream of blocks, bare ``X`` blocks cut to them, noting
    whether every value is 0 or 1 (``zero_one``) and fitting an unscaled :class:`Scaler` on them
    (``unscaled``) as they go by."""

    def __init__(self, blocks, n_rows: int):
        self.blocks, self.n_rows = blocks, n_rows
        self.zero_one, self.unscaled = True, Scaler("none")

    def __iter__(self):
        left = self.n_rows
        for block in self.blocks:
            if left <= 0:
                return
            X = block[0] if isinstance(block, (tuple, list)) and len(block) == 2 else block
            X = X[:left]
            left -= X.shape[0]
            self.zero_one = self.zero_one and all_zero_one(X)
            if X.shape[0]:
                self.unscaled.partial_fit(X)
            yield X
