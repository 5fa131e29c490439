"""Online multiple-kernel classifiers (one module per paper) and the papers' baselines."""

from .baselines.bogd import BOGD
from .baselines.bpas import BPAS
from .baselines.forgetron import Forgetron
from .baselines.perceptron import KernelPerceptron, PerceptronStar, PerceptronU
from .baselines.projectron import Projectron, ProjectronPP
from .baselines.rbp import RBP
from .fogd import FOGD
from .nogd import NOGD
from .oks import OKS, OKSRegressor
from .om2 import OM2
from .omkc import OMKC
from .omkc_pa import OMKCPA
from .spa import SPA

__all__ = [
    "OMKC",
    "OMKCPA",
    "OM2",
    "KernelPerceptron",
    "PerceptronU",
    "PerceptronStar",
    "SPA",
    "RBP",
    "Forgetron",
    "BOGD",
    "BPAS",
    "Projectron",
    "ProjectronPP",
    "OKS",
    "OKSRegressor",
    "FOGD",
    "NOGD",
]
