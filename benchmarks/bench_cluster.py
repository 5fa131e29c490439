"""``make bench`` part 2: the Dask engine against the in-process engine (issue: scaling report).

* SPA (β=300) on a generated 1,000,000 × 18 stream (blocks of 1024, 8192 and 16384) and OMKC (D,D) on
  a9a + a9a.t (48,842 × 123, block 1024), both read from zarr: in-process ``LocalEngine`` (numba's
  default threads) vs ``DaskRunner`` on 1 and 2 worker processes (``omkl cluster up``, one thread
  each), and OMKC (S,S) on the demo's generated 200,000 × 4 stream (block 1024). The models are the
  same bit for bit: SPA and OMKC (S,S) sample with the current weights on a cluster as in-process
  (row-split rounds); OMKC (D,D) has no sampling.
* Block-size sweep on a generated 200,000 × 4 stream on 2 workers: SPA (β=3; its rounds are whole
  blocks, growing with the rows seen up to 16,384 rows, so small blocks cost few messages, and its
  sampling does not depend on the block size) and
  OMKC (S,S) on the first 50,000 rows (rounds of one block, sequential sampling), each beside its
  in-process run at block 1024.

Each cluster is started and stopped here; every job is preceded by a short warm-up job so numba's
cached kernels are loaded in the workers. Results: ``benchmarks/results/cluster.json``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import OKS_ROWS, RESULTS
from omkl_dist.cluster.local import connect, down, up
from omkl_dist.defaults import resolve_settings
from omkl_dist.job import DataWindow, EngineOptions, Job
from omkl_dist.pipelines.run import run_job
from omkl_dist.pipelines.submit import submit_job
from omkl_dist.storage import ingest
from omkl_dist.storage.datadir import data_dir
from omkl_dist.storage.synth import synthesize

SWEEP = (256, 1024, 4096, 16384)
SWEEP_ALGOS = (("SPA (beta 3)", "spa", {}, None), ("OMKC (S,S)", "omkc", {"update": "S", "combination": "S"}, 50_000))


def bench_job(algo, data, params, block_size, limit, engine=EngineOptions()) -> Job:
    """The benchmark's job: seed 0, raw features, the kernels as the estimator has them."""
    settings = resolve_settings(scaling="none", kernels_given=True)
    window = DataWindow(str(data), stop=limit)
    return Job.build(algo, params, data=window, seed=0, block_size=block_size, settings=settings, engine=engine)


def _local(algo, data, params, block_size, block_sync, limit=None) -> dict:
    params = {**params, "block_sync": True} if block_sync else params
    run_job(bench_job(algo, data, params, block_size, 2000), str(data), show_progress=False)  # warm-up: numba loaded
    r = run_job(bench_job(algo, data, params, block_size, limit), str(data), show_progress=False)
    return {
        "engine": "local" + (" (block-sync)" if block_sync else ""),
        "block_size": block_size,
        "seconds": r["seconds"],
        "instances_per_second": r["instances_per_second"],
        "load_seconds": r["load_seconds"],
        "mistake_rate": r["mistake_rate"],
        "n_support": r["n_support"]["total"],
    }


def _dask(client, algo, data, params, block_size, out_dir, workers, limit=None) -> dict:
    once = EngineOptions(checkpoint_every=0)
    submit_job(
        client,
        bench_job(algo, data, params, block_size, 2000, once),
        out_dir / "warm",
        overwrite=True,
        show_progress=False,
    )
    r = submit_job(
        client,
        bench_job(algo, data, params, block_size, limit, once),
        out_dir / "model",
        overwrite=True,
        show_progress=False,
    )
    return {
        "engine": f"dask {workers} worker(s)",
        "block_size": block_size,
        "seconds": r["seconds"],
        "instances_per_second": r["instances_per_second"],
        "mistake_rate": r["mistake_rate"],
        "n_support": r["n_support"]["total"],
        "shards": r["shards"],
        "rounds": r["rounds"],
        "shard_compute_seconds": r["shard_compute_seconds"],
        "shard_io_seconds": r["shard_io_seconds"],
        "coordinator_ms_per_round": r["coordinator_ms_per_round"],
        "overhead_ms_per_round": r["overhead_ms_per_round"],
        "lead_wait_seconds": r["lead_wait_seconds"],
    }


