"""Reproduce the MKBoost paper's Tables 2 and 3: accuracy ± std and training time per dataset.

Protocol (:mod:`omkl_dist.reproduction.tables.mkboost`): for run r, the split is
``default_rng([seed, r]).permutation(n)`` -- the first ``round(test_size · n)`` rows are the test
set, the rest the training set -- the scaler is fitted on the training rows only, and every
algorithm gets ``random_state = SeedSequence([seed, r]).generate_state(1)[0]``. Time is the
``fit`` call alone (no loading, scaling or prediction). ``omkl fit --seed S`` trains on run 0's
split of seed S, so it reproduces one cell of a reproduction.

Flag rule: a row is flagged when ``|ours - paper| > max(2 · paper_std, 0.01)`` in accuracy
(the 1-point floor keeps rows with a tiny paper std, e.g. german's MKL rows at ± 0.0004, from being
flagged for differences nobody would call a failure to reproduce).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from omkl_dist.algorithms.mkboost import MKBoost
from omkl_dist.algorithms.mkl import MKLSILP, LpMKL, MKLLevel, SimpleMKL
from omkl_dist.preprocessing import Scaler

from ._names import pick_names
from .tables import mkboost as paper

__all__ = [
    "reproduce_mkboost",
    "load_dataset",
    "split_indices",
    "prepare_split",
    "split_scaler",
    "make_model",
    "run_once",
    "resolve_datasets",
    "resolve_algorithms",
    "flag_deviation",
    "SCALINGS",
]

SCALINGS = ("standard", "minmax", "none")
MIN_TOLERANCE = 0.01

_ALIASES = {
    "d1": "mkboost-d1",
    "d2": "mkboost-d2",
    "s1": "mkboost-s1",
    "s2": "mkboost-s2",
    "simplemkl": "mkl-sd",
    "mkl-sd": "mkl-sd",
    "sd": "mkl-sd",
    "lpmkl": "lp-mkl",
    "lp-mkl": "lp-mkl",
    "silp": "mkl-silp",
    "level": "mkl-level",
    "mkboost": None,
}


@dataclass(frozen=True)
class LoadedData:
    paper_name: str
    registry: str
    file: str
    X: np.ndarray
    y: np.ndarray
    note: str


# ----------------------------------------------------------------------------- names
def resolve_datasets(names=None) -> tuple[list[str], list[str]]:
    """``(paper names we run, paper names we skip)`` in Table 1 order; ``names`` may be paper or
    registry names or D1..D10."""
    order = list(paper.PAPER)
    if names is None:
        chosen = order
    else:
        lookup = {k.lower(): k for k in order}
        lookup.update({ds.key.lower(): k for k, ds in paper.PAPER.items()})
        lookup.update({s.registry.lower(): k for k, s in paper.DATASETS.items() if s.registry})
        lookup.update({"german": "german.numer", "monks": "monks1", "balance": "balance-scale"})
        chosen = pick_names(names, lookup, order, "dataset")
    run = [k for k in chosen if paper.DATASETS[k].registry is not None]
    return run, [k for k in chosen if paper.DATASETS[k].registry is None]


def resolve_algorithms(names=None) -> list[str]:
    """Algorithm keys in the paper's column order; accepts d1/d2/s1/s2, mkboost (all four),
    simplemkl, lpmkl and the labels."""
    if names is None:
        return list(paper.ALGORITHMS)
    lookup = {k: k for k in paper.ALGORITHMS}
    lookup.update({v.lower(): k for k, v in paper.ALGORITHM_LABELS.items()})
    lookup.update({k: v for k, v in _ALIASES.items() if v})
    return pick_names(
        names,
        lookup,
        list(paper.ALGORITHMS),
        "algorithm",
        groups={"mkboost": ["mkboost-d1", "mkboost-d2", "mkboost-s1", "mkboost-s2"]},
        choices=f"{', '.join(paper.ALGORITHMS)}, d1, d2, s1, s2, mkboost, simplemkl, lpmkl",
    )


# ----------------------------------------------------------------------------- data and protocol
def load_dataset(paper_name: str, data_dir=None) -> LoadedData:
    """Our stand-in for a paper dataset (binarised where :data:`tables.mkboost.DATASETS` says so)."""
    from omkl_dist.storage import read_dataset, resolve_dataset

    source = paper.DATASETS[paper_name]
    if source.registry is None:
        raise ValueError(f"{paper_name}: {source.note}")
    path = resolve_dataset(source.registry, data_dir=data_dir)
    ds = read_dataset(path)
    X = np.asarray(ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X, dtype=np.float64)
    y = np.asarray(ds.y)
    if source.positive is not None:
        positive = [internal for original, internal in ds.label_map if original in source.positive]
        y = np.where(np.isin(y, positive), 1, -1)
    return LoadedData(paper_name, source.registry, path.name, X, y, source.note)


def split_indices(n: int, test_size: float, seed: int, run: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` row indices of run ``run``: ``default_rng([seed, run]).permutation(n)``,
    the first ``round(test_size · n)`` rows for test."""
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size!r}")
    order = np.random.default_rng([int(seed), int(run)]).permutation(n)
    n_test = int(round(test_size * n))
    if n_test < 1 or n - n_test < 2:
        raise ValueError(f"test_size={test_size} leaves {n - n_test} training and {n_test} test rows of {n}")
    return order[n_test:], order[:n_test]


