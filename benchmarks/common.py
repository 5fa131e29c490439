"""What several benchmark scripts share: where results go, the OKS case's stream length and the
child-process runner of ``omkl`` commands. The scripts import it, never each other's entry point
(``bench.py`` imports every part; a part importing ``bench.py`` back made an import circle)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RESULTS = Path("benchmarks/results")

# OKS keeps every mistaken row (no budget), so its cost per row grows with the stream: the in-process
# case and the cluster comparison both learn the generated 1,000,000-row stream's first OKS_ROWS rows
OKS_ROWS = 200_000

_MEASURE = (
    "import json, resource, subprocess, sys, time; t = time.perf_counter(); "
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
    "print(json.dumps({'code': p.returncode, 'seconds': time.perf_counter() - t, 'stdout': p.stdout, "
    "'stderr': p.stderr[-2000:], 'peak_rss_mb': peak}))"
)


def classification(n_classes: int, rows: int = 15_000):
    """A K-class problem the size of UCI letter (15,000 x 16; no letter file in the datasets folder),
    or ``rows`` long: scikit-learn's ``make_classification`` (one gaussian cluster per class on 12
    informative features, class_sep 2, seed 0), standardised."""
    from sklearn.datasets import make_classification

    from omkl_dist.preprocessing import Scaler

    X, y = make_classification(
        n_samples=rows,
        n_features=16,
        n_informative=12,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        class_sep=2.0,
        random_state=0,
    )
    return Scaler("standard").fit_transform(X), y


def kept_notes(path: Path) -> list[str]:
    """The ``notes`` of a bench's results file (paragraphs its author wrote beside the table, a
    string each), which a new run of the bench keeps until they are rewritten by hand."""
    return list(json.loads(path.read_text()).get("notes", [])) if path.is_file() else []


def replace_section(section: list[str], heading: str, path: Path = Path("BENCHMARKS.md")) -> None:
    """Replace (or append) BENCHMARKS.md's section whose heading starts with ``heading`` by ``section``
    (its first line the blank line before the heading), leaving the others as they are."""
    text = path.read_text().rstrip("\n").split("\n")
    start = next((i for i, line in enumerate(text) if line.startswith(heading)), None)
    if start is None:
        text += section
    else:
        end = next((i for i in range(start + 1, len(text)) if text[i].startswith("## ")), len(text))
        while section and not section[-1]:
            section = section[:-1]
        # the blank line before the heading is the section's first; the next section's, its last
        text[start - 1 : end] = section + ([""] if end < len(text) else [])
    path.write_text("\n".join(text) + "\n")


def run_omkl(*args) -> dict:
    """Run one ``omkl`` command in a child process; its wall time and peak RSS.

    Parameters
    ----------
    *args
        The command line after ``omkl`` (converted with ``str``).

    Returns
    -------
    dict
        ``code``, ``seconds``, ``stdout``, ``stderr`` (its last 2,000 characters) and ``peak_rss_mb``
        (the peak resident memory of the command's own process).
    """
    return measure([sys.executable, "-m", "omkl_dist.pipelines.cli", *map(str, args)])


def measure(argv: list[str]) -> dict:
    """Run the command ``argv`` in a child process: :func:`run_omkl`'s record of it."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    if result["code"] != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result['stderr']}")
    return result
