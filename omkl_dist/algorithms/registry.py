"""Algorithm names used by the command line and the reproduction jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._validation import did_you_mean
from .baselines.bogd import BOGD
from .baselines.bpas import BPAS
from .baselines.forgetron import Forgetron
from .baselines.perceptron import KernelPerceptron, PerceptronStar, PerceptronU
from .baselines.projectron import Projectron, ProjectronPP
from .baselines.rbp import RBP
from .fogd import FOGD
from .mkboost import MKBoost
from .mkl import MKLSILP, LpMKL, MKLLevel, SimpleMKL, TunedSVC
from .nogd import NOGD
from .oks import OKS
from .om2 import OM2
from .omkc import OMKC
from .omkc_pa import OMKCPA
from .spa import SPA

if TYPE_CHECKING:
    from .base import OnlineKernelClassifier

ALGORITHMS: dict[str, type[OnlineKernelClassifier]] = {
    "omkc": OMKC,
    "omkc-pa": OMKCPA,
    "om2": OM2,
    "perceptron": KernelPerceptron,
    "perceptron-u": PerceptronU,
    "perceptron-star": PerceptronStar,
    "spa": SPA,
    "rbp": RBP,
    "forgetron": Forgetron,
    "bogd": BOGD,
    "bpas": BPAS,
    "projectron": Projectron,
    "projectron++": ProjectronPP,
    "oks": OKS,
    "fogd": FOGD,
    "nogd": NOGD,
}

# batch classifiers a retrain refits on each window (``omkl retrain``; ``omkl fit`` evaluates them on a split)
BATCH_ALGORITHMS = {
    "mkboost": MKBoost,
    "simplemkl": SimpleMKL,
    "silp": MKLSILP,
    "level": MKLLevel,
    "lpmkl": LpMKL,
    "svc": TunedSVC,
}


def make_estimator(algo: str, **params: Any) -> OnlineKernelClassifier:
    """Instantiate ``algo`` with the given parameters; ``None`` values mean "use the default"."""
    try:
        cls = ALGORITHMS[algo]
    except KeyError:
        hint = did_you_mean(algo, ALGORITHMS, quote=False)
        hint = f" ({hint})" if hint else ""
        raise ValueError(f"unknown algorithm {algo!r}{hint}; choose one of {sorted(ALGORITHMS)}") from None
    accepted = cls().get_params()
    given = {k: v for k, v in params.items() if v is not None}
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise ValueError(f"parameter(s) {unknown} do not apply to {algo}; it takes {sorted(accepted)}")
    return cls(**given)
