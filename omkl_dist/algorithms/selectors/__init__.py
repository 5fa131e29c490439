"""The kernel selectors the OKS paper (Yang et al. 2012) compares, each an estimator:
:class:`OKSSVM` and :class:`SOMSVM` (an online selector, then an SVM), :class:`MuSVM` (an SVM per
kernel, the best on validation; Dask tasks with a client), :class:`AlSVM` (kernel–target
alignment, then an SVM), :class:`MuTron` (a Perceptron per kernel, the best on validation),
:class:`OM1` and :class:`SOM` (OMKC (D,D) and (S,S) with β tuned on validation). OKS itself is
:class:`omkl_dist.algorithms.OKS`, OM-2 :class:`omkl_dist.algorithms.OM2` and SIPMKL the
SimpleMKL of :mod:`omkl_dist.algorithms.mkl`."""

from .alsvm import AlSVM
from .musvm import MuSVM
from .mutron import MuTron
from .then_svm import OKSSVM, SOMSVM
from .tuned import OM1, SOM

__all__ = ["OKSSVM", "SOMSVM", "MuSVM", "AlSVM", "MuTron", "OM1", "SOM"]
