"""Reproduce the OMKC paper's Tables 3 and 4 (mistake rate, #SV, time per dataset and algorithm).

Protocol (paper section 5.1): for each dataset and each of ``permutations`` random orders, run every
algorithm once, test-then-train, over the whole permuted dataset; report mean ± std over the
permutations. Permutation ``r`` is ``np.random.default_rng([seed, r]).permutation(n)``, the same
for all algorithms, and the stochastic OMKC variants get ``random_state = SeedSequence([seed,
r]).generate_state(1)[0]``. Settings: the 16-kernel pool ``"omkc16"``, β = 0.8, δ = 0.01,
Perceptron(*) validates on the first 10 % of the stream, Perceptron uses the linear kernel.

Preprocessing is offline: the scaler is fitted on the *whole* dataset before the online pass (the
paper's data files were pre-scaled files, or raw ones), not on a prefix of the stream.

What the columns mean, the flagging rule, and the measured decisions (OM-2's p, the scaling study,
the data repairs, ties, the #SV count) are written up in ``docs/reproduction.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from omkl_dist.algorithms import OM2, OMKC, KernelPerceptron, PerceptronStar, PerceptronU
from omkl_dist.preprocessing import Scaler
from omkl_dist.reproduction._names import pick_names
from omkl_dist.reproduction.tables.omkc import ALGORITHM_LABELS, ALGORITHMS, DATASETS, IMPLEMENTED, PAPER

__all__ = [
    "BETA",
    "DELTA",
    "KERNELS",
    "MIN_TOLERANCE_PP",
    "PAPER_SCALING",
    "SCALINGS",
    "TIE_RULES",
    "PreparedData",
    "count_mistakes",
    "flag_deviation",
    "load_paper_dataset",
    "make_model",
    "reproduce_omkc",
    "resolve_algorithms",
    "resolve_datasets",
    "run_once",
    "scale_features",
    "summarize",
    "support_vector_count",
    "tolerance",
    "comparison_row",
    "run_permutations",
    "warm_up_kernels",
]

BETA = 0.8
DELTA = 0.01
KERNELS = "omkc16"
VALIDATION_FRACTION = 0.1
OM2_P = 1.01  # OM-2's p in the reproduction (see "OM-2's settings" above)
#: floor of the flagging tolerance, in percentage points
MIN_TOLERANCE_PP = 1.0

#: ``--scaling`` choices; "minmax" maps each feature onto [0, 1], "minmax-sym" onto [-1, 1].
SCALINGS = ("none", "minmax", "minmax-sym", "standard", "paper")

#: how a zero combined score is counted (see :func:`count_mistakes`)
TIE_RULES = ("mistake", "positive")

#: what ``scaling="paper"`` means per paper dataset: the outcome of the scaling study above (raw
#: features everywhere; fourclass's file is LIBSVM's fourclass_scale, i.e. already in [-1, 1]).
PAPER_SCALING = {name: "none" for name in PAPER}


# -- selection --------------------------------------------------------------------------------------

_DATASET_ALIASES = {src.registry: name for name, src in DATASETS.items() if src.registry}
_DATASET_ALIASES.update({"breast-cancer": "breast", "wisconsin": "breast", "pima": "diabetes"})


def resolve_datasets(names=None) -> tuple[list[str], list[str]]:
    """Paper dataset names to run and to skip (not available), from paper or registry names.

    ``None`` means every dataset of Tables 3/4. ``"w1a"`` means the paper's w5a row, ``"a1a"`` a3a,
    ``"breast-cancer"`` breast.
    """
    if names is None:
        wanted = list(PAPER)
    else:
        choices = sorted(set(PAPER) | set(_DATASET_ALIASES))
        wanted = pick_names(
            names,
            {**{k: k for k in PAPER}, **_DATASET_ALIASES},
            list(PAPER),
            "dataset",
            suggest=choices,
            choices=", ".join(choices),
        )
    run = [k for k in wanted if DATASETS[k].registry is not None]
    skip = [k for k in wanted if DATASETS[k].registry is None]
    return run, skip


def resolve_algorithms(names=None) -> list[str]:
    """Algorithm keys in the paper's order; ``None`` means all."""
    if names is None:
        return list(ALGORITHMS)
    aliases = {k: k for k in ALGORITHMS}
    aliases.update({v.lower(): k for k, v in ALGORITHM_LABELS.items()})
    aliases.update(
        {
            "dd": "omkc-dd",
            "ds": "omkc-ds",
            "sd": "omkc-sd",
            "ss": "omkc-ss",
            "om-2": "om2",
            "perceptron-*": "perceptron-star",
            "perceptron(*)": "perceptron-star",
        }
    )
    return pick_names(
        names,
        aliases,
        list(ALGORITHMS),
        "algorithm",
        groups={"omkc": ["omkc-dd", "omkc-ds", "omkc-sd", "omkc-ss"]},
        suggest=list(ALGORITHMS),
        choices=f"{', '.join(ALGORITHMS)} (or 'omkc' for the four OMKC variants)",
    )