def prepare_split(X, y, train, test, scaling: str | Scaler = "standard"):
    """``(X_train, y_train, X_test, y_test)`` with the scaler fitted on the training rows only
    (:func:`split_scaler`), or scaled by a given one (that scaler)."""
    scaler = scaling if isinstance(scaling, Scaler) else split_scaler(X, train, scaling)
    return scaler.transform(X[train]), y[train], scaler.transform(X[test]), y[test]


def split_scaler(X, train, scaling: str = "standard") -> Scaler:
    """The scaling of a split: ``scaling`` (one of :data:`SCALINGS`) fitted on its training rows only."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {scaling!r}")
    return Scaler(scaling).fit(X[train])


def run_seed(seed: int, run: int) -> int:
    """The models' ``random_state`` in run ``run``."""
    return int(np.random.SeedSequence([int(seed), int(run)]).generate_state(1)[0])


def make_model(
    algorithm: str,
    random_state: int = 0,
    *,
    n_trials: int = paper.N_TRIALS,
    ratio: float = paper.RATIO,
    beta: float = paper.BETA,
    C: float = paper.C,
    kernels=paper.KERNELS,
    kernel_normalization: str = paper.KERNEL_NORMALIZATION,
    min_neighbors: float = paper.MIN_NEIGHBORS,
    executor=None,
    verbose: int = 0,
):
    """A fresh estimator for a paper algorithm key with the given (default: the paper's) settings;
    MKBoost's SVMs run to libsvm's own convergence (``svm_max_iter=None``), as the paper's did, and
    ``verbose`` prints progress (MKBoost: a line per boosting trial). The MKL baselines get ``C`` and
    ``kernel_normalization`` and ``min_neighbors`` explicitly: the paper's (50, unit trace, every kernel),
    not the estimators' defaults (C by cross-validation, unit diagonal, no memorising kernel);
    ``random_state`` draws their folds when ``C="auto"``."""
    if algorithm.startswith("mkboost-"):
        return MKBoost(
            variant=algorithm[-2:].upper(),
            n_trials=n_trials,
            ratio=ratio,
            beta=beta,
            C=C,
            kernels=kernels,
            svm_max_iter=None,
            random_state=random_state,
            executor=executor,
            verbose=verbose,
        )
    mkl = {
        "C": C,
        "kernels": kernels,
        "kernel_normalization": kernel_normalization,
        "min_neighbors": min_neighbors,
        "random_state": random_state,
        "verbose": verbose,
    }
    if algorithm == "mkl-sd":
        return SimpleMKL(**mkl)
    if algorithm == "mkl-silp":
        return MKLSILP(**mkl)
    if algorithm == "mkl-level":
        return MKLLevel(**mkl)
    if algorithm == "lp-mkl":
        return LpMKL(p=2.0, **mkl)
    raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(paper.IMPLEMENTED)}")


def run_once(model, X_train, y_train, X_test, y_test) -> dict:
    """Fit (timed), then score on the test rows; kernel usage counts by kernel name."""
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    counts = {name: int(c) for name, c in zip(model.kernel_names_, model.kernel_counts_, strict=True) if c}
    out = {"accuracy": accuracy, "seconds": seconds, "kernel_counts": counts}
    if hasattr(model, "n_trials_"):
        out["trials"] = int(np.sum(model.n_trials_))
    return out


def flag_deviation(ours: float, paper_mean: float, paper_std: float) -> bool:
    """``|ours - paper| > max(2 · paper_std, 0.01)`` (accuracies as fractions).

    >>> flag_deviation(0.93, 0.9426, 0.0139)
    False
    >>> flag_deviation(0.68, 0.7001, 0.0004)
    True
    """
    return abs(ours - paper_mean) > max(2.0 * paper_std, MIN_TOLERANCE)


