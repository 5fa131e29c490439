"""``make bench-scale``: how the Dask engine scales, measured on 1, 2, ... N workers (N: this machine's
cores) and projected to 64 by a cost model (:mod:`benchmarks.scale_model`).

Jobs (seed 0, block 1024, raw features, one thread per worker as ``omkl cluster up`` starts them):

* SPA (beta 300) on the generated 1,000,000 x 18 stream;
* OMKC (S,S) on the demo's generated 200,000 x 4 stream (noise 0.01);
* OM-2 on a generated 26-class 200,000 x 16 problem (``make_classification``, standardised);
* OKS on the 1,000,000 x 18 stream's first 200,000 rows;
* BPAS (budget 100, kernel-split rounds) on the 1,000,000 x 18 stream;
* FOGD (its defaults, kernel-split rounds) on the same stream: a constant-memory learner for long streams.

Each job runs in-process (numba's default threads: every core) and on a cluster of W real ``dask
worker`` processes for each W, after a short warm-up job (numba's cached kernels loaded). The
coordinator records every round's costs (:func:`omkl_dist.distributed.coordinator.round_record`):
each shard's compute (thread CPU time) and I/O, the lead's serial part, the coordinator's time, the
message time and the lead's wait. The model fitted on them predicts the measured runs and projects
4 ... 64 workers. Results: ``results/scale.json``, ``results/scale-speedup.png`` and BENCHMARKS.md's
section. ``--shorter N``: every stream N times shorter (on a machine too busy for the full run);
``--quick`` (or ``OMKL_BENCH_QUICK=1``): 20 times shorter, a check of the machinery.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_cluster import bench_job
from benchmarks.common import RESULTS, classification, replace_section
from benchmarks.scale_model import PROJECTED, CostModel, RunCosts, projection, validate
from omkl_dist.cluster.local import connect, down, up
from omkl_dist.distributed import DaskRunner
from omkl_dist.distributed.rounds import splits_rows
from omkl_dist.job import EngineOptions
from omkl_dist.pipelines.run import run_job
from omkl_dist.storage import ingest
from omkl_dist.storage.synth import synthesize

SECTION = "## Scale-out of the Dask engine"
PLOT = "scale-speedup.png"
# key -> (label, algo, params, stream, rows of it (None: all))
JOBS = {
    "spa": ("SPA (beta 300), generated 1,000,000 x 18", "spa", {"beta": 300.0}, "synth1m", None),
    "omkc-ss": (
        "OMKC (S,S), generated 200,000 x 4 (demo)",
        "omkc",
        {"update": "S", "combination": "S"},
        "synth200k",
        None,
    ),
    "om2": ("OM-2, generated 26 classes, 200,000 x 16", "om2", {}, "k26", None),
    "oks": ("OKS, generated 1,000,000 x 18, first 200,000", "oks", {}, "synth1m", 200_000),
    "bpas": ("BPAS (budget 100, kernel-split), generated 1,000,000 x 18", "bpas", {"budget": 100}, "synth1m", None),
    "fogd": ("FOGD (13 gaussians x 100 features, kernel-split), generated 1,000,000 x 18", "fogd", {}, "synth1m", None),
}
STREAM_ROWS = {"synth1m": 1_000_000, "synth200k": 200_000, "k26": 200_000}
QUICK = 20  # --quick: streams this many times shorter
WARM_ROWS = 2000
BLOCK = 1024


def worker_counts(cores: int | None = None) -> list[int]:
    """1, 2, ... the machine's cores (those this process may run on)."""
    cores = cores or len(os.sched_getaffinity(0))
    return list(range(1, max(cores, 1) + 1))


