"""Running the `omkl` command line from tests: in a child process, as a user would, or in this process.

A child process costs about 2.5 s before the command starts (Python, numpy, numba, dask, sklearn and
the package's kernels loaded again). Tests whose subject is how a process starts, exits, is signalled
or killed, or talks to a cluster as a separate client, use ``omkl``; tests that need what a command
computes or writes (a reference model, a report, a refusal's message and exit status) use
``omkl_here``, the same command line through click's test runner.
"""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

OMKL = [sys.executable, "-m", "omkl_dist.pipelines.cli"]


def omkl(*args, check=True, timeout=600, cwd=None):
    """``omkl ARGS`` in a child process (in folder ``cwd``); a failure (when ``check``) shows its stderr."""
    proc = subprocess.run([*OMKL, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"omkl {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def omkl_here(*args, check=True):
    """``omkl ARGS`` in this process, answered as ``omkl`` answers (exit status, stdout, stderr);
    an exception that escapes the command line fails the test with its traceback."""
    from omkl_dist.pipelines.cli import main

    argv = list(map(str, args))
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    proc = subprocess.CompletedProcess(["omkl", *argv], result.exit_code, result.stdout, result.stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"omkl {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def last_json(proc) -> dict:
    """The JSON object a command printed on its last line."""
    return json.loads(proc.stdout.strip().splitlines()[-1])
