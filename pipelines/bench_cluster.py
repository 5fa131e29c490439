"""``make bench`` part 2: the Dask engine against the in-process engine (issue: scaling report).

* SPA (β=300) on a generated 1,000,000 × 18 stream and OMKC (D,D) on a9a + a9a.t (48,842 × 123),
  both read from zarr, block 1024: in-process ``LocalEngine`` (block-sync, numba's default threads)
  vs ``DaskEngine`` on 1 and 2 worker processes (``omkl cluster up``, one thread each).
* Block-size sweep, SPA (β=3) on a generated 200,000 × 4 stream on 2 workers: throughput, and the
  mistake rate against the in-process sequential-sampling run (the cost of block-sync's delay).

Each cluster is started and stopped here; every job is preceded by a short warm-up job so numba's
cached kernels are loaded in the workers. Results: ``benchmarks/results/cluster.json``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from cluster.local import connect, down, up
from storage import ingest
from storage.datadir import data_dir
from storage.synth import synthesize

from .run import run_job
from .submit import submit_job

SWEEP = (256, 1024, 4096, 16384)


def _local(algo, data, params, block_size, block_sync=True) -> dict:
    run_job(algo, str(data), params={**params, "block_sync": block_sync}, block_size=block_size, seed=0,
            scaling="none", limit=2000, show_progress=False)  # warm-up: numba's kernels loaded
    r = run_job(algo, str(data), params={**params, "block_sync": block_sync}, block_size=block_size, seed=0,
                scaling="none", show_progress=False)
    return {"engine": "local" + ("" if block_sync else " (sequential sampling)"), "block_size": block_size,
            "seconds": r["seconds"], "instances_per_second": r["instances_per_second"],
            "mistake_rate": r["mistake_rate"], "n_support": r["n_support"]["total"]}


def _dask(client, algo, data, params, block_size, out_dir, workers) -> dict:
    submit_job(client, algo, data, out_dir / "warm", params=params, block_size=block_size, seed=0, limit=2000,
               checkpoint_every=0, overwrite=True, show_progress=False)
    r = submit_job(client, algo, data, out_dir / "model", params=params, block_size=block_size, seed=0,
                   checkpoint_every=0, overwrite=True, show_progress=False)
    return {"engine": f"dask {workers} worker(s)", "block_size": block_size, "seconds": r["seconds"],
            "instances_per_second": r["instances_per_second"], "mistake_rate": r["mistake_rate"],
            "n_support": r["n_support"]["total"], "shards": r["shards"], "rounds": r["rounds"],
            "shard_compute_seconds": r["shard_compute_seconds"], "shard_io_seconds": r["shard_io_seconds"],
            "coordinator_ms_per_round": r["coordinator_ms_per_round"],
            "overhead_ms_per_round": r["overhead_ms_per_round"]}


def run_cluster_bench(results_dir=Path("benchmarks/results"), log=print) -> dict:
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    out = {"measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "comparisons": [], "sweep": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        stream1m, a9a, stream200k = tmp / "synth1m", tmp / "a9a", tmp / "synth200k"
        synthesize(stream1m, rows=1_000_000, features=18, seed=0)
        _concat([data_dir() / "a9a" / "a9a.gz", data_dir() / "a9a" / "a9a.t.gz"], a9a)
        synthesize(stream200k, rows=200_000, features=4, seed=0, noise=0.01)
        cases = [("SPA, generated 1,000,000 x 18, beta 300", "spa", stream1m, {"beta": 300.0}),
                 ("OMKC (D,D), a9a + a9a.t 48,842 x 123", "omkc", a9a, {"update": "D", "combination": "D"})]
        rows = {name: [_local(algo, data, params, 1024)] for name, algo, data, params in cases}
        for name, row in rows.items():
            log(f"{name}: local {row[0]['seconds']:.1f} s")
        for workers in (1, 2):
            state = up(tmp / f"cluster{workers}", workers=workers, threads=1)
            try:
                with connect(state["scheduler_address"]) as client:
                    for name, algo, data, params in cases:
                        rows[name].append(_dask(client, algo, data, params, 1024, tmp / "m", workers))
                        log(f"{name}: dask {workers} worker(s) {rows[name][-1]['seconds']:.1f} s")
                    if workers == 2:
                        for bs in SWEEP:
                            out["sweep"].append(_dask(client, "spa", stream200k, {}, bs, tmp / "m", workers))
                            log(f"sweep block {bs}: {out['sweep'][-1]['seconds']:.1f} s")
            finally:
                down(tmp / f"cluster{workers}")
        out["comparisons"] = [{"case": name, "runs": runs} for name, runs in rows.items()]
        out["sweep_reference"] = _local("spa", stream200k, {}, 1024, block_sync=False)
    (results_dir / "cluster.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


def _concat(files, out):
    """One dataset from LIBSVM files (a9a + a9a.t: the decompressed texts, one after the other)."""
    import gzip

    text = out.with_suffix(".libsvm")
    with open(text, "wb") as fh:
        for f in files:
            fh.write(gzip.open(f).read())
    ingest(text, out, fmt="libsvm")


def markdown(result: dict) -> list[str]:
    lines = ["", "## Dask engine vs in-process engine", "",
             "Same job, same stream order, block 1024; the models are bit-identical (tested). `local` is the",
             "in-process engine with numba's default threads; `dask N` runs N worker processes with one thread",
             "each. Per round: coordinator = its own combining work; overhead = round wall time minus the",
             "slowest shard's work (messages, scheduling).", "",
             "| case | engine | seconds | instances/s | vs local | shard compute s | coordinator ms/round | "
             "overhead ms/round | mistake % |",
             "|---|---|---|---|---|---|---|---|---|"]
    for comp in result["comparisons"]:
        base = comp["runs"][0]["instances_per_second"]
        for r in comp["runs"]:
            shard = ", ".join(f"{s:.1f}" for s in r.get("shard_compute_seconds", [])) or "-"
            coord = f"{r['coordinator_ms_per_round']:.2f}" if "coordinator_ms_per_round" in r else "-"
            over = f"{r['overhead_ms_per_round']:.1f}" if "overhead_ms_per_round" in r else "-"
            lines.append(f"| {comp['case']} | {r['engine']} | {r['seconds']:.1f} | {r['instances_per_second']:,.0f} | "
                         f"{r['instances_per_second'] / base:.2f}x | {shard} | {coord} | {over} | "
                         f"{100 * r['mistake_rate']:.2f} |")
    ref = result["sweep_reference"]
    lines += ["", "Block-size sweep: SPA (beta 3) on a generated 200,000 x 4 stream (noise 0.01), 2 workers. Inside",
              "a block, kernels are sampled with the block-start weights (block-sync); the in-process",
              f"sequential-sampling run makes {100 * ref['mistake_rate']:.2f} % mistakes "
              f"({ref['instances_per_second']:,.0f} inst/s, {ref['n_support']:,} SVs). Rounds are at most 1,024 rows.", "",
              "| block | seconds | instances/s | rounds | overhead ms/round | mistake % | #SV |", "|---|---|---|---|---|---|---|"]
    for r in result["sweep"]:
        lines.append(f"| {r['block_size']} | {r['seconds']:.1f} | {r['instances_per_second']:,.0f} | {r['rounds']} | "
                     f"{r['overhead_ms_per_round']:.1f} | {100 * r['mistake_rate']:.2f} | {r['n_support']:,} |")
    return lines