def _streams(tmp: Path, shorter: int) -> dict[str, Path]:
    rows = {name: n // shorter for name, n in STREAM_ROWS.items()}
    out = {name: tmp / name for name in rows}
    synthesize(out["synth1m"], rows=rows["synth1m"], features=18, seed=0)
    synthesize(out["synth200k"], rows=rows["synth200k"], features=4, seed=0, noise=0.01)
    _classes(out["k26"], rows["k26"], 26)
    return out


def _classes(out: Path, rows: int, n_classes: int) -> None:
    """:func:`~benchmarks.common.classification` ``rows`` long, ingested."""
    import pandas as pd

    X, y = classification(n_classes, rows)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["label"] = y
    ingest(frame, out, label_column="label")


def _limit(rows: int | None, shorter: int) -> int | None:
    return None if rows is None else rows // shorter


def _in_process(algo, data, params, limit) -> dict:
    run_job(bench_job(algo, data, params, BLOCK, WARM_ROWS), str(data), show_progress=False)  # numba loaded
    r = run_job(bench_job(algo, data, params, BLOCK, limit), str(data), show_progress=False)
    return {"seconds": r["seconds"], "mistakes": r["mistakes"], "n_support": r["n_support"]["total"]}


def _on_cluster(client, algo, data, params, limit, workers) -> dict:
    """One job on the cluster (after a warm-up job): its wall time, outcome and every round's costs."""
    once = EngineOptions(checkpoint_every=0)
    runner = DaskRunner(client)
    runner.fit(bench_job(algo, data, params, BLOCK, WARM_ROWS, once), str(data))
    load = os.getloadavg()[0]
    result = runner.fit(bench_job(algo, data, params, BLOCK, limit, once), str(data))
    model, accounting = result.model, result.accounting
    return {
        "workers": workers,
        "shards": accounting.shards,
        "seconds": accounting.seconds,
        "mistakes": int(model.mistakes_),
        "n_support": int(model.n_support_.sum()),
        "kernels": len(model.active_kernel_names_),
        "splits_rows": splits_rows(model.engine_.state()[1]),
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "per_round": accounting.timing["per_round"],
    }


def measure(jobs=tuple(JOBS), workers=None, shorter=1, log=print) -> dict:
    """Every job in-process and on 1 ... N workers, its streams ``shorter`` times shorter; the raw records."""
    workers = workers or worker_counts()
    out = {"measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cores": os.cpu_count(), "jobs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        streams = _streams(tmp, shorter)
        for key in jobs:
            label, algo, params, stream, rows = JOBS[key]
            local = _in_process(algo, streams[stream], params, _limit(rows, shorter))
            out["jobs"][key] = {
                "label": label,
                "shorter": shorter,
                "in_process": local,
                "runs": [],
                "measured": out["measured"],
            }
            log(f"{label}: in-process {local['seconds']:.1f} s")
        for w in workers:
            state = up(tmp / f"cluster{w}", workers=w, threads=1)
            try:
                with connect(state["scheduler_address"]) as client:
                    for key in jobs:
                        _, algo, params, stream, rows = JOBS[key]
                        run = _on_cluster(client, algo, streams[stream], params, _limit(rows, shorter), w)
                        out["jobs"][key]["runs"].append(run)
                        log(f"{JOBS[key][0]}: {w} worker(s) {run['seconds']:.1f} s (load {run['load_before']:.1f})")
            finally:
                down(tmp / f"cluster{w}")
    return out


def model_of(job: dict) -> tuple[CostModel, list[RunCosts]]:
    """The job's cost model fitted on its measured runs (a kernel-split job shares its work by
    kernel: at most one shard per kernel)."""
    runs = [RunCosts.of(r["workers"], r["seconds"], r["per_round"]) for r in job["runs"]]
    kernels = None if job["runs"][0]["splits_rows"] else job["runs"][0]["kernels"]
    return CostModel.fit(runs, shards_max=kernels), runs


def analyse(raw: dict) -> dict:
    """Per job: the fitted model, its validation on the measured runs, its projection, the serial
    fractions, and the measured runs against the in-process engine (same model: checked)."""
    out = {}
    for key, job in raw["jobs"].items():
        model, runs = model_of(job)
        local = job["in_process"]
        out[key] = {
            "label": job["label"],
            "shorter": job.get("shorter", 1),
            "model": model.to_dict(),
            "validation": validate(model, runs),
            "projection": projection(model),
            "serial_fraction": model.serial_fraction(),
            "compute_serial_fraction": model.compute_serial_fraction(),
            "in_process_seconds": local["seconds"],
            "vs_in_process": {r["workers"]: local["seconds"] / r["seconds"] for r in job["runs"]},
            "same_model": all(
                (r["mistakes"], r["n_support"]) == (local["mistakes"], local["n_support"]) for r in job["runs"]
            ),
            "costs": [vars(r) for r in runs],
        }
    return out


def plot(analysis: dict, path: Path) -> None:
    """Projected speedup against workers, one line per job, beside the ideal (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(PROJECTED, PROJECTED, color="0.7", linestyle="--", label="ideal")
    for job in analysis.values():
        points = job["projection"]
        label = job["label"] + (f" (stream 1/{job['shorter']})" if job.get("shorter", 1) > 1 else "")
        ax.plot([p["workers"] for p in points], [p["speedup"] for p in points], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(PROJECTED, [str(w) for w in PROJECTED])
    low = min(p["speedup"] for job in analysis.values() for p in job["projection"])
    ticks = [2.0**k for k in range(min(0, int(np.floor(np.log2(low)))), 7)]  # below 1: a job that slows down
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_xlabel("workers (one core each)")
    ax.set_ylabel("projected speedup over 1 worker")
    ax.set_title("Dask engine: projected speedup (cost model fitted on measured rounds)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _when(raw: dict) -> str:
    """When the jobs were measured: one time, or each run's jobs (``--jobs`` remeasures some, the
    others keep theirs)."""
    runs: dict[str, list[str]] = {}
    for key, job in raw["jobs"].items():
        runs.setdefault(job.get("measured", raw["measured"]), []).append(job.get("label", key).split(", generated")[0])
    if len(runs) == 1:
        return next(iter(runs))
    return "; ".join(f"{', '.join(labels)}: {when}" for when, labels in sorted(runs.items()))


def markdown(result: dict) -> list[str]:
    """BENCHMARKS.md's section from ``scale.json``."""
    raw, analysis = result["raw"], result["analysis"]
    loads = [r["load_before"] for job in raw["jobs"].values() for r in job["runs"]]
    lines = [
        "",
        f"{SECTION} (benchmarks/bench_scale.py, `make bench-scale`, results/scale.json)",
        "",
        f"Measured {_when(raw)} on {raw['cores']} cores shared with other work (1-minute load average "
        f"{min(loads):.1f} to {max(loads):.1f} when the runs started): every job in-process and on 1 ... "
        f"{max(r['workers'] for job in raw['jobs'].values() for r in job['runs'])} `dask worker` processes "
        "(one thread each). A cost model (benchmarks/scale_model.py) fitted on every round's costs -- the "
        "shards' compute (thread CPU time) and I/O, the lead shard's serial part (a row-split round's "
        "recurrence), the coordinator's time and the message time -- predicts the wall time on W workers "
        "with W cores: `setup + serial + parallel / W + coordinator + io + rounds x (message0 + message1 (W - 1))`, "
        "where a job's lead starts its recurrence on its own rows while the others score theirs (pipelined: SPA, "
        "OMKC's sampled updates) with `serial + parallel x lag / ((1 + lag)^W - 1)` (lag = serial / parallel) in "
        "place of `serial + parallel / W`: the coordinator shares the other shards' rows in a geometric chain, "
        "each range 1 + lag times the one before, so that each shard's scores arrive as the lead's recurrence "
        "reaches them and the lead's core does the recurrence beside the first range's scoring "
        "(omkl_dist/distributed/balance.py; on 2 workers the same split as before); a "
        "measured run is predicted at its shards' measured share of a core (stretch: their compute's wall over "
        "CPU time; the terms timed by the wall clock are counted at that share too), the projection at a core "
        "per worker. With only 1 and 2 workers measured the message line counts the first remote hop (1 worker "
        "calls its lead in-process) as a per-worker cost: pessimistic for many workers, most for kernel-split "
        "jobs (BPAS), whose every round messages every shard. "
        "Serial fraction: the share of the 1-worker time more workers do not shrink (serial work, I/O every "
        "shard repeats, messages); compute serial: the lead's and coordinator's share of the compute alone.",
        "",
        "| job | in-process s | 1 worker s (model) | 2 workers s (model) | 2 workers vs in-process | "
        + " | ".join(f"{w}x proj." for w in PROJECTED[2:])
        + " | serial fraction | compute serial | same model |",
        "|---|---|---|---|---|" + "---|" * len(PROJECTED[2:]) + "---|---|---|",
    ]
    for key, job in analysis.items():
        measured = {v["workers"]: v for v in job["validation"]}
        shorter = raw["jobs"][key]["shorter"]
        label = job["label"] + (f" **(stream {shorter} times shorter)**" if shorter > 1 else "")
        cells = [
            f"{measured[w]['measured']:.1f} ({measured[w]['predicted']:.1f}, {100 * measured[w]['error']:+.0f} %)"
            if w in measured
            else "-"
            for w in (1, 2)
        ]
        ratio = job["vs_in_process"].get(2, job["vs_in_process"].get("2"))
        speedups = [f"{p['speedup']:.1f}" for p in job["projection"] if p["workers"] in PROJECTED[2:]]
        lines.append(
            f"| {label} | {job['in_process_seconds']:.1f} | {' | '.join(cells)} | "
            f"{'-' if ratio is None else f'{ratio:.2f}x'} | {' | '.join(speedups)} | "
            f"{100 * job['serial_fraction']:.1f} % | {100 * job['compute_serial_fraction']:.1f} % | "
            f"{'yes' if job['same_model'] else 'NO'} |"
        )
    if max(loads) > raw["cores"]:
        lines += [
            "",
            f"The machine was oversubscribed (load above its {raw['cores']} cores): the in-process and cluster runs "
            "ran minutes apart at different loads, so `2 workers vs in-process` says more about the load then than "
            "about the engines; the model's terms are CPU time or scaled to a core's time (stretch).",
        ]
    lines += [
        "",
        "Per job, the fitted costs (seconds over the whole job; message per round in ms):",
        "",
        "| job | rounds | setup | serial (lead) | coordinator | parallel | io | message0 ms | message1 ms/worker "
        "| pipelined | stretch (1, 2 ... workers) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for job in analysis.values():
        m = job["model"]
        stretch = ", ".join(f"{v['stretch']:.1f}" for v in job["validation"])
        lines.append(
            f"| {job['label']} | {m['rounds']} | {m['setup']:.2f} | {m['serial']:.2f} | {m['coordinator']:.2f} | "
            f"{m['parallel']:.2f} | {m['io']:.2f} | {1000 * m['message0']:.2f} | {1000 * m['message1']:.2f} | "
            f"{'yes' if m.get('pipelined') else 'no'} | {stretch} |"
        )
    lines += ["", f"![projected speedup vs workers](benchmarks/results/{PLOT})"]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default=",".join(JOBS), help="comma-separated subset of " + ", ".join(JOBS))
    parser.add_argument("--workers", default=None, help="comma-separated worker counts (default: 1 ... cores)")
    parser.add_argument("--shorter", type=int, default=1, help="every stream this many times shorter")
    parser.add_argument("--quick", action="store_true", default=os.environ.get("OMKL_BENCH_QUICK") == "1")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--analyse-only", action="store_true", help="refit the model on the last scale.json's runs")
    args = parser.parse_args(argv)
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = sorted(set(jobs) - set(JOBS))
    if unknown:
        parser.error(f"unknown job(s) {unknown}; choose from {', '.join(JOBS)}")
    workers = [int(w) for w in args.workers.split(",")] if args.workers else None
    shorter = QUICK if args.quick else args.shorter
    if shorter < 1:
        parser.error(f"--shorter must be >= 1, got {shorter}")
    earlier = args.results / "scale.json"
    if args.analyse_only:
        raw = json.loads(earlier.read_text())["raw"]
    else:
        raw = measure(jobs, workers, shorter, log=lambda msg: print(msg, flush=True))
    if earlier.is_file() and not args.analyse_only:  # the jobs not measured now keep their last measurement
        kept = json.loads(earlier.read_text())["raw"]
        for job in kept["jobs"].values():  # (a job measured before jobs recorded their own time: the file's)
            job.setdefault("measured", kept["measured"])
        kept = kept["jobs"]
        raw["jobs"] = {**{key: job for key, job in kept.items() if key not in raw["jobs"]}, **raw["jobs"]}
        raw["jobs"] = {key: raw["jobs"][key] for key in JOBS if key in raw["jobs"]}
    result = {"raw": raw, "analysis": analyse(raw)}
    args.results.mkdir(parents=True, exist_ok=True)
    # compact: every round's costs of every run (what --analyse-only refits) are ~2 MB indented
    (args.results / "scale.json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
    plot(result["analysis"], args.results / PLOT)
    replace_section(markdown(result), SECTION)
    for key, job in result["analysis"].items():
        at = {p["workers"]: p["speedup"] for p in job["projection"]}
        print(
            f"{key}: serial fraction {100 * job['serial_fraction']:.1f} %, projected {at[8]:.1f}x at 8, "
            f"{at[16]:.1f}x at 16, {at[64]:.1f}x at 64; validation "
            + ", ".join(f"{v['workers']}w {100 * v['error']:+.0f} %" for v in job["validation"]),
            flush=True,
        )


if __name__ == "__main__":
    main()
