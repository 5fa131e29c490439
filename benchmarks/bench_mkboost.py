"""MKBoost-D1 benchmark: serial vs Dask with 1 and 2 worker processes, vs a plain GridSearchCV.

For each dataset (run 0 of the paper's protocol: 50/50 split, standardised on the training half,
C = 50, 17 kernels, ratio 0.2) MKBoost-D1 is fitted with ``n_trials`` trials (default 20 instead of
the paper's 100, to keep the whole bench to a few minutes; time is linear in T):

* ``serial`` -- every per-kernel task in this process, one after another;
* ``dask-1`` / ``dask-2`` -- the tasks on a ``LocalCluster(processes=True, threads_per_worker=1)``
  with 1 or 2 workers (cluster start-up excluded, one warm-up fit first; the Dask models are checked
  bit-identical to the serial one);
* ``gridsearch`` -- what a user would do instead: ``GridSearchCV(SVC(C=50), 5-fold)`` over the same
  17 kernels (rbf γ = 1/(2σ²), poly (x·y)^p), refit on the whole training half.

Where the time goes (MKBoost rows): seconds inside the tasks computing Gram blocks, fitting the
SVMs and evaluating them on the training set (summed over tasks), and ``overhead`` = wall time minus
task time per worker (resampling, boosting updates, scheduling and transfers). Writes
``<out_dir>/mkboost.json`` and prints a markdown table. Timings are of this machine only.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS

DATASETS = ("ionosphere", "wdbc", "german.numer", "svmguide3")
N_TRIALS = 20


def _data(name: str, seed: int):
    from omkl_dist.reproduction.mkboost import load_dataset, prepare_split, split_indices

    data = load_dataset(name)
    train, test = split_indices(len(data.y), 0.5, seed, 0)
    return prepare_split(data.X, data.y, train, test, "standard")


def _mkboost_row(name, split, config, workers, n_trials, executor, seed):
    from omkl_dist.algorithms.mkboost import MKBoost

    X_train, y_train, X_test, y_test = split
    model = MKBoost(variant="D1", n_trials=n_trials, kernels="mkboost17", random_state=seed, executor=executor)
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    tasks = model.task_seconds_
    task_total = sum(tasks.values())
    row = {
        "dataset": name,
        "n_train": int(len(y_train)),
        "config": config,
        "workers": workers,
        "T": n_trials,
        "seconds": seconds,
        "accuracy": float(model.score(X_test, y_test)),
        "gram_s": tasks["gram"],
        "svm_fit_s": tasks["fit"],
        "evaluate_s": tasks["evaluate"],
        "task_s": task_total,
        "overhead_s": max(0.0, seconds - task_total / workers),
    }
    return row, model


def grid_search_17_kernels(X_train, y_train):
    """``GridSearchCV(SVC(C=50), 5 folds)`` over MKBoost's 17 kernels (rbf γ = 1/(2σ²), σ = 2^-6..2^7;
    poly (x·z)^p), refit on all of ``X_train``: ``(fitted search, seconds, best kernel in our names)``."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    grid = [
        {"kernel": ["rbf"], "gamma": [1.0 / (2.0 * 2.0 ** (2 * e)) for e in range(-6, 8)]},
        {"kernel": ["poly"], "degree": [1, 2, 3], "gamma": [1.0], "coef0": [0.0]},
    ]
    search = GridSearchCV(SVC(C=50.0), grid, cv=5, n_jobs=1)
    t0 = time.perf_counter()
    search.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    best = search.best_params_
    kernel = (
        f"gaussian(sigma={(1.0 / (2.0 * best['gamma'])) ** 0.5:g})"
        if best["kernel"] == "rbf"
        else f"polynomial(p={best['degree']})"
    )
    return search, seconds, kernel


