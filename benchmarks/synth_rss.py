"""Peak memory and time of generating a 1,000,000 x 18 synthetic stream, measured in a child process.

The generation runs in a fresh interpreter so its peak resident set size is its own:
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the largest peak among waited-for children,
in KiB on Linux) is read after the child exits. A first child that only imports the same modules
gives the interpreter + library baseline, so the generation's own share is visible too.

Usage::

    .venv/bin/python benchmarks/synth_rss.py [--rows 1000000] [--features 18] [--chunk-rows 65536]

prints one JSON object: rows, features, chunk_rows, dtype, seconds (wall time of ``synthesize`` in
the child), peak_rss_mb (child peak, MiB), baseline_rss_mb (import-only child peak, MiB) and
bytes_on_disk.

Example
-------
>>> import subprocess, sys, json  # doctest: +SKIP
>>> json.loads(subprocess.check_output([sys.executable, "benchmarks/synth_rss.py", "--rows", "1000"]))["rows"]
1000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

_IMPORTS = "import omkl_dist.storage.synth"

_CHILD = """
import json, sys, time
import omkl_dist.storage.synth
out, rows, features, chunk_rows, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
t0 = time.perf_counter()
omkl_dist.storage.synth.synthesize(out, rows=rows, features=features, seed=0, chunk_rows=chunk_rows, dtype=dtype)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def _children_peak_mb() -> float:
    # ru_maxrss is KiB on Linux (bytes on macOS); this benchmark targets Linux workers.
    kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return kib / 1024.0 if sys.platform != "darwin" else kib / 2**20


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=18)
    parser.add_argument("--chunk-rows", type=int, default=65_536)
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    args = parser.parse_args(argv)

    # Baseline first: RUSAGE_CHILDREN keeps the maximum over children, so the order matters.
    subprocess.run([sys.executable, "-c", _IMPORTS], check=True)
    baseline = _children_peak_mb()

    with tempfile.TemporaryDirectory(prefix="omkl-synth-rss-") as tmp:
        out = Path(tmp) / "stream"
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                str(out),
                str(args.rows),
                str(args.features),
                str(args.chunk_rows),
                args.dtype,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        seconds = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
        peak = _children_peak_mb()
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())

    result = {
        "rows": args.rows,
        "features": args.features,
        "chunk_rows": args.chunk_rows,
        "dtype": args.dtype,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak, 1),
        "baseline_rss_mb": round(baseline, 1),
        "bytes_on_disk": size,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
