"""``make bench``'s budget-baseline part: RBP, Forgetron, BOGD and BPAS on cod-rna and a9a with the C++
toolbox comparison's settings (issue 36: the papers' 16 kernels unnormalised, raw features, B = 100 per
kernel, rows permuted with ``numpy.random.default_rng(0)``), seconds as the minimum of 5 passes.

With ``--baseline REF`` each case is also measured on the code of git ref REF (its ``omkl_dist``
exported to a temporary folder and put first on the child's ``PYTHONPATH``), alternating with the
current code in the same run, so the before/after ratio does not depend on what else the shared
machine runs. Each measurement is a child process that warms numba up on 2,000 rows first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS

LEARNERS = ("rbp", "forgetron", "bogd", "bpas")
FILES = {
    "codrna": "codrna/cod-rna.train.dense.txt.gz",
    "a9a": "a9a/a9a.gz",
    "ijcnn1": "ijcnn1/ijcnn1_all.dense.txt.gz",
}
DATA = ("codrna", "a9a")
PARAMS = {
    "kernels": "omkc16",
    "budget": 100,
    "shuffle": False,
    "n_epochs": 1,
}  # (rows permuted here, as `omkl run`; one pass)
# the C++ comparison's step sizes (issue 36's table): BPAS's C = 0.1 (its default is 0.3), BOGD's default
LEARNER_PARAMS = {"bpas": {"eta": 0.1}}
BLOCK_SIZE = 256  # `omkl run`'s default
REPEATS = 5
LONG_SECONDS = 30.0  # passes stop once they took this long in all (at least one runs)
# the C++ toolbox's BPAS (issue 36, same machine class): seconds, mistake %
CXX_BPAS = {"codrna": (2.61, 12.82), "a9a": (3.34, 19.17)}


def measure(learner: str, data: str, params: dict | None = None) -> dict:
    """One case in this process: load, warm up, then ``REPEATS`` timed passes (the minimum is kept);
    ``params``: the estimator's (default :data:`PARAMS`)."""
    import omkl_dist
    from omkl_dist.algorithms.registry import make_estimator
    from omkl_dist.storage import read_dataset
    from omkl_dist.storage.datadir import data_dir

    params = {**PARAMS, **LEARNER_PARAMS.get(learner, {})} if params is None else params
    ds = read_dataset(data_dir() / FILES[data])
    X = np.asarray(ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X, dtype=np.float64)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = np.ascontiguousarray(X[order]), np.asarray(ds.y)[order]
    make_estimator(learner, block_size=BLOCK_SIZE, random_state=0, **params).fit(X[:2000], y[:2000])
    seconds, cpu, mistakes = [], [], None
    load = os.getloadavg()[0]
    for _ in range(REPEATS):
        model = make_estimator(learner, block_size=BLOCK_SIZE, random_state=0, **params)
        t0, c0 = time.perf_counter(), time.process_time()
        model.fit(X, y)
        seconds.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        mistakes = int(model.mistakes_)
        if sum(seconds) > LONG_SECONDS:  # (a long pass varies little: more repeats only cost time)
            break
    return {
        "learner": learner,
        "data": data,
        "params": params,
        "rows": len(y),
        "seconds": min(seconds),
        "all_seconds": seconds,
        "cpu_seconds": min(cpu),  # every thread's CPU time: on a busy shared machine, steadier than the wall
        "instances_per_second": len(y) / min(seconds),
        "mistakes": mistakes,
        "mistake_rate": mistakes / len(y),
        "load_average": load,  # (1-minute, when the case started: seconds measured at a load above the
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),  # cores present are inflated by waiting)
        "code": str(Path(omkl_dist.__file__).parent),
    }


def _use_code(folder: str) -> None:
    """Import the package ``omkl_dist`` from ``folder``: first on the path, ahead of the working
    directory (the editable install's finder answers only after the path; it still maps the other
    top-level folders, ``storage``, ``cluster`` and ``pipelines``, to the current ones: they only load
    the data here)."""
    sys.path.insert(0, folder)