def _warm_up(algorithms, **settings) -> None:
    """Load numba's compiled loops and scikit-learn once, so the first timed fit does not pay for it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    for algorithm in algorithms:
        make_model(algorithm, 0, **dict(settings, n_trials=2)).fit(X, y)


def _mean_std(values) -> dict:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0}


def _row(algorithm: str, cell, runs) -> dict:
    row = {
        "algorithm": algorithm,
        "label": paper.ALGORITHM_LABELS[algorithm],
        "paper": {"accuracy": cell.accuracy, "std": cell.std, "seconds": cell.seconds},
    }
    if runs is None:
        row.update(ours=None, note="not run", deviation=None, flagged=None)
        return row
    counts: dict = {}
    for r in runs:
        for name, c in r["kernel_counts"].items():
            counts[name] = counts.get(name, 0) + c
    ours = {
        "accuracy": _mean_std([r["accuracy"] for r in runs]),
        "seconds": _mean_std([r["seconds"] for r in runs]),
        "kernel_counts": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        "runs": runs,
    }
    if runs and "trials" in runs[0]:
        ours["trials"] = int(sum(r["trials"] for r in runs))
    mean = ours["accuracy"]["mean"]
    row.update(ours=ours, deviation=mean - cell.accuracy, flagged=flag_deviation(mean, cell.accuracy, cell.std))
    return row


# ----------------------------------------------------------------------------- the reproduction
def reproduce_mkboost(
    datasets=None,
    algorithms=None,
    *,
    runs: int = paper.RUNS,
    seed: int = 0,
    n_trials: int = paper.N_TRIALS,
    ratio: float = paper.RATIO,
    beta: float = paper.BETA,
    C: float = paper.C,
    kernels=paper.KERNELS,
    test_size: float = paper.TEST_SIZE,
    scaling: str = paper.SCALING,
    executor=None,
    data_dir=None,
    progress: Callable[[str], None] | None = None,
    warm_up: bool = True,
) -> dict:
    """Run the Table 2/3 protocol and compare with the paper; return a JSON-able report.

    Parameters
    ----------
    datasets, algorithms : list of str, optional
        Default: every Table 1 dataset (the ones we lack are reported in ``skipped``) and every
        algorithm.
    runs : int
        Random 50/50 splits per dataset (the paper: 20).
    executor : optional
        MKBoost's ``executor`` (e.g. a ``ThreadRunner`` or a Dask executor); the MKL baselines run
        in-process.
    progress : callable, optional
        Called with a short text after every fit.

    Returns
    -------
    dict
        ``settings``, ``datasets`` (per dataset: ours vs the paper's cells in ``rows``), ``skipped``,
        ``summary``.
    """
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    run_names, skip_names = resolve_datasets(datasets)
    algos = resolve_algorithms(algorithms)
    runnable = [a for a in algos if a in paper.IMPLEMENTED]
    settings = {"n_trials": n_trials, "ratio": ratio, "beta": beta, "C": C, "kernels": kernels}
    started = time.perf_counter()
    if warm_up and runnable:
        _warm_up(runnable, **settings)
    blocks = []
    for name in run_names:
        data, table = load_dataset(name, data_dir), paper.PAPER[name]
        results = {a: [] for a in runnable}
        for r in range(runs):
            train, test = split_indices(len(data.y), test_size, seed, r)
            split = prepare_split(data.X, data.y, train, test, scaling)
            for algorithm in runnable:
                model = make_model(algorithm, run_seed(seed, r), executor=executor, **settings)
                results[algorithm].append(run_once(model, *split))
                if progress is not None:
                    progress(f"{name} {paper.ALGORITHM_LABELS[algorithm]} #{r + 1}")
        blocks.append(
            {
                "paper_name": name,
                "paper_key": table.key,
                "paper_n": table.n,
                "paper_d": table.d,
                "paper_classes": table.n_classes,
                "registry": data.registry,
                "file": data.file,
                "n": int(len(data.y)),
                "d": int(data.X.shape[1]),
                "classes": int(len(np.unique(data.y))),
                "substitute": paper.DATASETS[name].substitute,
                "note": data.note,
                "rows": [_row(a, table.cells[a], results.get(a)) for a in algos],
            }
        )
    report = {
        "experiment": "mkboost",
        "settings": {
            "runs": int(runs),
            "seed": int(seed),
            "test_size": test_size,
            "scaling": scaling,
            "executor": repr(executor) if executor is not None else "serial",
            **settings,
            "flag_rule": "|ours - paper| > max(2 * paper_std, 0.01) accuracy",
        },
        "datasets": blocks,
        "skipped": [
            {"paper_name": k, "paper_key": paper.PAPER[k].key, "note": paper.DATASETS[k].note} for k in skip_names
        ],
    }
    report["summary"] = _summary(blocks)
    report["summary"]["total_seconds"] = time.perf_counter() - started
    return report


def _summary(blocks) -> dict:
    compared = [(b, row) for b in blocks for row in b["rows"] if row["ours"] is not None]
    same = [(b, row) for b, row in compared if not b["substitute"]]
    return {
        "rows_compared": len(compared),
        "flagged": sum(bool(row["flagged"]) for _, row in compared),
        "rows_compared_same_data": len(same),
        "flagged_same_data": sum(bool(row["flagged"]) for _, row in same),
        "mean_abs_deviation": float(np.mean([abs(row["deviation"]) for _, row in compared])) if compared else None,
        "mean_abs_deviation_same_data": float(np.mean([abs(row["deviation"]) for _, row in same])) if same else None,
    }
