"""``python -m benchmarks.bench_race``: what ``scaling="auto"`` (the default) costs on a 1,000,000-row run.

The generated 1,000,000 x 18 stream (``omkl data synth``'s generator, seed 0, as ``make bench``'s
million-row cases) is learnt by ``omkl run ALGO`` with its defaults, in a child process per
algorithm; the report's ``race_seconds`` (the six candidates over the stream's first 5,000 rows,
reading that head included) is set against the run's learning and loading seconds of the same
process, so the ratio holds on a shared machine even where the absolute times do not. Results:
``benchmarks/results/race-cost.json`` and BENCHMARKS.md's "The race's cost" section.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS, run_omkl

ROWS, FEATURES = 1_000_000, 18
CASES = {"bpas": ["bpas"], "spa-beta300": ["spa", "--beta", "300"], "om2": ["om2"]}
SECTION = '## The race\'s cost (`scaling="auto"`)'


def measure(stream: Path, name: str, args: list[str], out: Path) -> dict:
    """One ``omkl run`` with the defaults over ``stream``: the race's seconds beside the run's."""
    ran = run_omkl("run", *args, "--data", stream, "--json", "--quiet", "--trace-out", out / f"trace-{name}.json")
    report = json.loads(ran["stdout"].strip().splitlines()[-1])
    run_seconds = report["seconds"] + report["load_seconds"]
    return {
        "case": name,
        "command": "omkl run " + " ".join(args),
        "rows": report["n"],
        "mistake_rate": report["mistake_rate"],
        "settings": report["settings"]["describe"],
        "race_seconds": report["race_seconds"],
        "learning_seconds": report["seconds"],
        "load_seconds": report["load_seconds"],
        "race_share": report["race_seconds"] / run_seconds,
        "load_average": os.getloadavg(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def markdown(results: list[dict]) -> str:
    lines = [
        SECTION,
        "",
        f"`omkl run ALGO --data STREAM` with its defaults on the generated {ROWS:,} × {FEATURES} stream: the race "
        "of the six settings over the stream's first 5,000 rows (reading that head included) against the run's "
        "own learning and loading, in the same process (`python -m benchmarks.bench_race`; a shared 2-core "
        "machine: compare within a row).",
        "",
        "| command | mistake % | race s | learning s | loading s | race / run | load average |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| `{r['command']}` | {100 * r['mistake_rate']:.2f} | {r['race_seconds']:.1f} | "
            f"{r['learning_seconds']:.1f} | {r['load_seconds']:.1f} | {100 * r['race_share']:.1f} % | "
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
            results.append(measure(stream, name, CASES[name], Path(tmp)))
            print(json.dumps(results[-1]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "race-cost.json").write_text(json.dumps(results, indent=2) + "\n")
    write_section(markdown(results))


if __name__ == "__main__":
    main()