def child(learner: str, data: str, code: Path | None, params: dict | None = None) -> dict:
    """:func:`measure` in a fresh interpreter (``code``: a folder whose ``omkl_dist`` it imports)."""
    env = dict(os.environ)
    if code is not None:
        env["OMKL_BENCH_CODE"] = str(code)
    extra = ["--params", json.dumps(params)] if params is not None else []
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_budget", "--one", learner, data, *extra],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _export(ref: str, folder: Path) -> Path:
    """``omkl_dist`` as of git ref ``ref``, written under ``folder``."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref, "omkl_dist"], check=True, capture_output=True)
    path = folder / "code.tar"
    path.write_bytes(archive.stdout)
    with tarfile.open(path) as tar:
        tar.extractall(folder / "code", filter="data")
    return folder / "code"


def run_budget_bench(results: Path, baseline: str | None = None, log=print) -> dict:
    path = results / "budget.json"
    notes = json.loads(path.read_text()).get("notes", []) if path.is_file() else []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        code = _export(baseline, Path(tmp)) if baseline else None
        for data in DATA:
            for learner in LEARNERS:
                after = child(learner, data, None)
                row = {**after, "before": child(learner, data, code) if code else None}
                if row["before"] is not None and row["before"]["mistakes"] != after["mistakes"]:
                    raise RuntimeError(f"{learner} on {data}: mistakes changed, {row['before']} -> {after}")
                rows.append(row)
                before = f", before {row['before']['seconds']:.2f} s" if row["before"] else ""
                log(f"{learner}-{data}: {after['seconds']:.2f} s, {after['mistakes']} mistakes{before}")
    out = {
        "params": PARAMS,
        "learner_params": LEARNER_PARAMS,
        "block_size": BLOCK_SIZE,
        "repeats": REPEATS,
        "baseline": baseline,
        "rows": rows,
        "cxx_bpas": CXX_BPAS,
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "notes": notes,  # (paragraphs written beside the table: kept until rewritten by hand)
    }
    path.write_text(json.dumps(out, indent=2) + "\n")
    return out


def markdown(result: dict) -> list[str]:
    base = result["baseline"]
    lines = [
        "",
        f"## Budget baselines (16 kernels `{result['params']['kernels']}`, B = {result['params']['budget']} per "
        f"kernel, raw features, block {result['block_size']}; min of {result['repeats']} passes"
        + "".join(
            f"; {learner} " + ", ".join(f"{k} = {v}" for k, v in params.items())
            for learner, params in result.get("learner_params", {}).items()
        )
        + ")",
        "",
        "Issue 36's comparison with the authors' C++ toolbox (its BPAS: "
        + ", ".join(f"{d} {s} s, {m} %" for d, (s, m) in result["cxx_bpas"].items())
        + "). "
        + (f"Before: the code of `{base}`, measured alternately in the same run." if base else ""),
        "",
        "| learner | data | rows | mistakes | mistake % | seconds | CPU s | instances/s | before s | before CPU s "
        "| speed-up (wall / CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        b = r["before"]
        before = (
            f"{b['seconds']:.2f} | {b['cpu_seconds']:.2f} | {b['seconds'] / r['seconds']:.1f}x / "
            f"{b['cpu_seconds'] / r['cpu_seconds']:.1f}x"
            if b
            else "- | - | -"
        )
        lines.append(
            f"| {r['learner']} | {r['data']} | {r['rows']:,} | {r['mistakes']:,} | {100 * r['mistake_rate']:.2f} | "
            f"{r['seconds']:.2f} | {r['cpu_seconds']:.2f} | {r['instances_per_second']:,.0f} | {before} |"
        )
    for note in result.get("notes", ()):  # what the run's author wrote beside it (a paragraph each)
        lines += ["", note]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", help="git ref whose code is measured alternately as 'before'")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # child mode: learner data
    parser.add_argument("--params", help=argparse.SUPPRESS)  # child mode: the estimator's parameters (JSON)
    args = parser.parse_args(argv)
    if args.one:
        if os.environ.get("OMKL_BENCH_CODE"):
            _use_code(os.environ["OMKL_BENCH_CODE"])
        print(json.dumps(measure(*args.one, json.loads(args.params) if args.params else None)))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    run_budget_bench(RESULTS, args.baseline)


if __name__ == "__main__":
    main()