# -- data ---------------------------------------------------------------------------------------------


@dataclass
class PreparedData:
    """A paper dataset as we run it: features scaled, labels in {-1, +1}."""

    paper_name: str
    registry: str
    file: str
    X: np.ndarray
    y: np.ndarray
    scaling: str
    repair_note: str | None = None

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def d(self) -> int:
        return self.X.shape[1]


# PMLB's Bare_Nuclei codes: the text values sorted as strings ('1','10','2',...,'9','?'), 0..10.
_BARE_NUCLEI = {0: 1.0, 1: 10.0, 2: 2.0, 3: 3.0, 4: 4.0, 5: 5.0, 6: 6.0, 7: 7.0, 8: 8.0, 9: 9.0}
_BARE_NUCLEI_MISSING = 10


def _repair_breast(ds):
    """Decode PMLB's label-encoded Bare_Nuclei and drop the 16 rows where it is missing (699 -> 683)."""
    names = list(ds.feature_names or [])
    if "Bare_Nuclei" not in names:
        raise ValueError(
            "breast-cancer: expected PMLB's breast_w file with a 'Bare_Nuclei' column; "
            "the data file changed, update reproduce._repair_breast"
        )
    col = names.index("Bare_Nuclei")
    codes = ds.X[:, col]
    if not np.array_equal(codes, np.round(codes)) or codes.min() < 0 or codes.max() > _BARE_NUCLEI_MISSING:
        raise ValueError("breast-cancer: Bare_Nuclei is not PMLB's 0..10 code; update reproduce._repair_breast")
    keep = codes != _BARE_NUCLEI_MISSING
    X = ds.X[keep].copy()
    X[:, col] = [_BARE_NUCLEI[int(c)] for c in codes[keep]]
    note = f"decoded Bare_Nuclei, dropped {int((~keep).sum())} rows with it missing"
    return X, ds.y[keep], note


def _repair_votes(ds):
    """Recode PMLB's vote codes (0 = '?', 1 = 'n', 2 = 'y') as n = -1, ? = 0, y = +1."""
    codes = ds.X
    if not np.isin(codes, (0.0, 1.0, 2.0)).all():
        raise ValueError(
            "votes84: expected PMLB's 0/1/2 vote codes; the data file changed, update reproduce._repair_votes"
        )
    X = np.select([codes == 2.0, codes == 1.0], [1.0, -1.0], 0.0)
    return X, ds.y, "votes recoded n = -1, ? = 0, y = +1 (PMLB: ? = 0, n = 1, y = 2)"


_REPAIRS = {"breast-missing": _repair_breast, "votes-signed": _repair_votes}


def scale_features(X: np.ndarray, method: str) -> np.ndarray:
    """Scale ``X`` with a scaler fitted on all of ``X`` (offline preprocessing)."""
    if method == "none":
        return np.array(X, dtype=np.float64, copy=True)
    if method == "minmax":
        return Scaler("minmax", feature_range=(0.0, 1.0)).fit_transform(X)
    if method == "minmax-sym":
        return Scaler("minmax", feature_range=(-1.0, 1.0)).fit_transform(X)
    if method == "standard":
        return Scaler("standard").fit_transform(X)
    raise ValueError(f"unknown scaling {method!r}; choose one of {', '.join(SCALINGS)}")


def load_paper_dataset(paper_name: str, scaling: str = "paper", data_dir=None) -> PreparedData:
    """Read our stand-in for ``paper_name``, apply its repair, then scale it (fitted on all rows)."""
    from omkl_dist.storage import read_dataset, resolve_dataset

    if scaling not in SCALINGS:
        raise ValueError(f"unknown scaling {scaling!r}; choose one of {', '.join(SCALINGS)}")
    source = DATASETS[paper_name]
    if source.registry is None:
        raise ValueError(f"{paper_name}: {source.note}")
    path = resolve_dataset(source.registry, data_dir=data_dir)
    ds = read_dataset(path)
    if ds.n_classes != 2:
        raise ValueError(f"{paper_name}: expected two classes, {path.name} has {ds.n_classes}")
    X, y, note = ds.X, ds.y, None
    if source.repair is not None:
        X, y, note = _REPAIRS[source.repair](ds)
    method = PAPER_SCALING[paper_name] if scaling == "paper" else scaling
    return PreparedData(
        paper_name, source.registry, path.name, scale_features(X, method), np.asarray(y, dtype=np.float64), method, note
    )