def _gridsearch_row(name, split):
    X_train, y_train, X_test, y_test = split
    search, seconds, kernel = grid_search_17_kernels(X_train, y_train)
    return {
        "dataset": name,
        "n_train": int(len(y_train)),
        "config": "gridsearch",
        "workers": 1,
        "T": None,
        "seconds": seconds,
        "accuracy": float(search.score(X_test, y_test)),
        "best_kernel": kernel,
        "svm_fits": 17 * 5 + 1,
    }


def run_mkboost_bench(out_dir=RESULTS, *, datasets=DATASETS, n_trials: int = N_TRIALS, seed: int = 0) -> list[dict]:
    """Run the benchmark, write ``<out_dir>/mkboost.json``, print a markdown table, return the rows."""
    from distributed import Client

    from omkl_dist.distributed.mkboost import DaskExecutor, local_cluster

    splits = {name: _data(name, seed) for name in datasets}
    rows, models, startup = [], {}, {}
    _mkboost_row(datasets[0], splits[datasets[0]], "warm-up", 1, 2, None, seed)  # load numba/sklearn once
    for name in datasets:
        row, models[name] = _mkboost_row(name, splits[name], "serial", 1, n_trials, None, seed)
        rows.append(row)
    for workers in (1, 2):
        t0 = time.perf_counter()
        with local_cluster(n_workers=workers, threads_per_worker=1) as cluster, Client(cluster) as client:
            startup[workers] = time.perf_counter() - t0
            executor = DaskExecutor(client)
            _mkboost_row(datasets[0], splits[datasets[0]], "warm-up", workers, 2, executor, seed)
            for name in datasets:
                row, model = _mkboost_row(name, splits[name], f"dask-{workers}", workers, n_trials, executor, seed)
                X_test = splits[name][2]
                row["identical_to_serial"] = bool(
                    np.array_equal(model.decision_function(X_test), models[name].decision_function(X_test))
                )
                rows.append(row)
    for name in datasets:
        rows.append(_gridsearch_row(name, splits[name]))
    serial = {r["dataset"]: r["seconds"] for r in rows if r["config"] == "serial"}
    for r in rows:
        r["speedup_vs_serial"] = serial[r["dataset"]] / r["seconds"]
    rows.sort(
        key=lambda r: (datasets.index(r["dataset"]), ["serial", "dask-1", "dask-2", "gridsearch"].index(r["config"]))
    )
    result = {
        "benchmark": "mkboost",
        "variant": "D1",
        "n_trials": n_trials,
        "ratio": 0.2,
        "C": 50.0,
        "kernels": "mkboost17",
        "seed": seed,
        "cluster_startup_s": {str(k): v for k, v in startup.items()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "rows": rows,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mkboost.json").write_text(json.dumps(result, indent=1) + "\n")
    print(format_markdown(rows, startup))
    return rows


def format_markdown(rows: list[dict], startup: dict | None = None) -> str:
    """The rows as a markdown table (MKBoost time split into Gram / SVM fit / evaluation / overhead)."""
    head = (
        "| dataset | N train | config | T | fit s | × serial | Gram s | SVM fit s | eval s | overhead s "
        "| test acc |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in rows:
        if r["config"] == "gridsearch":
            parts = ("-", "-", "-", "-")
            config = f"GridSearchCV 17 kernels × 5 folds (best {r['best_kernel']})"
        else:
            parts = tuple(f"{r[k]:.2f}" for k in ("gram_s", "svm_fit_s", "evaluate_s", "overhead_s"))
            config = r["config"] + ("" if r.get("identical_to_serial", True) else " (NOT identical)")
        lines.append(
            f"| {r['dataset']} | {r['n_train']} | {config} | {r['T'] or '-'} | {r['seconds']:.2f} | "
            f"{r['speedup_vs_serial']:.2f} | {' | '.join(parts)} | {r['accuracy']:.4f} |"
        )
    if startup:
        lines.append("")
        lines.append(
            "Cluster start-up (excluded above): " + ", ".join(f"{k} worker(s) {v:.1f} s" for k, v in startup.items())
        )
    return "\n".join(lines)


if __name__ == "__main__":
    run_mkboost_bench()
