"""How much a process grows while it ingests a file: the block readers' memory tests (a child process,
so that its peak RSS is the ingest's own)."""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = """
import json, resource, sys
from omkl_dist.storage import ingest
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
meta = ingest(sys.argv[1], sys.argv[2])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"rows": meta["n_rows"], "grew_kb": after - before}))
"""


def ingest_growth(path, out) -> dict:
    """``{"rows": the dataset's rows, "grew_kb": the growth of the child's peak RSS while ingesting}``."""
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(out)], capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout.strip().splitlines()[-1])
