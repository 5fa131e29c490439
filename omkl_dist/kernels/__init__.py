"""Kernel layer: kernel specs, pools of kernels, and their shared-work block evaluators.

Only numpy and numba are imported here, so learners and Dask workers can use it cheaply.

Examples
--------
>>> import numpy as np
>>> from omkl_dist.kernels import make_pool
>>> pool = make_pool("omkc16")
>>> X = np.random.default_rng(0).uniform(-1, 1, size=(5, 3))
>>> pool.evaluate(X).shape          # (kernels, rows of A, rows of B)
(16, 5, 5)
>>> pool.evaluate_diag(X).shape
(16, 5)
"""

from omkl_dist.kernels.gram import PairwiseParts
from omkl_dist.kernels.pools import NAMED_POOLS, KernelPool, make_pool
from omkl_dist.kernels.specs import (
    KERNEL_KINDS,
    ChiSquare,
    Gaussian,
    KernelSpec,
    Laplacian,
    Linear,
    Polynomial,
    parse_spec,
)

__all__ = [
    "KernelSpec",
    "Linear",
    "Polynomial",
    "Gaussian",
    "Laplacian",
    "ChiSquare",
    "KERNEL_KINDS",
    "parse_spec",
    "KernelPool",
    "PairwiseParts",
    "NAMED_POOLS",
    "make_pool",
]
