"""omkl-dist: online multiple kernel learning, in-process and on Dask.

Every public estimator is importable from here (``from omkl_dist import OMKC, SPA``), and the
model artifact (``Model``, ``save_model``, ``load_model``), loaded on first use so that
``omkl_dist.storage`` alone stays light.
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
    "Projectron": "algorithms",
    "ProjectronPP": "algorithms",
    "MKBoost": "algorithms.mkboost",
    "SimpleMKL": "algorithms.mkl",
    "LpMKL": "algorithms.mkl",
    "MKLSILP": "algorithms.mkl",
    "MKLLevel": "algorithms.mkl",
    "TunedSVC": "algorithms.mkl",
    "OKS": "algorithms",
    "OKSRegressor": "algorithms",
    "FOGD": "algorithms",
    "OMKCPA": "algorithms",
    "NOGD": "algorithms",
}
_MODELS = {"Model": "model", "save_model": "persistence", "load_model": "persistence"}
__all__ = sorted([*_ESTIMATORS, *_MODELS])


def __getattr__(name):
    where = _ESTIMATORS.get(name) or _MODELS.get(name)
    if where is not None:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{where}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
