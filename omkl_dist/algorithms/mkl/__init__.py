"""Batch multiple kernel learning baselines of the MKBoost paper's comparison (Table 2).

* :class:`SimpleMKL` -- ℓ1 MKL by reduced-gradient descent (the paper's "MKL-SD");
* :class:`MKLSILP` -- ℓ1 MKL as a semi-infinite LP by column generation (the paper's "MKL-SILP");
* :class:`MKLLevel` -- ℓ1 MKL by the extended level method (the paper's "MKL-Level");
* :class:`LpMKL` -- ℓp-norm MKL with Kloft et al.'s closed-form weight update (the paper's Lp-MKL, p = 2);
* :class:`TunedSVC` -- the baseline they must beat: one gaussian SVM, C and width by cross-validation.

SimpleMKL, MKL-SILP and MKL-Level solve the same problem (they reach the same optimum: tested); the
LPs go to scipy's HiGHS (``linprog``), the level projection to SLSQP. The estimators take
precomputed Gram matrices of a kernel pool (default ``"mkboost17"``), solve the inner SVM with
scikit-learn's ``SVC(kernel="precomputed")`` and handle several classes one-vs-one. By default the kernels
under which the training rows have fewer effective neighbours each than a floor are dropped (the floor
chosen among 1, n/16 and n/4 with C: ℓ1-MKL favours the narrowest kernel it is given and cannot choose a
width itself), each remaining kernel is scaled to unit mean diagonal and C is chosen from :data:`C_GRID`,
both by 3-fold cross-validation on the training rows; the MKBoost paper's protocol (C = 50, unit trace,
every kernel) is what ``omkl reproduce mkboost`` passes.
"""

from ._base import C_GRID, MIN_NEIGHBORS
from .level import MKLLevel
from .lpmkl import LpMKL
from .silp import MKLSILP
from .simplemkl import SimpleMKL
from .svc import TunedSVC

__all__ = ["SimpleMKL", "MKLSILP", "MKLLevel", "LpMKL", "TunedSVC", "C_GRID", "MIN_NEIGHBORS"]