# -- one run ------------------------------------------------------------------------------------------


def make_model(algorithm: str, random_state: int = 0):
    """A fresh estimator for an algorithm key with the paper's settings."""
    if algorithm == "perceptron":
        return KernelPerceptron(kernel="linear", random_state=random_state)
    if algorithm == "perceptron-u":
        return PerceptronU(kernels=KERNELS, random_state=random_state)
    if algorithm == "perceptron-star":
        return PerceptronStar(kernels=KERNELS, validation_fraction=VALIDATION_FRACTION, random_state=random_state)
    if algorithm.startswith("omkc-") and algorithm in ALGORITHMS:
        update, combination = algorithm[-2].upper(), algorithm[-1].upper()
        return OMKC(
            update=update, combination=combination, kernels=KERNELS, beta=BETA, delta=DELTA, random_state=random_state
        )
    if algorithm == "om2":  # one pass, Algorithm 1's exact norm
        return OM2(kernels=KERNELS, p=OM2_P, n_epochs=1)
    raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(IMPLEMENTED)}")


def support_vector_count(model, algorithm: str) -> float:
    """#SV of the final predictor as the paper counts it (see the module docstring)."""
    per = np.asarray(model.n_support_, dtype=np.float64)
    if algorithm in ("perceptron-u", "om2"):  # one set of rows shared by every kernel
        return float(per.max())
    if algorithm in ("omkc-ds", "omkc-ss"):
        w = np.asarray(model.weights_, dtype=np.float64)
        q = w / w.max()
        p = q if algorithm == "omkc-ds" else (1.0 - DELTA) * q + DELTA / len(q)
        return float(p @ per)
    return float(per.sum())


def count_mistakes(score: np.ndarray, y: np.ndarray, ties: str = "mistake") -> int:
    """Online mistakes of the combined prediction from its per-row scores.

    ``ties="mistake"``: ``y * score <= 0`` -- the package's rule (``sign(0) = 0`` never equals a
    label; the literal reading of the paper's ``ŷ = sign(...)``). ``ties="positive"``: a zero score
    predicts +1, so it is a mistake only on a negative instance (the ``if f >= 0, ŷ = 1`` convention of
    the Matlab online-learning code of the paper's group, e.g. LIBOL).
    """
    score, y = np.asarray(score), np.asarray(y)
    if ties == "mistake":
        return int(np.count_nonzero(y * score <= 0.0))
    if ties == "positive":
        return int(np.count_nonzero(np.where(score >= 0.0, 1.0, -1.0) != y))
    raise ValueError(f"ties must be one of {', '.join(TIE_RULES)}, got {ties!r}")


def run_once(
    algorithm: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    random_state: int = 0,
    ties: str = "mistake",
    factory: Callable | None = None,
) -> dict:
    """One test-then-train pass of ``algorithm`` over (X, y) in the given order.

    The whole array goes to one ``progressive_partial_fit`` call (what :func:`progressive_score`
    does with a single ``(X, y)`` block), timed around that call, so that the per-row scores are at
    hand for the tie rule of :func:`count_mistakes`. ``factory(algorithm, random_state)`` builds the
    model (default :func:`make_model`, the OMKC paper's settings).
    """
    if ties not in TIE_RULES:
        raise ValueError(f"ties must be one of {', '.join(TIE_RULES)}, got {ties!r}")
    model = (factory or make_model)(algorithm, random_state)
    t0 = time.perf_counter()
    outcome = model.progressive_partial_fit(X, y, classes=[-1.0, 1.0])
    seconds = time.perf_counter() - t0
    score = outcome["score"]
    if score.ndim == 2:  # OM-2's class scores (classes -1, +1): the binary score is their difference
        score = score[:, 1] - score[:, 0]
    mistakes = count_mistakes(score, y, ties)
    return {
        "mistake_rate": 100.0 * mistakes / len(y),
        "mistakes": mistakes,
        "n_support": support_vector_count(model, algorithm),
        "n_support_stored": int(np.sum(model.n_support_)),
        "seconds": seconds,
        "best_kernel": getattr(model, "best_kernel_", None),
    }


