"""The defaults study's record store: one JSONL line per finished run, appended as it finishes, so an
interrupted study resumes where it stopped and a rerun only adds what is missing."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from omkl_dist.storage.outputs import first_free

#: the project's own study, which docs/defaults.md reports (``make study-defaults`` names it)
PROJECT_RESULTS = Path("benchmarks/results/study-defaults.jsonl")


def default_results() -> Path:
    """Where a study writes when not told: ``runs/study-defaults/study-defaults.jsonl`` in a new folder
    (the first free of ``runs/study-defaults``, ``-2``, ``-3``, ...), as ``omkl run`` names its traces."""
    return first_free(Path("runs") / "study-defaults") / "study-defaults.jsonl"


def summary_path(results) -> Path:
    """The JSON summary beside the JSONL: ``study-defaults.jsonl`` -> ``study-defaults.json``."""
    results = Path(results)
    return results.with_suffix(".json") if results.suffix == ".jsonl" else results.with_name(results.name + ".json")


def doc_path(results) -> Path:
    """The Markdown report beside the JSONL when no ``--doc`` is given: ``study-defaults.md``."""
    return summary_path(results).with_suffix(".md")


def run_key(record: dict) -> tuple:
    """What makes two runs the same measurement (a resumed study skips a run with a done key);
    ``settings``, the axes a run moves from their defaults, is {} when absent (runs of a study without
    ``--axes``)."""
    return (
        record["algorithm"],
        record["dataset"],
        record["scaling"],
        record["kernels"],
        record["permutation"],
        record["max_rows"],
        tuple(sorted(record.get("settings", {}).items())),
    )


def read_records(path) -> tuple[list[dict], int]:
    """(the JSONL's records, how many lines could not be read -- a line cut short when a study was
    killed mid-write; that run is simply done again)."""
    path = Path(path)
    if not path.is_file():
        return [], 0
    records, bad = [], 0
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            run_key(record)
        except (json.JSONDecodeError, KeyError, TypeError):
            bad += 1
            continue
        records.append(record)
    return records, bad


@contextmanager
def record_writer(path):
    """Append records to the JSONL at ``path`` (created with its folder if missing).

    Parameters
    ----------
    path : str or Path
        The JSONL file.

    Yields
    ------
    callable
        ``append(record)``: writes the record as one line of sorted-key JSON and flushes it, so a
        study killed at any moment loses at most the line being written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        if out.tell() and not path.read_bytes().endswith(b"\n"):
            out.write("\n")  # after a line cut short: the next record starts a line of its own

        def append(record: dict) -> None:
            out.write(json.dumps(record, sort_keys=True) + "\n")
            out.flush()

        yield append
