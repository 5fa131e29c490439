"""``make bench``: throughput and peak memory of the online learners on real data.

Each case runs in its own child process (so peak RSS is that case's alone, read from
``getrusage``), after a small warm-up run that loads numba's compiled kernels. Results go to
``benchmarks/results/<case>.json``; ``BENCHMARKS.md`` gets the summary table. Timing lives here,
never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import OKS_ROWS, RESULTS, classification

# case -> (algorithm name, estimator params, dataset files (concatenated), note)
# the C++ BOMKL tool's SPA wall time and mistake rate (%) on this machine (issue 4), for the speed-up
# column; our SPA runs with Algorithm 1's hinge-loss Hedge and with hedge_loss="mistake", whose
# mistake rates match the C++ tool's
_CXX = {"codrna": (13.16, 12.15), "a9a": (25.10, 16.77), "ijcnn1": (139.3, 3.14), "susy": (7.53, 22.91)}
CXX = {f"spa{variant}-{data}": ref for data, ref in _CXX.items() for variant in ("", "-mistake")}
_SPA_DATA = {
    "codrna": ["codrna/cod-rna.train.dense.txt.gz"],
    "a9a": ["a9a/a9a.gz"],
    "ijcnn1": ["ijcnn1/ijcnn1_all.dense.txt.gz"],
    "susy": ["susy/SUSY_30k.mat.gz"],
}
SYNTH_ROWS = 10_000_000  # the constant-memory learners' long stream (issue 36)
CASES = {
    "omkc-dd-a9a": (
        "omkc",
        {"update": "D", "combination": "D"},
        ["a9a/a9a.gz", "a9a/a9a.t.gz"],
        "a9a + a9a.t = 48,842 x 123; paper's Matlab/C++: 1171.6 s",
    ),
    "omkc-ss-a9a": (
        "omkc",
        {"update": "S", "combination": "S"},
        ["a9a/a9a.gz", "a9a/a9a.t.gz"],
        "a9a + a9a.t = 48,842 x 123",
    ),
    "omkc-dd-codrna": (
        "omkc",
        {"update": "D", "combination": "D"},
        ["codrna/cod-rna.train.dense.txt.gz"],
        "cod-rna training split, 59,535 x 8",
    ),
    "omkc-ss-codrna": (
        "omkc",
        {"update": "S", "combination": "S"},
        ["codrna/cod-rna.train.dense.txt.gz"],
        "cod-rna training split, 59,535 x 8",
    ),
    "spa-codrna": (
        "spa",
        {},
        ["codrna/cod-rna.train.dense.txt.gz"],
        "cod-rna training split, 59,535 x 8; C++ BOMKL SPA: 13.16 s, 12.15 %",
    ),
    "spa-a9a": ("spa", {}, ["a9a/a9a.gz"], "a9a train split, 32,561 x 123; C++ BOMKL SPA: 25.10 s, 16.77 %"),
    "spa-a9a-all": ("spa", {}, ["a9a/a9a.gz", "a9a/a9a.t.gz"], "a9a + a9a.t = 48,842 x 123"),
    "spa-ijcnn1": (
        "spa",
        {},
        ["ijcnn1/ijcnn1_all.dense.txt.gz"],
        "ijcnn1, 141,691 x 22; C++ BOMKL SPA: 139.3 s, 3.14 %",
    ),
    "spa-susy": (
        "spa",
        {},
        ["susy/SUSY_30k.mat.gz"],
        "SUSY 30,000-row subsample x 18, beta 3; C++ BOMKL SPA: 7.53 s, 22.91 %",
    ),
    **{
        f"spa-mistake-{data}": ("spa", {"hedge_loss": "mistake"}, files, "as above, hedge_loss='mistake'")
        for data, files in _SPA_DATA.items()
    },
    # None: a generated 1,000,000 x 18 stream (seed 0), written to zarr and streamed back, block 1024
    "spa-synth1m": ("spa", {"beta": 300.0}, None, "generated 1,000,000 x 18 stream read from zarr, beta 300"),
    # (OKS keeps every mistaken row, no budget: its cost per row grows with the stream)
    "oks-synth1m": (
        "oks",
        {"horizon": 1_000_000},
        None,
        "generated 1,000,000 x 18 stream read from zarr; omkc16, Algorithm 2, one pass, no budget",
    ),
    # "stream:N": the first N rows of that stream (also the cluster comparison's OKS job)
    "oks-synth200k": (
        "oks",
        {"horizon": OKS_ROWS},
        f"stream:{OKS_ROWS}",
        f"the same stream's first {OKS_ROWS:,} rows; omkc16, Algorithm 2, one pass",
    ),
    # "synth:N": a generated N-row stream (seed 0) of the same kind: the constant-memory learners at 10 million
    **{
        f"{algo}-synth10m": (
            algo,
            params,
            f"synth:{SYNTH_ROWS}",
            f"generated {SYNTH_ROWS:,} x 18 stream read from zarr, {what}",
        )
        for algo, params, what in (
            ("fogd", {}, "13 gaussians, D = 100"),
            ("nogd", {}, "omkc16+norm, B = 100, P = 20"),
            ("spa", {"beta": 300.0}, "beta 300"),
            ("bpas", {"budget": 100}, "omkc16+norm, B = 100"),
        )
    },
    # "classes:K": a generated K-class problem shaped like UCI letter (15,000 x 16), see common.classification
    **{
        f"{case}-k{k}": (algo, params, f"classes:{k}", f"generated {k}-class problem, 15,000 x 16, standardised")
        for k in (2, 10, 26)
        for case, algo, params in (
            ("om2", "om2", {}),
            ("omkc-ss", "omkc", {"update": "S", "combination": "S"}),
            ("omkc-dd", "omkc", {"update": "D", "combination": "D"}),
            ("bpas", "bpas", {"budget": 100}),
        )
    },
}


def _load(files, scaling):
    from omkl_dist.preprocessing import Scaler
    from omkl_dist.storage import read_dataset
    from omkl_dist.storage.datadir import data_dir

    parts = [read_dataset(data_dir() / f) for f in files]
    X = np.vstack([p.X for p in parts])
    y = np.concatenate([p.y for p in parts])
    order = np.random.default_rng(0).permutation(len(y))
    return Scaler(scaling).fit_transform(X[order]), y[order]


def run_case(name: str, block_size: int, scaling: str) -> dict:
    from omkl_dist.algorithms.registry import make_estimator
    from omkl_dist.evaluation import progressive_score

    algo, params, files, note = CASES[name]
    t0 = time.perf_counter()
    if files is None or (isinstance(files, str) and files.startswith(("stream:", "synth:"))):
        rows = int(files.split(":")[1]) if files and files.startswith("stream:") else None
        total = int(files.split(":")[1]) if files and files.startswith("synth:") else 1_000_000
        return _run_stream_case(name, algo, params, note, block_size=1024, rows=rows, total=total)
    if isinstance(files, str):  # "classes:K"
        X, y = classification(int(files.split(":")[1]))
        scaling = "standard"
    else:
        X, y = _load(files, scaling)
    load_seconds = time.perf_counter() - t0
    warm = make_estimator(algo, block_size=block_size, random_state=0, **params)
    warm.fit(X[:2000], y[:2000])  # loads (or compiles) the numba kernels outside the timed run
    model = make_estimator(algo, block_size=block_size, random_state=0, **params)
    summary = progressive_score(model, (X, y), classes=np.unique(y)).summary()
    return _result(name, algo, params, files, note, int(X.shape[1]), scaling, block_size, summary, load_seconds)


def _result(name, algo, params, data, note, features, scaling, block_size, summary, load_seconds) -> dict:
    return {
        "case": name,
        "algo": algo,
        "params": params,
        "data": data,
        "note": note,
        "rows": summary["n"],
        "features": features,
        "scaling": scaling,
        "block_size": block_size,
        "seed": 0,
        "mistake_rate": summary["mistake_rate"],
        "n_support_total": summary["n_support"]["total"],
        "seconds": summary["seconds"],
        "instances_per_second": summary["instances_per_second"],
        "load_seconds": load_seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_average": os.getloadavg(),  # (a shared machine: what else ran, at the end)
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def run_synth_rss() -> dict:
    """``omkl data synth``'s generator at 1,000,000 x 18, in a child process (benchmarks/synth_rss.py)."""
    out = subprocess.run(
        [sys.executable, "benchmarks/synth_rss.py", "--rows", "1000000", "--features", "18"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _run_stream_case(name, algo, params, note, *, block_size, rows=None, total=1_000_000):
    """The million-instance case: generate ``total`` rows to zarr, then learn from the stream (never
    loaded whole); ``rows``: only its first rows."""
    import tempfile

    from omkl_dist.algorithms.registry import make_estimator
    from omkl_dist.evaluation import feed_calls, progressive_score
    from omkl_dist.storage import open_stream
    from omkl_dist.storage.synth import synthesize

    with tempfile.TemporaryDirectory() as tmp:
        synthesize(f"{tmp}/s", rows=total, features=18, seed=0)
        stream = open_stream(f"{tmp}/s", block_size=block_size, stop=rows)
        X0, y0 = next(iter(stream))
        make_estimator(algo, block_size=block_size, random_state=0, **params).fit(X0[:300], y0[:300])
        model = make_estimator(algo, block_size=block_size, random_state=0, **params)
        trace = progressive_score(model, feed_calls(stream, model.feed()), classes=[-1, 1])  # as omkl run feeds it
    data = f"synth:seed=0,rows={total},features=18" + (f",first={rows}" if rows else "")
    return _result(name, algo, params, data, note, 18, "none", block_size, trace.summary(), trace.load_seconds)


def write_markdown(results: list[dict], synth: dict | None = None, sections=()) -> None:
    lines = [
        "# Benchmarks",
        "",
        "Measured by `make bench` on this project's 2-core machine (single runs, one pass, test-then-train,",
        "rows permuted with `numpy.random.default_rng(0)`, learning time only: data loading excluded).",
        "Raw results: `benchmarks/results/*.json`.",
        "",
        "| case | data | rows × d | scaling | block | mistake % | C++ mistake % | #SV (all kernels) | seconds | "
        "instances/s | vs C++ | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cxx_seconds, cxx_mistakes = CXX.get(r["case"], (None, None))
        speedup = f"{cxx_seconds / r['seconds']:.1f}x" if cxx_seconds else "-"
        lines.append(
            f"| {r['case']} | {r['note']} | {r['rows']:,} × {r['features']} | {r['scaling']} | {r['block_size']} | "
            f"{100 * r['mistake_rate']:.2f} | {cxx_mistakes if cxx_mistakes else '-'} | {r['n_support_total']:,} | "
            f"{r['seconds']:.2f} | {r['instances_per_second']:,.0f} | {speedup} | {r['peak_rss_mb']:.0f} |"
        )
    path = Path("BENCHMARKS.md")
    old = path.read_text() if path.is_file() else ""
    lines += table_notes(old)
    if synth is not None:
        lines += [
            "",
            "Generated stream (`omkl data synth`, chunked zarr + parquet writes, bounded memory):",
            "",
            "| rows × d | chunk rows | seconds | peak RSS MB |",
            "|---|---|---|---|",
            f"| {synth['rows']:,} × {synth['features']} | {synth['chunk_rows']:,} | {synth['seconds']:.2f} | "
            f"{synth['peak_rss_mb']:.0f} |",
        ]
    for section in sections:
        lines += section
    lines += kept_sections(old, lines)
    path.write_text("\n".join(lines) + "\n")


def table_notes(old: str) -> list[str]:
    """The paragraphs the page ``old`` has under its main table (written there by hand, about some
    of its rows), each with a blank line before: kept when the table is written again."""
    text = old.rstrip("\n").split("\n")
    start = next((i for i, line in enumerate(text) if line.startswith("| case |")), None)
    if start is None:
        return []
    while start < len(text) and text[start].startswith("|"):
        start += 1
    end = next(
        (i for i in range(start, len(text)) if text[i].startswith(("## ", "Generated stream (`omkl data synth`"))),
        len(text),
    )
    notes = text[start:end]
    while notes and not notes[-1]:
        notes.pop()
    return notes if any(notes) else []


def _section_key(heading: str) -> str:
    """What names a section across its headings' versions: ``Defaults study`` of ``## Defaults study,
    3,000 rows (...)`` and of ``## Defaults study (...)``."""
    return re.split(r"[(,:]", heading[3:])[0].strip()


def kept_sections(old: str, new: list[str]) -> list[str]:
    """The sections of the page ``old`` that ``new`` (make bench's lines) does not write -- those
    other scripts keep with :func:`benchmarks.common.replace_section` (compile times, online accuracy,
    the race's cost) -- each with the blank line before its heading, in their order."""
    written = {_section_key(line) for line in new if line.startswith("## ")}
    kept: list[str] = []
    keep = False
    for line in old.rstrip("\n").split("\n"):
        if line.startswith("## "):
            keep = _section_key(line) not in written
            if keep and (not kept or kept[-1] != ""):
                kept.append("")
        if keep and not (line == "" and kept[-1] == ""):  # (one blank line between sections)
            kept.append(line)
    return kept


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES))
    parser.add_argument("--block-size", type=int, default=512)
    parser.add_argument("--scaling", default="none", choices=["none", "minmax", "standard"])
    parser.add_argument("--skip-cluster", action="store_true", help="Skip the Dask engine benchmarks.")
    parser.add_argument("--skip-mkboost", action="store_true", help="Skip the MKBoost benchmark.")
    parser.add_argument(
        "--skip-mkboost-scaling",
        action="store_true",
        help="Skip the MKBoost-at-scale benchmark (ijcnn1, 1k-20k rows; about 40 minutes).",
    )
    parser.add_argument("--skip-retrain", action="store_true", help="Skip the retrain/predict benchmark.")
    parser.add_argument("--skip-sparse", action="store_true", help="Skip the wide sparse (rcv1-shaped) benchmark.")
    parser.add_argument("--skip-ingest", action="store_true", help="Skip ingesting a large CSV file (~2 minutes).")
    parser.add_argument("--skip-budget", action="store_true", help="Skip the budget baselines (RBP ... BPAS).")
    parser.add_argument("--skip-serve", action="store_true", help="Skip the omkl serve benchmark (HTTP, ~4 minutes).")
    parser.add_argument(
        "--skip-peers", action="store_true", help="Skip the C++ toolbox's learners beside ours (`make bench-peers`)."
    )
    parser.add_argument(
        "--budget-baseline",
        default=None,
        help="A git ref whose budget baselines are measured alternately as 'before' (e.g. main).",
    )
    parser.add_argument(
        "--cluster-cases",
        default=None,
        help="Comma-separated cluster comparisons to (re)measure, e.g. oks (default: all, and the "
        "block-size sweep); the others keep their last results.",
    )
    parser.add_argument(
        "--markdown-only",
        action="store_true",
        help="Measure nothing: rewrite BENCHMARKS.md from benchmarks/results (after a study or one bench-* target).",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child mode: run one case, print JSON
    args = parser.parse_args(argv)
    if args.markdown_only:
        args.cases = ""
        for part in (
            "cluster",
            "mkboost",
            "mkboost_scaling",
            "retrain",
            "sparse",
            "ingest",
            "budget",
            "serve",
            "peers",
        ):
            setattr(args, f"skip_{part}", True)
    if args.one:
        print(json.dumps(run_case(args.one, args.block_size, args.scaling)))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in filter(None, args.cases.split(",")):  # --cases "": only the cluster/MKBoost parts
        if name not in CASES:
            parser.error(f"unknown case {name!r}; choose from {', '.join(CASES)}")
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.bench",
                "--one",
                name,
                "--block-size",
                str(args.block_size),
                "--scaling",
                args.scaling,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        print(
            f"{name}: {result['seconds']:.1f} s, {result['instances_per_second']:,.0f} inst/s, "
            f"mistakes {100 * result['mistake_rate']:.2f} %, peak RSS {result['peak_rss_mb']:.0f} MB",
            flush=True,
        )
    if args.markdown_only:
        synth = json.loads((RESULTS / "synth-1m.json").read_text())
    else:
        synth = run_synth_rss()
        (RESULTS / "synth-1m.json").write_text(json.dumps(synth, indent=2) + "\n")
        print(f"synth 1,000,000 x 18: {synth['seconds']:.2f} s, peak RSS {synth['peak_rss_mb']:.0f} MB", flush=True)
    from benchmarks.bench_cluster import markdown as cluster_markdown
    from benchmarks.bench_cluster import run_cluster_bench

    if not args.skip_cluster:
        only = None if args.cluster_cases is None else set(filter(None, args.cluster_cases.split(",")))
        run_cluster_bench(RESULTS, log=lambda msg: print(msg, flush=True), only=only)
    from benchmarks.bench_mkboost import format_markdown as mkboost_markdown
    from benchmarks.bench_mkboost import run_mkboost_bench

    if not args.skip_mkboost:
        run_mkboost_bench(RESULTS)
    from benchmarks.bench_mkboost_scaling import markdown as mkboost_scaling_markdown
    from benchmarks.bench_mkboost_scaling import run_scaling_bench

    if not args.skip_mkboost_scaling:
        run_scaling_bench(RESULTS, log=lambda msg: print(msg, flush=True))
    from benchmarks.bench_retrain import markdown as retrain_markdown
    from benchmarks.bench_retrain import run_retrain_bench

    if not args.skip_retrain:
        run_retrain_bench(RESULTS, log=lambda msg: print(msg, flush=True))
    from benchmarks.bench_sparse import markdown as sparse_markdown
    from benchmarks.bench_sparse import run_sparse_bench

    if not args.skip_sparse:
        run_sparse_bench(RESULTS, log=lambda msg: print(msg, flush=True))
    from benchmarks.bench_ingest import markdown as ingest_markdown
    from benchmarks.bench_ingest import run_ingest_bench

    if not args.skip_ingest:
        run_ingest_bench(RESULTS, log=lambda msg: print(msg, flush=True))
    from benchmarks.bench_budget import markdown as budget_markdown
    from benchmarks.bench_budget import run_budget_bench

    if not args.skip_budget:
        run_budget_bench(RESULTS, args.budget_baseline, log=lambda msg: print(msg, flush=True))
    from benchmarks.bench_serve import markdown as serve_markdown
    from benchmarks.bench_serve import run_serve_bench

    if not args.skip_serve:
        run_serve_bench(RESULTS, log=lambda msg: print(msg, flush=True))
    from benchmarks.bench_cxx import markdown as cxx_markdown
    from benchmarks.bench_cxx import run_cxx_bench
    from benchmarks.bench_peers import markdown as peers_markdown
    from benchmarks.bench_peers import run_peers_bench

    if not args.skip_peers:
        run_peers_bench(RESULTS, log=lambda msg: print(msg, flush=True))
        if os.environ.get("OMKL_CXX_TOOLBOX"):  # a build of the C++ toolbox: timed here beside ours
            run_cxx_bench(Path(os.environ["OMKL_CXX_TOOLBOX"]), RESULTS, log=lambda msg: print(msg, flush=True))
    sections = []
    if (RESULTS / "budget.json").is_file():
        sections.append(budget_markdown(json.loads((RESULTS / "budget.json").read_text())))
    if (RESULTS / "peers.json").is_file():
        sections.append(peers_markdown(json.loads((RESULTS / "peers.json").read_text())))
    if (RESULTS / "cxx.json").is_file():
        sections.append(cxx_markdown(json.loads((RESULTS / "cxx.json").read_text())))
    # (measured by `omkl study defaults`, not by make bench): the 3,000-row study, then the whole streams
    for study in ("study-defaults.json", "study-defaults-whole.json"):
        if (RESULTS / study).is_file():
            from omkl_dist.pipelines.studies.defaults_markdown import benchmarks_section

            sections.append(["", benchmarks_section(json.loads((RESULTS / study).read_text()))])
    if (RESULTS / "sparse.json").is_file():
        sections.append(sparse_markdown(json.loads((RESULTS / "sparse.json").read_text())))
    if (RESULTS / "ingest.json").is_file():
        sections.append(ingest_markdown(json.loads((RESULTS / "ingest.json").read_text())))
    if (RESULTS / "retrain.json").is_file():
        sections.append(retrain_markdown(json.loads((RESULTS / "retrain.json").read_text())))
    if (RESULTS / "serve.json").is_file():
        sections.append(["", *serve_markdown(json.loads((RESULTS / "serve.json").read_text()))])
    if (RESULTS / "cluster.json").is_file():
        sections.append(cluster_markdown(json.loads((RESULTS / "cluster.json").read_text())))
    if (RESULTS / "mkboost.json").is_file():
        mk = json.loads((RESULTS / "mkboost.json").read_text())
        sections.append(
            [
                "",
                f"## MKBoost-D{mk['variant'][-1]} on Dask (T = {mk['n_trials']}, ratio {mk['ratio']}, "
                f"C {mk['C']}, {mk['kernels']}; 50/50 split, standardised)",
                "",
                mkboost_markdown(mk["rows"], mk.get("cluster_startup_s")),
            ]
        )
    if (RESULTS / "mkboost-scaling.json").is_file():
        sections.append(mkboost_scaling_markdown(json.loads((RESULTS / "mkboost-scaling.json").read_text())))
    if (RESULTS / "batch-accuracy.json").is_file():  # (measured by make bench-accuracy)
        from benchmarks.bench_accuracy import markdown as accuracy_markdown

        sections.append(accuracy_markdown(json.loads((RESULTS / "batch-accuracy.json").read_text())))
    if (RESULTS / "drift-defaults.json").is_file():  # (measured by benchmarks/drift_defaults.py, not by make bench)
        from benchmarks.drift_defaults import markdown as drift_markdown

        sections.append(drift_markdown(json.loads((RESULTS / "drift-defaults.json").read_text())))
    if (RESULTS / "online-defaults.json").is_file():  # (measured by benchmarks/online_defaults.py, not by make bench)
        from benchmarks.online_defaults import markdown as online_defaults_markdown

        sections.append(online_defaults_markdown(json.loads((RESULTS / "online-defaults.json").read_text())))
    if (RESULTS / "scale.json").is_file():  # (measured by make bench-scale, not by make bench)
        from benchmarks.bench_scale import markdown as scale_markdown

        sections.append(scale_markdown(json.loads((RESULTS / "scale.json").read_text())))
    results = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json")) if p.stem in CASES]
    write_markdown(results, synth, sections)
    print("wrote BENCHMARKS.md")


if __name__ == "__main__":
    main()
