"""``make bench-accuracy``, the online half: whole-stream mistake rates of the default online
algorithms beside the best fixed setting of the defaults study and river's pipelines.

Per shared stream of 10,000 rows or more (:data:`STREAMS`), one test-then-train pass of SPA, OMKC (S,S),
OM-2 and BPAS exactly as ``omkl run --algo A --data NAME`` makes it (:class:`~omkl_dist.job.Job` with
the defaults of today, :class:`~omkl_dist.runner.LocalRunner`; seed 0), and -- when ``river`` is
installed (the ``bench`` extra) -- river's ``StandardScaler | LogisticRegression``, Hoeffding adaptive
tree and adaptive random forest, test then train on the same permuted rows, raw (the job's data
reader with ``scaling="none"``: river's pipeline scales online by itself; the trees need no scaling).
The "best fixed" column is the lowest mean mistake rate over the fixed combinations of a whole-stream
defaults study (``omkl study defaults --max-rows all``) whose JSON summary is in ``benchmarks/results``;
without one it says "not measured" (this benchmark does not run the study).

Every run is one line of ``online-accuracy.jsonl``; a rerun skips the runs already there with the same
job document (a changed default is a new job, measured again) or the same river version: resumable.
Seconds are single runs on a shared 2-core machine.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS

STREAMS = ("codrna", "ijcnn1", "a9a", "susy", "w7a")
# row label -> (`omkl run --algo`, the options given, the defaults study's name for it)
OURS = {
    "SPA": ("spa", {}, "spa"),
    "OMKC (S,S)": ("omkc", {"update": "S", "combination": "S"}, "omkc-ss"),
    "OM-2": ("om2", {}, "om2"),
    "BPAS": ("bpas", {}, "bpas"),
}
RIVER = ("river LR", "river HAT", "river ARF")
SEED = 0
SECTION = "## Online accuracy"
RUNS = "online-accuracy.jsonl"


def has_river() -> bool:
    return importlib.util.find_spec("river") is not None


def default_job(label: str, stream: str):
    """The job ``omkl run --algo ALGO [options] --data STREAM`` runs for a row label: every other
    setting at today's default."""
    from omkl_dist.job import DataWindow, Job

    algo, options, _ = OURS[label]
    return Job.build(algo, options, data=DataWindow(stream), seed=SEED)


def run_ours(label: str, stream: str) -> dict:
    from omkl_dist.runner import LocalRunner

    job = default_job(label, stream)
    t0 = time.perf_counter()
    result = LocalRunner().fit(job, stream)
    seconds = time.perf_counter() - t0
    rows, mistakes = result.accounting.rows, result.accounting.mistakes
    return {"rows": rows, "mistake_rate": mistakes / rows, "seconds": seconds, "settings": result.job.to_dict()}


def river_model(label: str):
    """A fresh river pipeline for a row label (river's defaults; the trees' seeds fixed)."""
    from river import compose, forest, linear_model, preprocessing, tree

    if label == "river LR":
        return compose.Pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression())
    if label == "river HAT":
        return tree.HoeffdingAdaptiveTreeClassifier(seed=SEED)
    return forest.ARFClassifier(seed=SEED)


def stream_rows(stream: str, block_size: int):
    """The rows ``omkl run`` learns from (same permutation, same seed), raw: (dict row, ±1 label)."""
    import scipy.sparse as sp

    from omkl_dist.storage.job_data import load_job_data

    data = load_job_data(stream, feed_rows=block_size, seed=SEED, permute=True)  # (raw features)
    for X, y in data.blocks:
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            for i in range(X.shape[0]):
                lo, hi = X.indptr[i], X.indptr[i + 1]
                yield dict(zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist(), strict=True)), bool(y[i] > 0)
        else:
            for row, label in zip(np.asarray(X), y, strict=True):
                yield dict(enumerate(row.tolist())), bool(label > 0)


def run_river(label: str, stream: str) -> dict:
    """Test then train, one row at a time, over the job's permuted rows."""
    model = river_model(label)
    block = default_job("SPA", stream).block_size
    rows = mistakes = 0
    t0 = time.perf_counter()
    for x, label_true in stream_rows(stream, block):
        mistakes += model.predict_one(x) != label_true  # None (nothing learnt yet) counts as a mistake
        model.learn_one(x, label_true)
        rows += 1
    return {"rows": rows, "mistake_rate": mistakes / rows, "seconds": time.perf_counter() - t0}


def run_key(stream: str, label: str) -> str:
    """What makes a stored run still valid: our job document, or river's version."""
    if label in OURS:
        return json.dumps(default_job(label, stream).to_dict(), sort_keys=True)
    import river

    return f"river {river.__version__}"


