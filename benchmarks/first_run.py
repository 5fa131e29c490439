"""A fresh checkout's first ``omkl run spa`` on a 1,000-row file, compilation included (issue 39).

The console script (this venv's ``omkl``) runs with numba's cache pointed at an empty folder, as in
a fresh clone, alternately alone (``OMKL_COMPILE_AHEAD=0``: one process compiles everything) and
with its compile-ahead helper (:mod:`omkl_dist.pipelines.compile_ahead`); each run's wall seconds,
CPU seconds (the run and the helper, ``wait4``'s usage of the child and what it reaped) and the
1-minute load average when it started. The rows: 1,000 rows of cod-rna drawn with a fixed seed
(``OMKL_DATA_DIR``), or 1,000 generated rows of 8 features without it.

    python -m benchmarks.first_run [--repeats 3] [--out benchmarks/results/first-run.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS

ROWS = 1000
MEASURES = ("wall_s", "cpu_s", "run_cpu_s", "helper_cpu_s")
OMKL = Path(sys.executable).with_name("omkl")


def rows_file(folder: Path) -> tuple[Path, str]:
    """The 1,000-row file (label first, space-separated) and where its rows come from."""
    from omkl_dist.storage import read_dataset, resolve_dataset

    out = folder / "rows-1000.txt"
    try:
        ds = read_dataset(resolve_dataset("codrna"))
        X, y, source = np.asarray(ds.X), np.asarray(ds.labels), "cod-rna, 1,000 rows drawn with seed 0"
    except Exception:  # (no datasets folder: generated rows)
        rng = np.random.default_rng(0)
        X = rng.normal(size=(ROWS, 8))
        y, source = np.where(X[:, 0] + X[:, 1] > 0, 1, -1), "generated, 1,000 x 8"
    pick = np.random.default_rng(0).choice(len(y), size=ROWS, replace=False)
    np.savetxt(out, np.column_stack([y[pick], X[pick]]), fmt="%.10g")
    return out, source


def cold_run(data: Path, helper: bool) -> dict:
    """One ``omkl run spa`` on an empty cache: wall and CPU seconds, load, how it compiled. CPU: the
    children's usage before and after (runs are sequential: only this one ended in between; it
    counts the helper, which the run reaps)."""
    with tempfile.TemporaryDirectory(prefix="omkl-first-run-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "OMKL_COMPILE_AHEAD": "1" if helper else "0"}
        command = [str(OMKL), "run", "spa", "--data", str(data), "--trace-out", f"{cache}/trace.json"]
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"omkl run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    compiled = [line for line in proc.stderr.splitlines() if line.startswith("compiling took")]
    found = re.search(r"([0-9.]+) s of CPU", compiled[-1]) if compiled else None
    helper_cpu = float(found.group(1)) if found else 0.0
    return {
        "compile_ahead": helper,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        # the run's own and its helper's: on two free cores the wall time follows the larger
        "run_cpu_s": round(cpu - helper_cpu, 2),
        "helper_cpu_s": helper_cpu,
        "load_average": round(load, 2),
        "compiling": compiled[-1] if compiled else "",
        "mistake_rate": next(line.split()[2] for line in proc.stdout.splitlines() if "mistake rate" in line),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "first-run.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="omkl-first-run-data-") as folder:
        data, source = rows_file(Path(folder))
        runs = []
        for i in range(args.repeats):  # alternately, so both see the same load over time
            for helper in (False, True):
                runs.append({"repeat": i, **cold_run(data, helper)})
                print(json.dumps(runs[-1]), flush=True)
    best = {
        name: {key: min(r[key] for r in runs if r["compile_ahead"] == helper) for key in MEASURES}
        for name, helper in (("alone", False), ("compile_ahead", True))
    }
    report = {
        "data": source,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "minimum": best,
        "runs": runs,
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(best))


if __name__ == "__main__":
    main(sys.argv[1:])
