"""``make demo``: the main job, end to end, on a real local Dask cluster.

1. Writes scikit-learn's bundled copy of wdbc (569 x 30) to CSV and ingests it like any user file
   (zarr + parquet + label map): the data path a user's own files take.
2. Starts a cluster of real processes (``omkl cluster up``: one ``dask scheduler``, two
   ``dask worker`` processes with one thread each) on 127.0.0.1, while SPA's and OMKC's kernels
   are compiled into numba's shared cache (once per installation; its time is printed on its own
   line, so the jobs' seconds are learning, not compiling).
3. Generates a 200,000-instance stream into zarr (``omkl data synth``'s generator, 4 features,
   a smooth nonlinear boundary, 1 % label noise = the Bayes error).
4. Submits SPA and OMKC (S,S) to the cluster (``omkl submit``: shards on the workers, a
   coordinator actor, checkpoints), with progress bars, writes both models, then runs the same
   jobs in-process and prints both side by side (same mistakes and support vectors).
5. Shuts the cluster down; no process is left behind (also on Ctrl-C or an error).
6. Two scheduled windows: the SPA model just learnt becomes version 1 of a model store, then two
   nightly windows of the same stream (60,000 new rows each) are retrained on (``omkl retrain``:
   continue the champion, gate on the window's held-out tail, publish, promote), each with its
   report and plots.
7. The champion served for a few seconds (``omkl serve --learn``): the stream's next rows sent to
   ``/v1/predict`` and, with their labels, to ``/v1/learn``; the running mistake rate, and the
   version the server publishes when it stops.
Everything printed is measured in this run.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np

from omkl_dist.cluster.local import connect, down, up
from omkl_dist.defaults import resolve_settings
from omkl_dist.job import DataWindow, Job
from omkl_dist.storage import format_info, ingest
from omkl_dist.storage.synth import synthesize

from .demo_serve import serve_champion
from .run import run_job
from .submit import submit_job
from .warmup import Background

OUT = Path("demo-output")
MARKER = ".omkl-demo"
ROWS, FEATURES, NOISE = 200_000, 4, 0.01
WINDOW = 60_000  # rows of each scheduled window
JOBS = [("SPA (budget OMKC)", "spa", {}), ("OMKC (S,S)", "omkc", {"update": "S", "combination": "S"})]


def _wdbc_csv(path: Path) -> Path:
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    labels = np.asarray(bunch.target_names)[bunch.target]  # "malignant" / "benign"
    with open(path, "w") as fh:
        fh.write(",".join(["diagnosis", *[n.replace(" ", "_") for n in bunch.feature_names]]) + "\n")
        for lab, row in zip(labels, bunch.data):
            fh.write(lab + "," + ",".join(repr(float(v)) for v in row) + "\n")
    return path


def main() -> None:
    t0 = time.perf_counter()
    if OUT.exists():  # only a folder an earlier demo made (it holds the marker) is removed
        if not (OUT / MARKER).is_file():
            raise SystemExit(
                f"error: {OUT.absolute()} exists and was not made by `make demo`; move it away "
                "(the demo writes its output there)"
            )
        shutil.rmtree(OUT)
    OUT.mkdir()
    (OUT / MARKER).write_text("made by `make demo`; the next demo replaces this folder\n")
    meta = ingest(_wdbc_csv(OUT / "wdbc.csv"), OUT / "wdbc", chunk_rows=4096)
    print(f"ingested {OUT / 'wdbc.csv'} -> {OUT / 'wdbc'}")
    print(format_info(meta))

    run_dir = OUT / "cluster"
    with Background([algo for _, algo, _ in JOBS]) as warming:  # so no job's time is the compiler's
        state = up(run_dir, workers=2, threads=1)
    print(
        f"\ncluster up: scheduler {state['scheduler_address']}, dashboard {state['dashboard']}, "
        f"2 worker processes x 1 thread (logs in {run_dir})"
    )
    line = warming.summary()
    print(line, file=sys.stderr if warming.failed else sys.stdout)
    try:
        stream = OUT / "stream200k"
        synthesize(stream, rows=ROWS, features=FEATURES, seed=0, noise=NOISE, chunk_rows=65_536)
        print(f"generated {stream}: {ROWS:,} x {FEATURES}, label noise {NOISE} (= Bayes error)\n")
        rows = []
        with connect(state["scheduler_address"]) as client:
            for name, algo, params in JOBS:
                report = submit_job(client, _job(algo, params, stream), OUT / f"model-{algo}")
                rows.append((name, report))
    finally:
        down(run_dir)
        print("cluster down: scheduler and workers stopped")
    print("the same jobs in-process (omkl run), for comparison")
    local = [run_job(_job(algo, params, stream), str(stream)) for _, algo, params in JOBS]
    print(
        f"\n{ROWS:,} instances, one pass test-then-train, block 1024, seed 0, raw features: on the 2-worker "
        "cluster and in-process"
    )
    print(
        f"  {'algorithm':<18} {'mistake %':>9} {'in-proc.':>9} {'#SV':>8} {'seconds':>8} {'in-proc.':>8} "
        f"{'inst/s':>8} {'ms/round':>8}  model"
    )
    for (name, r), here in zip(rows, local):
        same = "" if (r["mistakes"], r["n_support"]) == (here["mistakes"], here["n_support"]) else "  DIFFERS"
        print(
            f"  {name:<18} {100 * r['mistake_rate']:>9.2f} {100 * here['mistake_rate']:>9.2f} "
            f"{r['n_support']['total']:>8d} {r['seconds']:>8.1f} {here['seconds']:>8.1f} "
            f"{r['instances_per_second']:>8.0f} {r['overhead_ms_per_round']:>8.1f}  {r['model_path']}{same}"
        )
    print("  (the cluster runs the sequential algorithm: the same mistakes and support vectors as in-process;")
    print("   ms/round: time per round not spent computing on the slowest shard: messages, reading, combining)")
    _scheduled_windows(OUT / "model-spa")
    serve_champion(OUT / "store", "spa", first_row=ROWS + 2 * WINDOW, features=FEATURES, noise=NOISE, seconds=5.0)
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")


def _job(algo: str, params: dict, stream: Path) -> Job:
    """A demo job: block 1024, seed 0, raw features, the kernels as the estimator has them."""
    settings = resolve_settings(scaling="none", kernels_given=True)
    return Job.build(algo, params, data=DataWindow(str(stream)), block_size=1024, seed=0, settings=settings)


def _scheduled_windows(model_dir: Path) -> None:
    """The nightly retraining of the SPA model on two new windows of the stream."""
    from .retrain import import_model, retrain

    store = OUT / "store"
    first = import_model(store, "spa", model_dir)
    print(f"\nscheduled retraining: {model_dir} -> {store}/spa version {first['version']} (champion)")
    for night, first_row in enumerate((ROWS, ROWS + WINDOW), 1):
        window = OUT / "incoming" / f"night-{night}"
        synthesize(window, rows=WINDOW, features=FEATURES, seed=0, noise=NOISE, first_row=first_row)
        s = retrain(store, "spa", window)
        gate, drift = s["gate"], s["drift"]
        print(
            f"  night {night}: rows {first_row:,}..{first_row + WINDOW:,} of the stream -> v{s['version']} "
            f"{s['status']}; held-out mistakes {100 * gate['challenger']:.2f} % vs champion "
            f"{100 * gate['champion']:.2f} %; drift alarms {len(drift['alarms'])}; "
            f"{s['train']['instances_per_second']:,.0f} inst/s"
        )
        print(f"           report + plots: {s['report']}")


if __name__ == "__main__":
    main()
