"""``make bench``'s ingest part: a CSV file of ROWS rows (18 features, word labels), plain and
gzip-compressed, and a LIBSVM file of a9a's shape (LIBSVM_ROWS rows of 123 binary features, 14 set),
ingested by ``omkl data ingest`` block by block -- what it does with a CSV/TSV or dense LIBSVM file
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
LIBSVM_ROWS = 1_000_000
# the whole-file reader, forced: the block reader's size threshold above any file
_WHOLE = (
    "import sys; from omkl_dist.storage.readers import blocks; blocks.STREAM_MIN_BYTES = 2**62; "
    "from omkl_dist.pipelines.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _write_csv(path: Path, rows: int, ids: bool = False) -> None:
    """``rows`` rows, 'yes'/'no' labels first, 18 normal features printed to 6 decimals (seed 0);
    ``ids``: a first column of customer ids (``C0000000``...)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 18)).round(6)
    labels = np.where(X[:, 0] + 0.5 * rng.normal(size=rows) > 0, "yes", "no")
    first = {"customer_id": np.char.add("C", np.char.zfill(np.arange(rows).astype(str), 7))} if ids else {}
    table = pa.table({**first, "outcome": labels, **{f"f{j}": X[:, j] for j in range(18)}})
    pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(quoting_style="none"))


def _write_libsvm(path: Path, rows: int) -> None:
    """``rows`` rows of a9a's shape: 14 of 123 binary features set, labels +1/-1 (seed 0)."""
    rng = np.random.default_rng(0)
    with open(path, "w") as fh:
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            on = np.sort(np.argsort(rng.random((n, 123)), axis=1)[:, :14], axis=1) + 1
            labels = np.where(on[:, 0] % 2 == 1, "+1", "-1")
            fh.writelines(f"{label} {' '.join(f'{j}:1' for j in row)}\n" for label, row in zip(labels, on.tolist()))


def _ingest(reader: str, source: Path, out: Path, rows: int, *extra: str) -> dict:
    args = ["data", "ingest", str(source), "--out", str(out), "--overwrite", *extra]
    cli = [sys.executable, "-m", "omkl_dist.pipelines.cli"] if reader == "blocks" else [sys.executable, "-c", _WHOLE]
    done = measure([*cli, *args])
    return {"seconds": done["seconds"], "rows_per_second": rows / done["seconds"], "peak_rss_mb": done["peak_rss_mb"]}


def run_ingest_bench(results: Path, log=print) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain = tmp / "rows.csv"
        _write_csv(plain, ROWS)
        packed = tmp / "rows.csv.gz"
        with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        libsvm = tmp / "a9a-shaped.svm"
        _write_libsvm(libsvm, LIBSVM_ROWS)
        ids = tmp / "ids.csv"
        _write_csv(ids, ROWS, ids=True)
        keep = ("--label-column", "outcome", "--keep", "customer_id")
        for source, n, extra in ((plain, ROWS, ()), (packed, ROWS, ()), (libsvm, LIBSVM_ROWS, ()), (ids, ROWS, keep)):
            for reader in ("blocks", "whole"):
                r = _ingest(reader, source, tmp / "ds", n, *extra)
                name = source.name + (" --keep customer_id" if extra else "")
                r.update(file=name, mb=source.stat().st_size / 2**20, reader=reader)
                rows.append(r)
                log(f"ingest {source.name} {reader}: {r['seconds']:.1f} s, peak {r['peak_rss_mb']:.0f} MB")
    report = {
        "rows": rows,
        "ids": "ids.csv: the CSV file with a first column of customer ids, kept (--keep customer_id).",
        "data": f"{ROWS:,} rows x 18 features, labels 'yes'/'no', seed 0",
        "libsvm": f"{LIBSVM_ROWS:,} rows of a9a's shape (123 binary features, 14 set), labels +1/-1, seed 0",
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "notes": kept_notes(results / "ingest.json"),
    }
    (results / "ingest.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def markdown(report: dict) -> list[str]:
    lines = [
        "",
        "## Ingesting a large CSV or LIBSVM file",
        "",
        f"`omkl data ingest` of a CSV file ({report['data']}) and of a LIBSVM file "
        f"({report.get('libsvm', 'a9a-shaped')}), each run in its own process (peak RSS is "
        "its own). *blocks*: read in blocks of whole lines -- a CSV once (every row checked as its features are "
        "written chunk by chunk; the labels last), a LIBSVM file once, its parse kept on disk for its features "
        "(its width, the largest index, is known only at its end) -- what `omkl data ingest`, `submit` and "
        "`retrain` do with a CSV/TSV or dense LIBSVM file of 64 MiB or more; *whole*: the file's content, its "
        "parse (pyarrow's table; scikit-learn's sparse matrix) and the matrix in memory at once, as every text "
        "file was read before (and a smaller one still is). The same dataset either way, bit for bit. "
        + report.get("ids", ""),
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
