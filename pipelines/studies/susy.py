"""What the SUSY substitute does to SPA's Table 2 row: mistake rate and #SV at β = 300 against the stream length.

The BOMKL paper ran SPA with β = 300 on a 1,000,000-row subsample of UCI SUSY (34.57 ± 0.36 % mistakes,
1,978.8 support vectors over the 16 kernels); we have a 30,000-row subsample only. At β = 300 SPA
stores at most α T / β = T / 300 support vectors per kernel in expectation, so on 30,000 rows it is
starved. This study shows the effect, with the paper's SPA settings (raw features, ``omkc16``, γ = 0.99,
δ = 0.001, η = 0.1, α = 1, β = 300):

* SUSY's first 10,000 rows and all 30,000, ``permutations`` random orders each;
* a generated stream of SUSY's shape (``omkl data synth``: 1,000,000 × 18, seed 0, a known Bayes
  error -- not SUSY's distribution) and its prefixes, one pass each, to show the trend with T on one
  distribution.

Run: ``python -m omkl_dist.pipelines.studies.susy``; writes ``benchmarks/results/susy-size-study.json``
and prints a markdown table (copied into docs/reproduction.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SUSY_SIZES = (10_000, 30_000)
SYNTH_SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
BETA = 300.0


def _spa(X, y, random_state: int) -> dict:
    from omkl_dist.reproduction.bomkl import make_bomkl_model
    from omkl_dist.reproduction.omkc import run_once

    return run_once(
        "spa",
        X,
        y,
        random_state=random_state,
        factory=lambda algorithm, seed: make_bomkl_model(algorithm, seed, spa_beta=BETA),
    )


def run_susy_study(
    out="benchmarks/results/susy-size-study.json",
    *,
    permutations: int = 3,
    susy_sizes=SUSY_SIZES,
    synth_sizes=SYNTH_SIZES,
    data_dir=None,
) -> dict:
    """Run the study, write ``out`` (None: do not write) and return the rows."""
    from omkl_dist.reproduction.bomkl import load_bomkl_dataset
    from omkl_dist.storage.synth import iter_blocks

    rows = []
    data, _ = load_bomkl_dataset("SUSY", "none", data_dir=data_dir)
    for size in susy_sizes:
        X, y = data.X[:size], data.y[:size]
        runs = []
        for r in range(permutations):
            order = np.random.default_rng([0, r]).permutation(len(y))
            runs.append(_spa(X[order], y[order], int(np.random.SeedSequence([0, r]).generate_state(1)[0])))
        rows.append(
            {
                "data": "SUSY subsample",
                "rows": len(y),
                "runs": len(runs),
                "mistake_rate": float(np.mean([x["mistake_rate"] for x in runs])),
                "mistake_std": float(np.std([x["mistake_rate"] for x in runs])),
                "n_support": float(np.mean([x["n_support"] for x in runs])),
                "seconds": float(np.mean([x["seconds"] for x in runs])),
            }
        )
    if synth_sizes:
        blocks = list(iter_blocks(rows=max(synth_sizes), features=18, seed=0))
        X = np.vstack([b[0] for b in blocks])
        y = np.where(np.concatenate([b[1] for b in blocks]) > 0, 1.0, -1.0)
        for size in synth_sizes:
            run = _spa(X[:size], y[:size], 0)
            rows.append(
                {
                    "data": "generated 18-feature stream",
                    "rows": size,
                    "runs": 1,
                    "mistake_rate": run["mistake_rate"],
                    "mistake_std": 0.0,
                    "n_support": float(run["n_support"]),
                    "seconds": run["seconds"],
                }
            )
    result = {
        "study": "susy-size",
        "beta": BETA,
        "paper": {"rows": 1_000_000, "mistake_rate": 34.57, "mistake_std": 0.36, "n_support": 1978.8},
        "rows": rows,
    }
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return result


def markdown(result: dict) -> str:
    p = result["paper"]
    lines = [
        "| data | rows T | runs | SPA mistake % | #SV (16 kernels) | T / 300 × 16 bound | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        bound = r["rows"] / result["beta"] * 16
        rate = f"{r['mistake_rate']:.2f} ± {r['mistake_std']:.2f}"
        lines.append(
            f"| {r['data']} | {r['rows']:,} | {r['runs']} | {rate} | {r['n_support']:,.0f} | {bound:,.0f} | "
            f"{r['seconds']:.2f} |"
        )
    rate = f"{p['mistake_rate']:.2f} ± {p['mistake_std']:.2f}"
    lines.append(
        f"| paper: UCI SUSY subsample | {p['rows']:,} | 10 | {rate} | {p['n_support']:,.1f} | "
        f"{p['rows'] / result['beta'] * 16:,.0f} | - |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(run_susy_study()))
