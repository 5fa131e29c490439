"""The sweep behind ``OKSRegressor``'s default λ (docs/algorithms/oks.md, "Defaults of the regressor").

5-fold cross-validated R² (folds shuffled with seed 0; features standardised on each training
fold) of ``OKSRegressor(lam=λ, n_epochs=E)``, every other parameter at its default, on three
standard regression sets: ``make_friedman1(2000, random_state=0)``, scikit-learn's diabetes data
and ``make_friedman3(2000, noise=0.1, random_state=0)``. Writes
``benchmarks/results/oks-regressor-defaults.json``::

    python -m benchmarks.oks_regressor_defaults
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from sklearn.datasets import load_diabetes, make_friedman1, make_friedman3
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from omkl_dist.algorithms import OKSRegressor

LAMBDAS = (1.0, 0.2, 0.1, 0.05, 0.02, 0.01)
EPOCHS = (2, 5)
OUT = Path(__file__).parent / "results" / "oks-regressor-defaults.json"


def datasets() -> dict:
    return {
        "friedman1": make_friedman1(2000, random_state=0),
        "diabetes": load_diabetes(return_X_y=True),
        "friedman3": make_friedman3(2000, noise=0.1, random_state=0),
    }


def main() -> None:
    folds = KFold(5, shuffle=True, random_state=0)
    rows = []
    for name, (X, y) in datasets().items():
        for n_epochs in EPOCHS:
            for lam in LAMBDAS:
                t0 = time.perf_counter()
                model = make_pipeline(StandardScaler(), OKSRegressor(lam=lam, n_epochs=n_epochs))
                r2 = cross_val_score(model, X, y, cv=folds)
                rows.append(
                    {
                        "dataset": name,
                        "lam": lam,
                        "n_epochs": n_epochs,
                        "r2_folds": [round(float(v), 4) for v in r2],
                        "r2_mean": round(float(r2.mean()), 4),
                        "r2_min": round(float(r2.min()), 4),
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    OUT.write_text(json.dumps({"omkl_report": "oks-regressor-defaults", "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
