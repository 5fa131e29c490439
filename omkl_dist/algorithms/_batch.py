"""Shared helpers of the batch multiple-kernel classifiers (MKBoost, SimpleMKL, Lp-MKL).

One-vs-one pairs and their vote; a guard against kernels whose Gram values overflow; and evaluation
of many precomputed-kernel SVMs on new rows through one shared set of support vectors. Parameter,
input and label checks are :mod:`omkl_dist._validation`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, TypeAlias, TypeVar

import numpy as np
from scipy import sparse
from sklearn.exceptions import NotFittedError

from .._validation import Satisfies
from ..kernels import KernelPool, make_pool

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray
    from scipy.sparse import csr_matrix

    # Rows as the engines and estimators keep them once checked: dense float64, or CSR for a model on
    # sparse rows (scipy ships no type information: the CSR half is Any to the type checker).
    Rows: TypeAlias = "NDArray[np.float64] | csr_matrix"
    # What ``kernels`` may be: a pool spec string, a list of kernel specs, or a pool (see make_pool).
    KernelSpecLike: TypeAlias = "str | Sequence[Any] | KernelPool"

# Rows of new data evaluated at once against the support vectors: bounds a kernel block to
# about 32 MB whatever the test-set size.
_PREDICT_CELLS = 1 << 22


# ----------------------------------------------------------------------------- inputs
KERNEL_SPEC = Satisfies(make_pool, "a kernel pool spec (e.g. 'omkc16' or 'gaussian:0.5,1;linear')")
"""The parameter constraint of ``kernels``: what :func:`~omkl_dist.kernels.make_pool` reads (its
message names an unknown kernel and its close matches)."""


UNIT_TEST_KERNELS = "gaussian:1;linear"
"""The two-kernel pool of the estimators' ``_unit_test_params`` (small parameters the test suites
build every registered estimator with, as river's estimators declare theirs)."""


class AcceptsSparse:
    """scikit-learn's tag for estimators that take ``scipy.sparse`` X (densified, or kept as CSR rows:
    :func:`~omkl_dist._validation.check_array`)."""

    def __sklearn_tags__(self) -> Any:
        # the estimator's other base (scikit-learn's BaseEstimator, untyped) defines it
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.sparse = True
        return tags


def check_kernel_overflow(owner: str, pool: KernelPool, X: np.ndarray) -> None:
    """Refuse a pool whose Gram values on ``X`` are not finite (raw features, high degrees).

    Every dot-family value is bounded by ``max ‖x‖^(2p)`` (Cauchy-Schwarz) and every squared
    distance by ``4 max ‖x‖²``; gaussian values are ``exp(-c·D²) ∈ [0, 1]`` once D² is finite, so
    these bounds decide finiteness without building a Gram matrix.
    """
    sq_max = np.einsum("ij,ij->i", X, X).max()  # an np.float64: overflow gives inf, not OverflowError
    with np.errstate(over="ignore"):
        if not math.isfinite(4.0 * sq_max):
            raise ValueError(
                f"{owner}: squared row norms of X overflow (max {sq_max!r}); every kernel would give "
                "NaN/inf Gram values -- standardise the features (Scaler('standard'))"
            )
        for spec in pool:
            if spec.family == "dot" and not math.isfinite(sq_max ** int(spec.coef)):
                raise ValueError(
                    f"{owner}: kernel {spec.name} overflows on X (max ‖x‖^{2 * int(spec.coef)} = "
                    "inf); standardise the features or drop that kernel"
                )


def check_gram(owner: str, K: np.ndarray, kernel_name: str) -> None:
    if not np.isfinite(K).all():
        raise ValueError(
            f"{owner}: kernel {kernel_name} gives NaN/inf Gram values on these features; "
            "standardise the features or drop that kernel"
        )


# ----------------------------------------------------------------------------- one-vs-one
def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """Class-index pairs (i, j), i < j, in scikit-learn's ``OneVsOneClassifier`` order."""
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


