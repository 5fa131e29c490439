"""``make bench``'s wide sparse part: an rcv1-shaped stream (47,236 features, 0.16 % non-zero)
ingested into the csr layout and learnt by SPA and OMKC (S,S) without densifying a block; then
the same first rows learnt from the csr layout and from the dense one, for the speed-up the
sparsity gives. Each ``omkl`` command runs in its own process (peak RSS is that process's)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import run_omkl

ROWS, SAME_ROWS, BLOCK = 100_000, 2_500, 1024  # (a dense copy of more rows is refused as mostly empty)
ALGOS = {"SPA": ("spa",), "OMKC (S,S)": ("omkc", "--update", "S", "--combination", "S")}


def _learn(data: Path, algo: tuple, trace: Path, *extra) -> dict:
    done = run_omkl(
        "run", *algo, "--data", data, "--block-size", BLOCK, "--json", "--quiet", "--trace-out", trace, *extra
    )
    summary = json.loads(done["stdout"].strip().splitlines()[-1])
    return {
        "rows": summary["n"],
        "seconds": summary["seconds"],
        "instances_per_second": summary["instances_per_second"],
        "mistake_rate": summary["mistake_rate"],
        "support_vectors": summary["n_support"]["total"],
        "peak_rss_mb": done["peak_rss_mb"],
    }


def run_sparse_bench(results: Path, log=print) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run_omkl("data", "synth", "--shape", "rcv1", "--rows", ROWS, "--out", tmp / "wide.svm")
        run_omkl("data", "synth", "--shape", "rcv1", "--rows", SAME_ROWS, "--out", tmp / "head.svm")  # its prefix
        run_omkl("data", "ingest", tmp / "wide.svm", "--out", tmp / "csr")
        run_omkl("data", "ingest", tmp / "head.svm", "--out", tmp / "dense", "--layout", "dense")
        for name, algo in ALGOS.items():
            r = _learn(tmp / "csr", algo, tmp / "trace.json")
            rows.append({"algorithm": name, "layout": "csr", **r})
            log(f"{name} csr {ROWS:,} rows: {r['seconds']:.1f} s, {r['instances_per_second']:,.0f} inst/s")
            for layout in ("csr", "dense"):  # the same first rows, in file order
                r = _learn(tmp / layout, algo, tmp / "trace.json", "--limit", SAME_ROWS, "--no-permute")
                rows.append({"algorithm": name, "layout": layout, **r})
                log(
                    f"{name} {layout} {SAME_ROWS:,} rows: {r['seconds']:.1f} s, {r['instances_per_second']:,.0f} inst/s"
                )
    report = {
        "rows": rows,
        "data": f"omkl data synth --shape rcv1 --rows {ROWS} (seed 0)",
        "block": BLOCK,
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (results / "sparse.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def markdown(report: dict) -> list[str]:
    lines = [
        "",
        "## Wide sparse data (rcv1-shaped: 47,236 features, 0.16 % non-zero)",
        "",
        f"`{report['data']}`, ingested into the csr layout; `omkl run` (block {report['block']}, omkc16, no "
        f"scaling) streams CSR blocks into models that keep sparse support vectors. The {SAME_ROWS:,}-row lines "
        "learn the same first rows, in file order, from the csr layout and from a dense "
        "copy (the dense model's dot products are BLAS's over all 47,236 features: the same mistakes up to "
        "rounding). Peak RSS is the `omkl run` process's.",
        "",
        "| algorithm | layout | rows | learn s | inst/s | mistakes | SVs | peak RSS MB | sparse speed-up |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by_case = {(r["algorithm"], r["layout"], r["rows"]): r for r in report["rows"]}
    for r in report["rows"]:
        speedup = ""
        if r["layout"] == "dense":
            sparse = by_case[(r["algorithm"], "csr", r["rows"])]
            speedup = f"{sparse['instances_per_second'] / r['instances_per_second']:.1f}×"
        lines.append(
            f"| {r['algorithm']} | {r['layout']} | {r['rows']:,} | {r['seconds']:.1f} | "
            f"{r['instances_per_second']:,.0f} | {100 * r['mistake_rate']:.2f} % | {r['support_vectors']:,} | "
            f"{r['peak_rss_mb']:.0f} | {speedup} |"
        )
    return lines
