"""The OMKC family's combiner, replayed from per-kernel outcomes (docs/design.md, "A cluster run").

In the distributed engine's kernel-split rounds each shard runs
:func:`omkl_dist.engine._recurrence.omkc_block`
for its own kernels and returns their decision values ``F`` and which kernels updated (Hedge
discounts those that also erred: every updated Perceptron, the PA-I learners on a mistake). The
coordinator then replays the weights over the same rows with this function, which performs the
combiner's floating-point operations in exactly the order the in-process recurrence does, so the
weights, combined scores and mistakes are the in-process ones bit for bit. Valid whenever a
kernel's update does not depend on the other kernels within a block: deterministic updates (the
rules with stochastic updates have row-split rounds instead, see :mod:`.row_split`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...combiners.codes import discounts_weights
from ...combiners.dispatch import combined_score
from ...combiners.hedge import hedge_update
from ...learners.perceptron import perceptron_mistake


@njit(cache=True, nogil=True)
def omkc_combine(y, F, updated, U, state, params):
    """Hedge over rows whose per-kernel scores ``F`` and update flags are known; returns
    ``(score, mistakes)`` and mutates the weight state (:class:`~omkl_dist.engine.records.HedgeState`) as
    :func:`~omkl_dist.engine._recurrence.omkc_block` does under the same
    :class:`~omkl_dist.engine.records.OMKCParams`."""
    rule, t0, block_size, block_sync, beta, delta, _, _ = params
    w, wsync, kmistakes = state.w, state.wsync, state.kmistakes
    n, m = F.shape
    score = np.empty(n)
    mistakes = np.zeros(n, dtype=np.bool_)
    f = np.empty(m)
    z = np.zeros(m, dtype=np.bool_)
    penalise = np.zeros(m, dtype=np.bool_)
    for t in range(n):
        if (t0 + t) % block_size == 0:
            wsync[:] = w
        yt = y[t]
        for k in range(m):
            f[k] = F[t, k]
            z[k] = perceptron_mistake(yt, f[k])
        s_t = combined_score(rule, yt, f, z, w, U[t], wsync if block_sync else w, delta, kmistakes, penalise)
        score[t] = s_t
        mistakes[t] = yt * s_t <= 0.0
        for k in range(m):
            if z[k]:
                kmistakes[k] += 1
            penalise[k] = z[k] and updated[t, k]  # a kernel that erred and learnt (Perceptron or PA-I)
        if discounts_weights(rule):
            hedge_update(w, penalise, beta)
    return score, mistakes