def pair_problem(codes: np.ndarray, pair: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the pair's two classes and their ±1 labels (+1 = the pair's second class)."""
    rows = np.flatnonzero((codes == pair[0]) | (codes == pair[1]))
    return rows, np.where(codes[rows] == pair[1], 1.0, -1.0)


def ovo_decision(scores: np.ndarray, pairs: Sequence[tuple[int, int]], n_classes: int) -> np.ndarray:
    """Votes plus bounded summed confidences, as scikit-learn's one-vs-one decision function.

    A pair (i, j) votes for j when its score is >= 0, else for i; its score is added to j's and
    subtracted from i's confidence, which is squashed into (-1/3, 1/3) so it only breaks ties.
    """
    votes = np.zeros((scores.shape[0], n_classes))
    conf = np.zeros_like(votes)
    for k, (i, j) in enumerate(pairs):
        positive = scores[:, k] >= 0.0
        votes[:, j] += positive
        votes[:, i] += ~positive
        conf[:, j] += scores[:, k]
        conf[:, i] -= scores[:, k]
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


class OneVsOneVote:
    """``decision_function``/``predict`` of a classifier made of one binary model per class pair;
    the class provides ``_pair_scores(X)`` (n × pairs), ``pairs_`` and ``classes_``."""

    classes_: NDArray[Any]
    pairs_: list[tuple[int, int]]

    if TYPE_CHECKING:  # provided by the class it is mixed into (declared for the type checker only)

        def _pair_scores(self, X: ArrayLike) -> NDArray[np.float64]: ...

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Binary: the pair's score (positive means ``classes_[1]``). Multi-class: (n, n_classes)
        one-vs-one votes plus confidences, as ``OneVsOneClassifier.decision_function``."""
        scores = self._pair_scores(X)
        if len(self.classes_) == 2:
            return scores[:, 0]
        return ovo_decision(scores, self.pairs_, len(self.classes_))

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Class labels (a zero binary score predicts ``classes_[1]``)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores >= 0.0).astype(np.int64)]
        labels: NDArray[Any] = self.classes_[np.argmax(scores, axis=1)]
        return labels


# ----------------------------------------------------------------------------- support vectors
def compact_support(parts: list[tuple[np.ndarray, np.ndarray]], n_train: int) -> tuple[np.ndarray, csr_matrix]:
    """Merge many SVMs' (training row ids, coefficients) into one support-vector set.

    Returns ``(rows, coef)``: the sorted distinct training rows used by any SVM, and a CSR matrix
    ``(n_svm, len(rows))`` whose row s holds SVM s's coefficients; copies of one training row
    (resampling draws rows more than once) have their coefficients summed.
    """
    used = np.zeros(n_train, dtype=bool)
    for ids, _ in parts:
        used[ids] = True
    rows = np.flatnonzero(used)
    position = np.full(n_train, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    indptr = np.zeros(len(parts) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(ids) for ids, _ in parts])
    cols = np.concatenate([position[ids] for ids, _ in parts]) if parts else np.empty(0, np.int64)
    vals = np.concatenate([c for _, c in parts]) if parts else np.empty(0)
    coef = sparse.csr_matrix((vals, cols, indptr), shape=(len(parts), len(rows)))
    coef.sum_duplicates()
    return rows, coef


