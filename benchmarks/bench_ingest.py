"""``make bench``'s ingest part: a CSV file of ROWS rows (18 features, word labels), plain and
gzip-compressed, ingested by ``omkl data ingest`` block by block -- what it does with a CSV/TSV file
of 64 MiB or more -- and whole (the reader every smaller file takes, and every file took before),
each in its own process: seconds, rows/s and the process's peak RSS."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import kept_notes, measure

ROWS = 2_000_000
# the whole-file reader, forced: the block reader's size threshold above any file
_WHOLE = (
    "import sys; from omkl_dist.storage.readers import blocks; blocks.STREAM_MIN_BYTES = 2**62; "
    "from omkl_dist.pipelines.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _write_csv(path: Path, rows: int) -> None:
    """``rows`` rows, 'yes'/'no' labels first, 18 normal features printed to 6 decimals (seed 0)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 18)).round(6)
    labels = np.where(X[:, 0] + 0.5 * rng.normal(size=rows) > 0, "yes", "no")
    table = pa.table({"outcome": labels, **{f"f{j}": X[:, j] for j in range(18)}})
    pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(quoting_style="none"))


def _ingest(reader: str, source: Path, out: Path) -> dict:
    args = ["data", "ingest", str(source), "--out", str(out), "--overwrite"]
    cli = [sys.executable, "-m", "omkl_dist.pipelines.cli"] if reader == "blocks" else [sys.executable, "-c", _WHOLE]
    done = measure([*cli, *args])
    return {"seconds": done["seconds"], "rows_per_second": ROWS / done["seconds"], "peak_rss_mb": done["peak_rss_mb"]}


def run_ingest_bench(results: Path, log=print) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain = tmp / "rows.csv"
        _write_csv(plain, ROWS)
        packed = tmp / "rows.csv.gz"
        with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        for source in (plain, packed):
            for reader in ("blocks", "whole"):
                r = _ingest(reader, source, tmp / "ds")
                r.update(file=source.name, mb=source.stat().st_size / 2**20, reader=reader)
                rows.append(r)
                log(f"ingest {source.name} {reader}: {r['seconds']:.1f} s, peak {r['peak_rss_mb']:.0f} MB")
    report = {
        "rows": rows,
        "data": f"{ROWS:,} rows x 18 features, labels 'yes'/'no', seed 0",
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "notes": kept_notes(results / "ingest.json"),
    }
    (results / "ingest.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def markdown(report: dict) -> list[str]:
    lines = [
        "",
        "## Ingesting a large CSV file",
        "",
        f"`omkl data ingest` of a CSV file ({report['data']}), each run in its own process (peak RSS is "
        "its own). *blocks*: read in blocks of whole lines, twice (the labels and checks, then the features "
        "chunk by chunk) -- what `omkl data ingest`, `submit` and `retrain` do with a CSV/TSV file of 64 MiB or "
        "more; *whole*: the file's content, pyarrow's table of it and the matrix in memory at once, as every "
        "text file was read before (and a smaller one still is). The same dataset either way, bit for bit.",
        "",
        "| file | MB | reader | seconds | rows/s | peak RSS MB |",
        "|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['file']} | {r['mb']:.0f} | {r['reader']} | {r['seconds']:.1f} | {r['rows_per_second']:,.0f} | "
            f"{r['peak_rss_mb']:,.0f} |"
        )
    for note in report.get("notes", []):
        lines += ["", note]
    return lines