def warm_up_kernels(algorithms, factory=None) -> None:
    """Load/compile the numba kernels once so that the first timed run does not pay for it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(48, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    for algorithm in algorithms:
        run_once(algorithm, X, y, factory=factory)


# -- comparison -----------------------------------------------------------------------------------------


def tolerance(paper_std: float, min_pp: float = MIN_TOLERANCE_PP) -> float:
    """Allowed |ours - paper| in percentage points: ``max(2 * paper_std, min_pp)``."""
    return max(2.0 * float(paper_std), float(min_pp))


def flag_deviation(ours_mean: float, paper_mean: float, paper_std: float, *, min_pp: float = MIN_TOLERANCE_PP) -> bool:
    """True when ``|ours_mean - paper_mean| > max(2 * paper_std, min_pp)`` (all in percent).

    >>> flag_deviation(17.0, 16.07, 1.42)   # 0.93 <= 2.84
    False
    >>> flag_deviation(0.32, 1.50, 0.04)    # 1.18 > max(0.08, 1.0)
    True
    """
    return abs(float(ours_mean) - float(paper_mean)) > tolerance(paper_std, min_pp)


def _mean_std(values) -> dict:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0}


def _cell(c) -> dict:
    return {"mean": c.mean, "std": c.std}


def run_permutations(
    name, X, y, algorithms, labels, *, permutations, seed, ties, progress=None, factory=None, orders=None
) -> dict:
    """``algorithm -> [run_once result per permutation]``; permutation ``r`` is ``orders[r]`` when given
    (e.g. a dataset's own permutations), else ``default_rng([seed, r]).permutation(n)``."""
    runs = {a: [] for a in algorithms}
    for r in range(permutations):
        if orders is not None and r < len(orders):
            order = np.asarray(orders[r])
        else:
            order = np.random.default_rng([int(seed), r]).permutation(len(y))
        Xr, yr = X[order], y[order]
        random_state = int(np.random.SeedSequence([int(seed), r]).generate_state(1)[0])
        for algorithm in algorithms:
            runs[algorithm].append(run_once(algorithm, Xr, yr, random_state=random_state, ties=ties, factory=factory))
            if progress is not None:
                progress(f"{name} {labels[algorithm]} #{r + 1}")
    return runs


def comparison_row(algorithm, label, paper, rs, note) -> dict:
    """One table row: the paper's cells (``paper.mistake/sv/time[algorithm]``), ours over the runs ``rs``
    (None: not run, shown with ``note``), the deviation and the flag."""
    row = {
        "algorithm": algorithm,
        "label": label,
        "implemented": rs is not None,
        "paper": {
            "mistake_rate": _cell(paper.mistake[algorithm]),
            "n_support": _cell(paper.sv[algorithm]),
            "seconds": _cell(paper.time[algorithm]),
        },
        "tolerance_pp": tolerance(paper.mistake[algorithm].std),
    }
    if rs is not None:
        ours = {
            key: _mean_std([x[key] for x in rs]) for key in ("mistake_rate", "n_support", "n_support_stored", "seconds")
        }
        if algorithm == "perceptron-star":
            kernels = [x["best_kernel"] for x in rs]
            # the most frequent; a tie goes to the earliest permutation's (a set's order varies with
            # PYTHONHASHSEED, so max over a set made the same runs print different kernels)
            ours["best_kernel"] = max(kernels, key=kernels.count)
        ours["runs"] = [{k: v for k, v in x.items() if v is not None} for x in rs]
        row["ours"] = ours
        row["deviation_pp"] = ours["mistake_rate"]["mean"] - paper.mistake[algorithm].mean
        row["flagged"] = flag_deviation(
            ours["mistake_rate"]["mean"], paper.mistake[algorithm].mean, paper.mistake[algorithm].std
        )
    else:
        row["ours"] = None
        row["note"] = note
        row["deviation_pp"] = None
        row["flagged"] = None
    return row


def reproduce_omkc(
    datasets=None,
    algorithms=None,
    *,
    permutations: int = 20,
    seed: int = 0,
    scaling: str = "paper",
    ties: str = "mistake",
    data_dir=None,
    progress: Callable[[str], None] | None = None,
    warm_up: bool = True,
) -> dict:
    """Run the Table 3/4 protocol and compare with the paper; return a JSON-able report.

    Parameters
    ----------
    datasets, algorithms : list of str, optional
        Paper or registry dataset names and algorithm keys (default: all; see
        :func:`resolve_datasets`, :func:`resolve_algorithms`).
    permutations : int
        Random orders per dataset (the paper used 20).
    seed : int
        Permutation ``r`` is ``np.random.default_rng([seed, r]).permutation(n)``.
    scaling : {"none", "minmax", "minmax-sym", "standard", "paper"}
        Feature scaling fitted on the whole dataset; "paper" is :data:`PAPER_SCALING`.
    ties : {"mistake", "positive"}
        How a zero combined score is counted (:func:`count_mistakes`).
    progress : callable, optional
        Called with a short description after every run (for a progress bar).

    Returns
    -------
    dict
        ``settings``, ``datasets`` (one entry per dataset with its ``rows``), ``skipped`` and
        ``summary`` (``rows_compared``, ``flagged``, ``flagged_substitute``, ``mean_abs_deviation_pp``
        overall and on the same-data datasets).
    """
    if isinstance(permutations, bool) or not isinstance(permutations, (int, np.integer)) or permutations < 1:
        raise ValueError(f"permutations must be a positive integer, got {permutations!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"unknown scaling {scaling!r}; choose one of {', '.join(SCALINGS)}")
    if ties not in TIE_RULES:
        raise ValueError(f"ties must be one of {', '.join(TIE_RULES)}, got {ties!r}")
    run_names, skip_names = resolve_datasets(datasets)
    algos = resolve_algorithms(algorithms)
    runnable = [a for a in algos if a in IMPLEMENTED]
    started = time.perf_counter()
    if warm_up and runnable:
        warm_up_kernels(runnable)
    blocks = []
    for name in run_names:
        data = load_paper_dataset(name, scaling, data_dir=data_dir)
        source, paper = DATASETS[name], PAPER[name]
        runs = run_permutations(
            name,
            data.X,
            data.y,
            runnable,
            ALGORITHM_LABELS,
            permutations=permutations,
            seed=seed,
            ties=ties,
            progress=progress,
        )
        rows = [
            comparison_row(algorithm, ALGORITHM_LABELS[algorithm], paper, runs.get(algorithm), "not run")
            for algorithm in algos
        ]
        blocks.append(
            {
                "paper_name": name,
                "registry": data.registry,
                "file": data.file,
                "n": data.n,
                "d": data.d,
                "paper_n": paper.n,
                "paper_d": paper.d,
                "paper_best_kernel": paper.best_kernel,
                "scaling": data.scaling,
                "substitute": source.substitute,
                "note": source.note,
                "repair": data.repair_note,
                "rows": rows,
            }
        )
    report = {
        "experiment": "omkc",
        "settings": {
            "permutations": int(permutations),
            "seed": int(seed),
            "scaling": scaling,
            "ties": ties,
            "beta": BETA,
            "delta": DELTA,
            "kernels": KERNELS,
            "validation_fraction": VALIDATION_FRACTION,
            "om2_p": OM2_P,
            "min_tolerance_pp": MIN_TOLERANCE_PP,
            "flag_rule": "|ours_mean - paper_mean| > max(2 * paper_std, 1.0) percentage points",
        },
        "datasets": blocks,
        "skipped": [{"paper_name": k, "note": DATASETS[k].note} for k in skip_names],
    }
    report["summary"] = summarize(report)
    report["summary"]["total_seconds"] = time.perf_counter() - started
    return report


def summarize(report: dict) -> dict:
    """Counts of compared/flagged rows and mean absolute deviations (percentage points)."""
    dev_all, dev_same, flagged, flagged_sub, compared, compared_same = [], [], 0, 0, 0, 0
    for block in report["datasets"]:
        for row in block["rows"]:
            if row["ours"] is None or row.get("duplicate"):
                continue
            compared += 1
            dev_all.append(abs(row["deviation_pp"]))
            if block["substitute"]:
                flagged_sub += bool(row["flagged"])
            else:
                compared_same += 1
                dev_same.append(abs(row["deviation_pp"]))
                flagged += bool(row["flagged"])
    return {
        "rows_compared": compared,
        "rows_compared_same_data": compared_same,
        "flagged": flagged + flagged_sub,
        "flagged_same_data": flagged,
        "flagged_substitute": flagged_sub,
        "mean_abs_deviation_pp": float(np.mean(dev_all)) if dev_all else None,
        "mean_abs_deviation_same_data_pp": float(np.mean(dev_same)) if dev_same else None,
    }
