"""``make demo``: the main job on the embedded default data, end to end.

1. Writes scikit-learn's bundled copy of wdbc (569 x 30, benign/malignant) to a CSV file,
   ingests it like any user file (zarr + parquet + label map) and prints its summary.
2. Generates a 20,000-instance nonlinear stream with ``omkl data synth``'s generator.
3. Streams both from zarr (seeded order, min-max scaling fitted on a prefix) through the Perceptron
   baselines, OMKC (D,D) / (S,S) and SPA, test-then-train, and prints the comparison table.
Everything printed is measured in this run.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

from omkl_dist.algorithms import OMKC, SPA, KernelPerceptron, PerceptronStar, PerceptronU
from omkl_dist.evaluation import progressive_score
from omkl_dist.preprocessing import Scaler
from storage import format_info, ingest, open_stream
from storage.synth import synthesize

OUT = Path("demo-output")
BLOCK = 256


def _wdbc_csv(path: Path) -> Path:
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    labels = np.asarray(bunch.target_names)[bunch.target]  # "malignant" / "benign"
    with open(path, "w") as fh:
        fh.write(",".join(["diagnosis", *[n.replace(" ", "_") for n in bunch.feature_names]]) + "\n")
        for lab, row in zip(labels, bunch.data):
            fh.write(lab + "," + ",".join(repr(float(v)) for v in row) + "\n")
    return path


def _models():
    return [
        ("Perceptron (linear)", KernelPerceptron(block_size=BLOCK)),
        ("Perceptron(u)", PerceptronU(block_size=BLOCK)),
        ("Perceptron(*)", PerceptronStar(block_size=BLOCK)),
        ("OMKC (D,D)", OMKC("D", "D", block_size=BLOCK, random_state=0)),
        ("OMKC (S,S)", OMKC("S", "S", block_size=BLOCK, random_state=0)),
        ("SPA (budget OMKC)", SPA(block_size=BLOCK, random_state=0)),
    ]


def _warm_up() -> None:
    """Load (or compile, on the first run) the numba kernels so the table times learning only."""
    rng = np.random.default_rng(0)
    X, y = rng.random((80, 3)), np.where(rng.random(80) > 0.5, 1, -1)
    for _, model in _models():
        clone(model).fit(X, y)


def _compare(directory: Path, title: str, models) -> None:
    stream = open_stream(directory, block_size=BLOCK, shuffle=True, seed=0)
    scaler = Scaler("minmax").fit_prefix(stream, min(stream.n_rows, 2000))
    print(f"\n{title}: {stream.n_rows} instances x {stream.n_features} features, one pass, block {BLOCK}, "
          "min-max scaling fitted on the first 2,000 rows")
    print(f"  {'algorithm':<20} {'mistake %':>9} {'#SV':>8} {'kernels':>7} {'seconds':>8} {'inst/s':>9}")
    for name, model in models:
        trace = progressive_score(model, stream, transform=scaler.transform)
        s = trace.summary()
        print(f"  {name:<20} {100 * s['mistake_rate']:>9.2f} {s['n_support']['total']:>8d} "
              f"{len(s['n_support']['per_kernel']):>7d} {s['seconds']:>8.2f} {s['instances_per_second']:>9.0f}")


def main() -> None:
    t0 = time.perf_counter()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    csv = _wdbc_csv(OUT / "wdbc.csv")
    meta = ingest(csv, OUT / "wdbc", chunk_rows=4096)
    print(f"ingested {csv} -> {OUT / 'wdbc'}")
    print(format_info(meta))
    synth_meta = synthesize(OUT / "synth20k", rows=20_000, features=8, seed=0, noise=0.05)
    print(f"\ngenerated {OUT / 'synth20k'}: 20,000 x 8, label noise {synth_meta['bayes_error']} (= Bayes error)")
    t1 = time.perf_counter()
    _warm_up()
    print(f"\nnumba kernels ready in {time.perf_counter() - t1:.1f} s (compiled on a first run, then cached)")
    _compare(OUT / "wdbc", "wdbc (scikit-learn's copy)", _models())
    _compare(OUT / "synth20k", "synthetic stream", [m for m in _models() if m[0].startswith(("OMKC", "SPA"))])
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
