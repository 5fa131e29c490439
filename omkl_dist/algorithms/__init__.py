"""Online multiple-kernel classifiers (one module per paper) and the papers' baselines."""

from .baselines.perceptron import KernelPerceptron, PerceptronStar, PerceptronU
from .omkc import OMKC
from .spa import SPA

__all__ = ["OMKC", "KernelPerceptron", "PerceptronU", "PerceptronStar", "SPA"]
