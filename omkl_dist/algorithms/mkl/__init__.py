"""Batch multiple kernel learning baselines of the MKBoost paper's comparison (Table 2).

* :class:`SimpleMKL` -- ℓ1 MKL by reduced-gradient descent (the paper's "MKL-SD");
* :class:`LpMKL` -- ℓp-norm MKL with Kloft et al.'s closed-form weight update (the paper's Lp-MKL, p = 2).

MKL-SILP and MKL-Level are not implemented: the reproduction prints the paper's numbers for them.
Both estimators take precomputed Gram matrices of a kernel pool (default ``"mkboost17"``), solve the
inner SVM with scikit-learn's ``SVC(kernel="precomputed")`` and handle several classes one-vs-one.
"""

from .lpmkl import LpMKL
from .simplemkl import SimpleMKL

__all__ = ["SimpleMKL", "LpMKL"]
