"""``python -m benchmarks.bench_race``: what ``--scaling auto`` adds to a 1,000,000-row run.

On the generated 1,000,000 x 18 stream (``omkl data synth``'s generator, seed 0, as ``make bench``'s
million-row cases), per algorithm and in one process: ``LocalRunner`` learning the whole stream with
the defaults and with ``scaling="auto"`` (the race of six candidate settings over the stream's first
5,000 rows, read once with the rows the run learns, then the run of the settings it chose), the two
alternating, ``--repeats`` times each after one warm-up run of each (numba's code loaded). The cost is
the minimum CPU seconds (``time.process_time``: every thread of this process) of the automatic runs
over the minimum of the default ones: CPU time and minima, because the machine is shared (a run's wall
time depends on the others' load). Results: ``benchmarks/results/race-cost.json`` and BENCHMARKS.md's
section.
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
FORMS = ("default", "auto")
SECTION = '## The race\'s cost (`scaling="auto"`)'


def _jobs(stream: Path, algo: str, params: dict, stop: int | None = None) -> dict:
    from omkl_dist.defaults import resolve_settings
    from omkl_dist.job import DataWindow, Job

    window = DataWindow(str(stream), stop=stop)
    return {
        "default": Job.build(algo, params, data=window),
        "auto": Job.build(algo, params, data=window, settings=resolve_settings(scaling="auto")),
    }


def _run(job, stream: Path) -> dict:
    from omkl_dist.runner import LocalRunner

    cpu, wall = time.process_time(), time.perf_counter()
    result = LocalRunner().fit(job, str(stream))
    return {
        "cpu_seconds": time.process_time() - cpu,
        "wall_seconds": time.perf_counter() - wall,
        "race_seconds": result.accounting.race_seconds,
        "rows": result.accounting.rows,
        "mistake_rate": result.accounting.mistakes / result.accounting.rows,
        "settings": result.job.settings.describe(),
    }


def measure(stream: Path, name: str, algo: str, params: dict, repeats: int) -> dict:
    """Warm-up runs of both forms on the stream's head, then ``repeats`` alternating whole runs."""
    for job in _jobs(stream, algo, params, stop=20_000).values():
        _run(job, stream)
    jobs = _jobs(stream, algo, params)
    runs: dict = {form: [] for form in FORMS}
    for _ in range(repeats):
        for form in FORMS:
            runs[form].append(_run(jobs[form], stream))
            print(json.dumps({"case": name, "form": form, **runs[form][-1]}), flush=True)
    best = {form: min(r["cpu_seconds"] for r in runs[form]) for form in FORMS}
    return {
        "case": name,
        "algo": algo,
        "params": params,
        "repeats": repeats,
        "runs": runs,
        "default_cpu_seconds": best["default"],
        "auto_cpu_seconds": best["auto"],
        "race_share": best["auto"] / best["default"] - 1.0,
        "race_seconds": min(r["race_seconds"] for r in runs["auto"]),
        "default_mistake_rate": runs["default"][0]["mistake_rate"],
        "auto_mistake_rate": runs["auto"][0]["mistake_rate"],
        "auto_settings": runs["auto"][0]["settings"],
        "load_average": os.getloadavg(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def markdown(results: list[dict]) -> str:
    lines = [
        SECTION,
        "",
        f"`LocalRunner` over the generated {ROWS:,} × {FEATURES} stream with the defaults and with `--scaling auto` "
        "(six settings raced on the first 5,000 rows, read once with the rows the run learns, then the run of "
        "the winner), alternating, after a warm-up run of each (`python -m benchmarks.bench_race`). CPU seconds "
        "of the whole run (every thread of the process), the minimum over the repeats: a shared 2-core machine, "
        "whose load moves wall times. *auto / default*: what the race adds.",
        "",
        "| algorithm | repeats | default: mistake %, CPU s | auto: mistake %, CPU s | race s (wall, min) | "
        "auto / default | load average |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['algo']} {r['params'] or ''} | {r['repeats']} | {100 * r['default_mistake_rate']:.2f}, "
            f"{r['default_cpu_seconds']:.1f} | {100 * r['auto_mistake_rate']:.2f}, {r['auto_cpu_seconds']:.1f} | "
            f"{r['race_seconds']:.2f} | {100 * r['race_share']:+.1f} % | {r['load_average'][0]:.1f} |"
        )
    lines += ["", *(f"auto: {r['auto_settings']}" for r in results)]
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
    parser.add_argument("--cases", default="spa-beta300", help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--repeats", type=int, default=3, help="whole runs of each form")
    parser.add_argument("--stream", default=None, help="the generated stream's folder (made there if missing)")
    options = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(options.stream or Path(tmp) / "s")
        if not stream.exists():
            synthesize(stream, rows=ROWS, features=FEATURES, seed=0)
        for name in options.cases.split(","):
            results.append(measure(stream, name, *CASES[name], options.repeats))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "race-cost.json").write_text(json.dumps(results, indent=2) + "\n")
    write_section(markdown(results))


if __name__ == "__main__":
    main()