def run_cluster_bench(results_dir=RESULTS, log=print, only=None) -> dict:
    """Every comparison and the block-size sweep; with ``only`` (case keys, e.g. {"oks"}) just those
    comparisons, the others and the sweep kept from the last ``cluster.json``."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    out = {"measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "comparisons": [], "sweep": [], "sweep_reference": []}
    if only is not None and (results_dir / "cluster.json").is_file():
        out = json.loads((results_dir / "cluster.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        stream1m, a9a, stream200k = tmp / "synth1m", tmp / "a9a", tmp / "synth200k"
        synthesize(stream1m, rows=1_000_000, features=18, seed=0)
        _concat([data_dir() / "a9a" / "a9a.gz", data_dir() / "a9a" / "a9a.t.gz"], a9a)
        synthesize(stream200k, rows=200_000, features=4, seed=0, noise=0.01)
        spa1m = ("SPA, generated 1,000,000 x 18, beta 300", "spa", stream1m, {"beta": 300.0})
        # key -> (case, algo, data, params, block, local block-sync: as the cluster samples, rows (None: all))
        every = {
            "spa-1024": (*spa1m, 1024, False, None),
            "spa-8192": (*spa1m, 8192, False, None),
            "spa-16384": (*spa1m, 16384, False, None),
            "omkc-dd-a9a": (
                "OMKC (D,D), a9a + a9a.t 48,842 x 123",
                "omkc",
                a9a,
                {"update": "D", "combination": "D"},
                1024,
                False,
                None,
            ),
            "omkc-ss-demo": (
                "OMKC (S,S), generated 200,000 x 4 (the demo's job)",
                "omkc",
                stream200k,
                {"update": "S", "combination": "S"},
                1024,
                False,
                None,
            ),
            "oks": (
                f"OKS (Algorithm 2, omkc16), generated 1,000,000 x 18, first {OKS_ROWS:,} rows",
                "oks",
                stream1m,
                {},
                1024,
                False,
                OKS_ROWS,
            ),
        }
        keys = [k for k in every if only is None or k in only]
        cases = [every[k] for k in keys]
        rows = [[_local(algo, data, params, block, sync, limit)] for _, algo, data, params, block, sync, limit in cases]
        for (name, *_), row in zip(cases, rows):
            log(f"{name}, block {row[0]['block_size']}: local {row[0]['seconds']:.1f} s")
        for workers in (1, 2):
            state = up(tmp / f"cluster{workers}", workers=workers, threads=1)
            try:
                with connect(state["scheduler_address"]) as client:
                    for (name, algo, data, params, block, _, limit), row in zip(cases, rows):
                        row.append(_dask(client, algo, data, params, block, tmp / "m", workers, limit))
                        log(f"{name}, block {block}: dask {workers} worker(s) {row[-1]['seconds']:.1f} s")
                    if workers == 2 and only is None:
                        for label, algo, params, limit in SWEEP_ALGOS:
                            for bs in SWEEP:
                                r = _dask(client, algo, stream200k, params, bs, tmp / "m", workers, limit=limit)
                                out["sweep"].append({"algorithm": label, **r})
                                log(f"sweep {label} block {bs}: {r['seconds']:.1f} s")
            finally:
                down(tmp / f"cluster{workers}")
        measured = {c[0]: {"case": c[0], "runs": runs} for c, runs in zip(cases, rows)}
        kept = [comp for comp in out["comparisons"] if comp["case"] not in measured]
        out["comparisons"] = kept + list(measured.values())
        if only is None:
            out["sweep_reference"] = [
                {"algorithm": label, **_local(algo, stream200k, params, 1024, False, limit=limit)}
                for label, algo, params, limit in SWEEP_ALGOS
            ]
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
    lines = [
        "",
        "## Dask engine vs in-process engine",
        "",
        "Same job, same stream order and block size; the models are bit-identical (tested). `local` is the",
        "in-process engine with numba's default threads; `dask N` runs N worker processes with one thread",
        "each. `local` seconds are its learning time; it reads the stream apart (`+ reading`), while the",
        "dask seconds are the whole job's wall time, the shards' reading included: `vs local` compares",
        "with the learning time alone, `vs local with reading` with both. Per round: coordinator = its",
        "own combining work; overhead = round wall time minus the slowest shard's work (messages,",
        "scheduling, and for SPA the first shard's wait for the others' scores).",
        "",
        "| case | block | engine | seconds | instances/s | vs local | vs local with reading | rounds | "
        "shard compute s | coordinator ms/round | overhead ms/round | mistake % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for comp in result["comparisons"]:
        local = comp["runs"][0]
        with_reading = local["seconds"] + local["load_seconds"]
        for r in comp["runs"]:
            shard = ", ".join(f"{s:.1f}" for s in r.get("shard_compute_seconds", [])) or "-"
            coord = f"{r['coordinator_ms_per_round']:.2f}" if "coordinator_ms_per_round" in r else "-"
            over = f"{r['overhead_ms_per_round']:.1f}" if "overhead_ms_per_round" in r else "-"
            seconds = (
                f"{r['seconds']:.1f} (+{r['load_seconds']:.1f} reading)"
                if "load_seconds" in r
                else f"{r['seconds']:.1f}"
            )
            vs_reading = "-" if r is local else f"{with_reading / r['seconds']:.2f}x"
            lines.append(
                f"| {comp['case']} | {r['block_size']} | {r['engine']} | {seconds} | "
                f"{r['instances_per_second']:,.0f} | {local['seconds'] / r['seconds']:.2f}x | "
                f"{vs_reading} | {r.get('rounds', '-')} | {shard} | {coord} | {over} | "
                f"{100 * r['mistake_rate']:.2f} |"
            )
    lines += [
        "",
        "Block-size sweep on a generated 200,000 x 4 stream (noise 0.01), 2 workers. SPA's rounds are",
        "whole blocks, about an eighth of the rows seen so far (up to 16,384 rows); OMKC (S,S) (first",
        "50,000 rows) has rounds of one block of at most 1,024 rows. Both sample with the current",
        "weights, as in-process (row-split rounds). `sequential` is the in-process engine, block 1024.",
        "",
        "| algorithm | block | seconds | instances/s | rounds | overhead ms/round | mistake % | #SV |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ref in result["sweep_reference"]:
        lines.append(
            f"| {ref['algorithm']} | sequential | {ref['seconds']:.1f} | {ref['instances_per_second']:,.0f} | "
            f"- | - | {100 * ref['mistake_rate']:.2f} | {ref['n_support']:,} |"
        )
        for r in (r for r in result["sweep"] if r["algorithm"] == ref["algorithm"]):
            lines.append(
                f"| {r['algorithm']} | {r['block_size']} | {r['seconds']:.1f} | "
                f"{r['instances_per_second']:,.0f} | {r['rounds']} | {r['overhead_ms_per_round']:.1f} | "
                f"{100 * r['mistake_rate']:.2f} | {r['n_support']:,} |"
            )
    return lines
