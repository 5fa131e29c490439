"""omkl-dist: online multiple kernel learning, in-process and on Dask.

Every public estimator is importable from here (``from omkl_dist import OMKC, SPA``), loaded on
first use so that ``omkl_dist.storage`` alone stays light.
"""

from ._numba_cache import use_versioned_cache

use_versioned_cache()  # before any njit kernel is defined (see _numba_cache)

_ESTIMATORS = {
    "OMKC": "algorithms",
    "OM2": "algorithms",
    "KernelPerceptron": "algorithms",
    "PerceptronU": "algorithms",
    "PerceptronStar": "algorithms",
    "SPA": "algorithms",
    "RBP": "algorithms",
    "Forgetron": "algorithms",
    "BOGD": "algorithms",
    "BPAS": "algorithms",
    "MKBoost": "algorithms.mkboost",
    "SimpleMKL": "algorithms.mkl",
    "LpMKL": "algorithms.mkl",
    "MKLSILP": "algorithms.mkl",
    "MKLLevel": "algorithms.mkl",
    "OKS": "algorithms",
    "OKSRegressor": "algorithms",
}
__all__ = sorted(_ESTIMATORS)


def __getattr__(name):
    if name in _ESTIMATORS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_ESTIMATORS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
