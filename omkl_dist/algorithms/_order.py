"""The order in which ``fit`` learns its rows.

An online learner's model depends on the order of its rows. ``partial_fit`` takes a stream, whose
order is part of the data (a job's data window sets it: seeded, or as stored), and learns the rows
as given. ``fit`` takes a training set, whose order means nothing (``load_iris`` is sorted by
class, and a learner that sees one class after the other ends up knowing the last one): by default
it learns the rows in a random order seeded by ``random_state``, a fresh one per pass, as
scikit-learn's ``SGDClassifier`` and ``Perceptron`` do; ``shuffle=False`` keeps the given order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from .._validation import Satisfies

if TYPE_CHECKING:
    from numpy.typing import NDArray

# ``fit``'s passes over a training set by default (``n_epochs``; ``partial_fit`` makes one): see
# benchmarks/online_defaults.py and BENCHMARKS.md "Defaults of fit"
N_EPOCHS = 5

# ``shuffle``'s constraint (every online estimator declares it in its ``_parameter_constraints``)
SHUFFLE = [Satisfies(lambda value: bool(value) if isinstance(value, (bool, np.bool_)) else None, "True or False")]


def fit_orders(n_rows: int, *, shuffle: bool, seed: int) -> Iterator[NDArray[np.intp] | None]:
    """The row order of each of ``fit``'s passes, one per ``next``: a permutation of ``n_rows``
    drawn from ``numpy.random.default_rng(seed)`` (a new one per pass), or None (the rows as given)
    when not ``shuffle``."""
    rng = np.random.default_rng(seed) if shuffle else None
    while True:
        yield None if rng is None else rng.permutation(n_rows)