def run(streams, *, only=None, log=print) -> dict:
    """Run every (stream, row) not yet in the JSONL log (``only``: those row labels); return the
    summary report of every row logged for the streams."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / RUNS
    done = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done[(r["data"], r["algo"], r["key"])] = r
    labels = [*OURS, *(RIVER if has_river() else ())]
    measured = {}
    for stream in streams:
        for label in labels:
            key = run_key(stream, label)
            if (stream, label, key) not in done and (only is None or label in only):
                row = run_ours(label, stream) if label in OURS else run_river(label, stream)
                done[(stream, label, key)] = {"data": stream, "algo": label, "key": key, **row}
                with path.open("a") as f:
                    f.write(json.dumps(done[(stream, label, key)]) + "\n")
                log(f"{stream} {label}: {100 * row['mistake_rate']:.2f} % in {row['seconds']:.1f} s")
            if (stream, label, key) in done:
                measured[(stream, label)] = done[(stream, label, key)]
    return summarise(measured, streams, labels)


def best_fixed(results: Path = RESULTS) -> dict:
    """{(algorithm key, stream): (mistake %, combination)} from a whole-stream defaults study's JSON
    summary in ``results`` (``max_rows`` null), of the settings a job runs the algorithm with (the
    study's default unit); empty when there is none."""
    from omkl_dist.pipelines.studies.defaults_markdown import default_units, units_of

    best: dict = {}
    for path in sorted(results.glob("*.json")):
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not (isinstance(report, dict) and "tables" in report and report.get("max_rows", 0) is None):
            continue
        for unit in default_units(report):  # the settings a job runs (SPA: its mistake-discounted Hedge)
            algo = units_of(report)[unit]["algorithm"]
            for stream, cells in report["tables"][unit].get("rows", {}).items():
                means = {c: v["mean"] for c, v in cells.items() if isinstance(v, dict) and v.get("mean") is not None}
                if means:
                    combination = min(means, key=means.__getitem__)
                    best[(algo, stream)] = (means[combination], combination, path.name)
    return best


def summarise(measured: dict, streams, labels) -> dict:
    fixed = best_fixed()
    table = {}
    for stream in streams:
        rows = {}
        for label in labels:
            r = measured.get((stream, label))
            if r is None:
                continue
            rows[label] = {"mistake_rate": r["mistake_rate"], "seconds": r["seconds"], "rows": r["rows"]}
            if label in OURS:
                got = fixed.get((OURS[label][2], stream))
                rows[label]["best_fixed"] = None if got is None else {"percent": got[0], "combination": got[1]}
                rows[label]["source"] = None if got is None else got[2]
        table[stream] = rows
    return {"seed": SEED, "streams": table}


DESCRIPTION = (
    "Whole-stream test-then-train mistake rate (%), one pass, seed 0, every setting at its default "
    "(`omkl run --algo A --data NAME`); *best fixed*: the lowest mean of the six fixed combinations in a "
    "whole-stream defaults study's summary (`omkl study defaults --max-rows all`; SPA's with a job's "
    "`hedge_loss='mistake'`), or not measured. river: "
    "its pipelines, test then train on the same permuted rows, raw. Seconds: single runs on a shared "
    "2-core machine."
)


def markdown(report: dict) -> list[str]:
    """BENCHMARKS.md's section from ``online-accuracy.json``."""
    streams = [s for s in report["streams"] if report["streams"][s]]
    labels = [*OURS, *RIVER]
    head = f"{SECTION} (benchmarks/bench_stream_accuracy.py, results/online-accuracy.json)"
    lines = [
        "",
        head,
        "",
        DESCRIPTION,
        "",
        "| algorithm | " + " | ".join(streams) + " |",
        "|---|" + "---|" * len(streams),
    ]
    for label in labels:
        if not any(label in report["streams"][s] for s in streams):
            continue
        cells = []
        for s in streams:
            r = report["streams"][s].get(label)
            if r is None:
                cells.append("-")
                continue
            cell = f"{100 * r['mistake_rate']:.2f} ({r['seconds']:.0f} s)"
            if label in OURS:
                b = r["best_fixed"]
                cell += "; best fixed " + ("not measured" if b is None else f"{b['percent']:.2f} ({b['combination']})")
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    for s in streams:
        rows = report["streams"][s]
        river = [label for label in RIVER if label in rows]
        if "SPA" in rows and river:
            best = min(river, key=lambda label: rows[label]["mistake_rate"])
            spa, theirs = 100 * rows["SPA"]["mistake_rate"], 100 * rows[best]["mistake_rate"]
            verdict = "fewer" if spa < theirs else "not fewer"
            lines.append(
                f"- {s}: the default SPA makes {spa:.2f} %, {verdict} than river's best pipeline measured "
                f"({best}, {theirs:.2f} %)."
            )
    return [*lines, ""]  # (the blank line before the next section)
