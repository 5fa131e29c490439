"""``python -m benchmarks.bench_race``: what ``scaling="auto"`` (the default) costs on a 1,000,000-row run.

On the generated 1,000,000 x 18 stream (``omkl data synth``'s generator, seed 0, as ``make bench``'s
million-row cases), per algorithm and in one process: the race of the job's defaults (the six
candidates over the stream's first 5,000 rows, reading that head included) run once cold (numba's
compiled code of six settings loaded) and once warm, and between them ``LocalRunner`` learning the
whole stream with the settings it chose. The warm race over the fixed run is the share the race
adds to a run, measured in one process so that it holds on a shared machine where the absolute
times do not. Results: ``benchmarks/results/race-cost.json`` and BENCHMARKS.md's section.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS

ROWS, FEATURES = 1_000_000, 18
CASES = {"spa-beta300": ("spa", {"beta": 300}), "om2": ("om2", {}), "bpas": ("bpas", {})}
SECTION = '## The race\'s cost (`scaling="auto"`)'


def measure(stream: Path, name: str, algo: str, params: dict) -> dict:
    """The race cold, the chosen settings' run over the whole stream, the race warm (one process)."""
    from omkl_dist.job import DataWindow, Job
    from omkl_dist.race import race
    from omkl_dist.runner import LocalRunner

    job = Job.build(algo, params, data=DataWindow(str(stream)))
    t0 = time.perf_counter()
    decided = race(job, str(stream))
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = LocalRunner().fit(decided, str(stream))
    run = time.perf_counter() - t0
    t0 = time.perf_counter()
    race(job, str(stream))
    warm = time.perf_counter() - t0
    return {
        "case": name,
        "algo": algo,
        "params": params,
        "rows": result.accounting.rows,
        "mistake_rate": result.accounting.mistakes / result.accounting.rows,
        "settings": decided.settings.race_line(),
        "race_cold_seconds": cold,
        "race_seconds": warm,
        "run_seconds": run,
        "race_share": warm / run,
        "load_average": os.getloadavg(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def markdown(results: list[dict]) -> str:
    lines = [
        SECTION,
        "",
        f"The defaults' race (six settings over the first 5,000 rows, reading that head included) on the generated "
        f"{ROWS:,} × {FEATURES} stream against the run of the settings it chose over the whole stream, in one "
        "process (`python -m benchmarks.bench_race`; cold: numba's code of the six settings loaded first; a "
        "shared 2-core machine: compare within a row).",
        "",
        "| algorithm | mistake % | race cold s | race s | run s | race / run | load average |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['algo']} {r['params'] or ''} | {100 * r['mistake_rate']:.2f} | {r['race_cold_seconds']:.1f} | "
            f"{r['race_seconds']:.1f} | {r['run_seconds']:.1f} | {100 * r['race_share']:.1f} % | "
            f"{r['load_average'][0]:.1f} |"
        )
    return "\n".join(lines) + "\n"


def write_section(text: str, path: Path = Path("BENCHMARKS.md")) -> None:
    """Replace (or append) the section in BENCHMARKS.md."""
    doc = path.read_text()
    start = doc.find(SECTION)
    if start < 0:
        path.write_text(doc.rstrip("\n") + "\n\n" + text)
        return
    end = doc.find("\n## ", start + len(SECTION))
    path.write_text(doc[:start] + text + (doc[end + 1 :] if end >= 0 else ""))


def main() -> None:
    from omkl_dist.storage.synth import synthesize

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    options = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(tmp) / "s"
        synthesize(stream, rows=ROWS, features=FEATURES, seed=0)
        for name in options.cases.split(","):
            results.append(measure(stream, name, *CASES[name]))
            print(json.dumps(results[-1]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "race-cost.json").write_text(json.dumps(results, indent=2) + "\n")
    write_section(markdown(results))


if __name__ == "__main__":
    main()
