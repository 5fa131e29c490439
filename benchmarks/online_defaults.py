"""The measurement behind two online classifiers' defaults (docs/defaults.md, "Batch use: fit"):
the Perceptron's kernel and BPAS's step size η (issue 41, item 1).

Candidates: the Perceptron with its former default ``linear+norm`` (no bias term: on raw iris it
reaches 0.73 -- as scikit-learn's ``Perceptron`` does), with a Laplacian kernel of width 2, 4 or 8,
or ``gaussian:1``; BPAS with η (PA-I's aggressiveness C) of 0.1 (the paper's), 0.3 or 1.

Two measures per candidate, everything else at its default:

- ``fit``: 5-fold cross-validated accuracy (scikit-learn's ``cross_val_score(..., cv=5)``, folds
  in the data's order) for ``random_state`` 0..4 on iris, breast cancer, wine and the first 600
  digits, each raw and standardised (a ``StandardScaler`` fitted on each training fold);
- a stream: ``omkl run``'s test-then-train mistake rate (the in-process runner, the default
  settings: standard scaling fitted on the first rows, dense rows) on the whole of cod-rna, one
  pass, seed 0 (``OMKL_DATA_DIR`` must hold it).

Writes ``benchmarks/results/online-defaults.json``::

    OMKL_DATA_DIR=/work/shared/datasets python -m benchmarks.online_defaults
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.job import DataWindow, Job
from omkl_dist.runner import LocalRunner

CANDIDATES = {
    "perceptron": [{"kernel": k} for k in ("linear+norm", "laplacian:2", "laplacian:4", "laplacian:8", "gaussian:1")],
    "bpas": [{"eta": eta} for eta in (0.1, 0.3, 1.0)],
}
SEEDS = range(5)
STREAM = "codrna"
OUT = Path(__file__).parent / "results" / "online-defaults.json"


def datasets() -> dict:
    digits = load_digits(return_X_y=True)
    return {
        "iris": load_iris(return_X_y=True),
        "breast-cancer": load_breast_cancer(return_X_y=True),
        "wine": load_wine(return_X_y=True),
        "digits-600": (digits[0][:600], digits[1][:600]),
    }


def cross_validated(algo: str, params: dict, X, y, *, scaled: bool) -> list[float]:
    """The mean 5-fold accuracy for each seed."""
    means = []
    for seed in SEEDS:
        estimator = ALGORITHMS[algo](**params, random_state=seed)
        model = make_pipeline(StandardScaler(), estimator) if scaled else estimator
        means.append(round(float(cross_val_score(model, X, y, cv=5).mean()), 4))
    return means


def stream_mistake_rate(algo: str, params: dict) -> dict:
    job = Job.build(algo, params, data=DataWindow(STREAM))
    t0 = time.perf_counter()
    result = LocalRunner().fit(job, STREAM)
    rows, mistakes = result.accounting.rows, result.accounting.mistakes
    return {"rows": rows, "mistake_rate": round(mistakes / rows, 4), "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    rows = []
    sets = datasets()
    for algo, candidates in CANDIDATES.items():
        for params in candidates:
            row: dict = {"algorithm": algo, "params": params, "fit": {}}
            for name, (X, y) in sets.items():
                for scaled in (False, True):
                    accuracy = cross_validated(algo, params, X, y, scaled=scaled)
                    row["fit"][name + ("-standardised" if scaled else "")] = {
                        "by_seed": accuracy,
                        "mean": round(float(np.mean(accuracy)), 4),
                        "min": min(accuracy),
                    }
            row["stream"] = {STREAM: stream_mistake_rate(algo, params)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    OUT.write_text(json.dumps({"omkl_report": "online-defaults", "seeds": list(SEEDS), "rows": rows}, indent=1) + "\n")


def markdown(results: dict) -> list[str]:
    """BENCHMARKS.md's section from ``online-defaults.json`` (``make bench`` adds it when the file is
    there): per candidate, the worst seed's 5-fold accuracy on each set (raw / standardised), the
    mean over the seeds on iris, and the stream's mistake rate."""
    names = list(results["rows"][0]["fit"])
    sets = [n for n in names if not n.endswith("-standardised")]
    head = ["algorithm", "setting", "iris mean", *[f"{n} raw / std (worst seed)" for n in sets], f"{STREAM} mistakes"]
    lines = [
        "",
        "## Defaults of fit: the Perceptron's kernel, BPAS's step size (benchmarks/online_defaults.py, "
        "results/online-defaults.json)",
        "",
        "`cross_val_score(Est(random_state=s), X, y, cv=5)` for seeds 0-4 (standardised: a `StandardScaler` "
        "fitted on each training fold), every other parameter at its default; and the test-then-train mistake "
        f"rate of `omkl run` (default settings, seed 0) over the whole of {STREAM}. Chosen: the Perceptron's "
        "`laplacian:2` (the one candidate at 0.9 or more on iris for every seed, and the fewest stream mistakes) "
        "and BPAS's eta 0.3 (better than the paper's 0.1 on the raw sets, digits, iris's mean and the stream). "
        "No eta keeps every seed of iris at 0.9 in one pass: 0.3 gives 0.96-0.97 for seeds 0-3 and 0.83 for "
        "seed 4, whose row order leaves most one-pass learners below 0.9 (0.1: 0.88-0.96).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in results["rows"]:
        fit = row["fit"]
        cells = [f"{fit[n]['min']:.3f} / {fit[n + '-standardised']['min']:.3f}" for n in sets]
        stream = row["stream"][STREAM]["mistake_rate"]
        setting = ", ".join(f"{k} {v}" for k, v in row["params"].items())
        lines.append(
            f"| {row['algorithm']} | {setting} | {fit['iris']['mean']:.3f} | "
            + " | ".join(cells)
            + f" | {stream:.1%} |"
        )
    return lines


if __name__ == "__main__":
    main()
