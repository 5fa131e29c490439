"""Running the `omkl` command line from tests: in a child process, as a user would."""

from __future__ import annotations

import json
import subprocess
import sys

OMKL = [sys.executable, "-m", "omkl_dist.pipelines.cli"]


def omkl(*args, check=True, timeout=600):
    """``omkl ARGS`` in a child process; a failure (when ``check``) shows its stderr."""
    proc = subprocess.run([*OMKL, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"omkl {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def last_json(proc) -> dict:
    """The JSON object a command printed on its last line."""
    return json.loads(proc.stdout.strip().splitlines()[-1])
