"""``make bench``'s scheduled-retraining part: two retrains of SPA on the two halves of a generated
1,000,000 x 18 stream, then ``omkl predict`` of all million rows from the champion (in-process and
in small blocks), each an ``omkl`` command in its own child process whose peak memory the kernel
reports (``ru_maxrss`` of that process alone)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import run_omkl

ROWS, FEATURES = 1_000_000, 18


def run_retrain_bench(results: Path, log=print) -> dict:
    from omkl_dist.storage.synth import synthesize

    with tempfile.TemporaryDirectory() as tmp:
        stream, store = Path(tmp) / "stream", Path(tmp) / "store"
        synthesize(stream, rows=ROWS, features=FEATURES, seed=0)
        rows = []
        for window, extra in (
            ("0:500000", ("--algo", "spa", "--param", "beta=300", "--block-size", 1024)),
            ("500000:1000000", ()),
        ):
            done = run_omkl(
                "retrain", "--store", store, "--model", "spa", "--data", stream, "--rows", window, "--quiet", *extra
            )
            summary = json.loads(done["stdout"].strip().splitlines()[-1])
            rows.append(
                {
                    "step": f"retrain rows {window}",
                    "seconds": done["seconds"],
                    "learn_seconds": summary["train"]["seconds"],
                    "rows": 500_000,
                    "instances_per_second": summary["train"]["instances_per_second"],
                    "peak_rss_mb": done["peak_rss_mb"],
                    "status": summary["status"],
                    "holdout_mistake_rate": summary["gate"]["challenger"],
                }
            )
            log(f"retrain {window}: {done['seconds']:.1f} s, {summary['status']}, peak {done['peak_rss_mb']:.0f} MB")
        for block in (16_384, 1_024):
            out = Path(tmp) / f"pred-{block}.parquet"
            t0 = time.perf_counter()
            done = run_omkl(
                "predict",
                "--store",
                store,
                "--model",
                "spa",
                "--data",
                stream,
                "--out",
                out,
                "--block-rows",
                block,
                "--json",
            )
            result = json.loads(done["stdout"])
            rows.append(
                {
                    "step": f"predict 1,000,000 rows, block {block:,}",
                    "seconds": time.perf_counter() - t0,
                    "learn_seconds": result["seconds"],
                    "rows": result["rows"],
                    "instances_per_second": result["rows_per_second"],
                    "peak_rss_mb": done["peak_rss_mb"],
                    "status": f"accuracy {100 * result['accuracy']:.2f} %",
                    "holdout_mistake_rate": None,
                }
            )
            log(f"predict block {block}: {done['seconds']:.1f} s, peak {done['peak_rss_mb']:.0f} MB")
    report = {
        "rows": rows,
        "data": f"synth:seed=0,rows={ROWS},features={FEATURES}",
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (results / "retrain.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def markdown(report: dict) -> list[str]:
    lines = [
        "",
        "## Scheduled retraining and prediction (`omkl retrain`, `omkl predict`)",
        "",
        f"Generated {ROWS:,} × {FEATURES} stream in zarr; SPA (β = 300, block 1024) retrained on each half "
        "(the champion continued, gated on the half's last 20 %), then every row predicted from the "
        "champion and written as parquet. Each command is its own process: wall time includes start-up "
        "and reading; peak RSS is that process's.",
        "",
        "| step | rows | wall s | compute s | rows/s | peak RSS MB | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['step']} | {r['rows']:,} | {r['seconds']:.1f} | {r['learn_seconds']:.1f} | "
            f"{r['instances_per_second']:,.0f} | {r['peak_rss_mb']:.0f} | {r['status']} |"
        )
    return lines