def kernel_decisions(
    pool: KernelPool,
    X: np.ndarray,
    sv: np.ndarray,
    kernel_of: np.ndarray,
    coef: csr_matrix,
    intercept: np.ndarray,
    owner: str,
) -> np.ndarray:
    """Decision values ``(n, n_svm)`` of SVMs that share the support-vector rows ``sv``.

    SVM s uses kernel ``kernel_of[s]`` and row s of the CSR ``coef`` (over the rows of ``sv``).
    The base products between a chunk of ``X`` and ``sv`` are computed once per chunk; each kernel
    in use is then one elementwise transform and one sparse product.
    """
    out = np.empty((X.shape[0], len(kernel_of)))
    used = np.unique(kernel_of)
    sub = KernelPool([pool[int(k)] for k in used])
    singles = [KernelPool((pool[int(k)],)) for k in used]
    groups = [np.flatnonzero(kernel_of == k) for k in used]
    coefs = [coef[g] for g in groups]
    step = max(1, _PREDICT_CELLS // max(1, len(sv)))
    for start in range(0, X.shape[0], step):
        chunk = X[start : start + step]
        parts = sub.products(chunk, sv)
        for single, g, c in zip(singles, groups, coefs, strict=True):
            K = single.from_parts(parts)
            if single.rescaled:  # from_parts gives raw values; normalised kernels are scaled here
                single.normalize_block(K, chunk, sv)
            K = K[0]
            check_gram(owner, K, single[0].name)
            # Sparse (n_g × n_sv) times dense (n_sv × chunk): only the SVMs' own support vectors count.
            out[start : start + step, g] = np.asarray(c @ K.T).T + intercept[g]
    return out


# ----------------------------------------------------------------------------- persistence


class _Fitted(Protocol):
    """What a fitted estimator's state header is made of."""

    kernel_pool_: KernelPool
    classes_: NDArray[Any]
    n_features_in_: int


_Model = TypeVar("_Model", bound=_Fitted)


def state_header(model: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The metadata every saved estimator's state starts with: its class, parameters, classes, number
    of features and kernel pool (``to_state``; read back by :func:`model_from_header`)."""
    return {
        "algorithm": type(model).__name__,
        "params": params,
        "classes": model.classes_.tolist(),
        "classes_dtype": model.classes_.dtype.str,
        "n_features_in": int(model.n_features_in_),
        "kernel_pool": model.kernel_pool_.to_spec_string(),
    }


def model_from_header(cls: type[_Model], meta: dict[str, Any]) -> _Model:
    """A ``cls`` with the parameters, classes, number of features and kernel pool of a
    :func:`state_header` (``from_state``); refuses the state of another class."""
    if meta.get("algorithm") != cls.__name__:
        raise ValueError(f"state is of a {meta.get('algorithm')!r} model, not {cls.__name__}")
    model = cls(**meta["params"])
    model.kernel_pool_ = make_pool(meta["kernel_pool"])
    model.classes_ = np.asarray(meta["classes"], dtype=np.dtype(meta["classes_dtype"]))
    model.n_features_in_ = int(meta["n_features_in"])
    model.kernel_pool_.check_width(model.n_features_in_, owner=cls.__name__)  # what it will predict on
    return model


class BatchState:
    """``to_state``/``from_state`` of a fitted batch classifier: what prediction needs, as numeric
    arrays and JSON (no pickle; see :mod:`omkl_dist.storage.models`). A subclass lists its learned
    arrays in ``_STATE_ARRAYS`` and its JSON-able learned attributes in ``_STATE_JSON``; every model
    also has ``classes_``, ``pairs_``, ``n_features_in_``, ``kernel_pool_`` and the CSR ``dual_coef_``."""

    _STATE_ARRAYS: ClassVar[tuple[str, ...]] = ()
    _STATE_JSON: ClassVar[tuple[str, ...]] = ()

    # learned attributes every batch model has, and scikit-learn's get_params (BaseEstimator's)
    classes_: NDArray[Any]
    pairs_: list[tuple[int, int]]
    n_features_in_: int
    kernel_pool_: KernelPool
    kernel_names_: tuple[str, ...]
    dual_coef_: csr_matrix

    if TYPE_CHECKING:  # scikit-learn's BaseEstimator provides it at run time

        def get_params(self, deep: bool = True) -> dict[str, Any]: ...

    def to_state(self) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        coef = self.dual_coef_.tocsr()
        arrays = {name: np.asarray(getattr(self, name)) for name in self._STATE_ARRAYS}
        arrays.update(
            coef_data=coef.data, coef_indices=coef.indices.astype(np.int64), coef_indptr=coef.indptr.astype(np.int64)
        )
        params = {k: v for k, v in self.get_params().items() if k != "executor"}  # a compute handle, not state
        params["kernels"] = self.kernel_pool_.to_spec_string()
        meta = {
            **state_header(self, params),
            "coef_shape": list(coef.shape),
            "pairs": [list(map(int, p)) for p in self.pairs_],
            "learned": {name: getattr(self, name) for name in self._STATE_JSON},
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, NDArray[Any]], meta: dict[str, Any]) -> Self:
        model = model_from_header(cls, meta)
        model.kernel_names_ = model.kernel_pool_.names
        model.pairs_ = [tuple(p) for p in meta["pairs"]]
        model.dual_coef_ = sparse.csr_matrix(
            (arrays["coef_data"], arrays["coef_indices"], arrays["coef_indptr"]), shape=tuple(meta["coef_shape"])
        )
        for name in cls._STATE_ARRAYS:
            setattr(model, name, arrays[name])
        for name, value in meta["learned"].items():
            setattr(model, name, value)
        return model
