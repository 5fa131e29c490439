"""numba's compile time per function on a cold cache (issue 39): what ``omkl warmup`` pays for.

Every online and batch algorithm is warmed in this one process (``pipelines.warmup``'s small
variants, without the cluster rounds) with numba's cache pointed at a fresh temporary folder, and
numba's ``numba:compile`` events give each compiled specialisation's time; a kernel's time is its
self time (the nested compiles of the functions it calls are subtracted, so inlined helpers count
in their caller and a callee compiled on the way counts once, in itself). Each specialisation's
argument types are kept: two of one function that differ only in a literal, an integer's
signedness or an array's layout are compile time for nothing. Times are the compiling thread's CPU
seconds (numba compiles on the calling thread): on a shared machine wall seconds measure the load.

    python -m benchmarks.compile_times [algorithm ...] [--out benchmarks/results/compile-times.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS

TOP = 40  # rows printed


def measure(algorithms: list[str] | None) -> dict:
    """Warm ``algorithms`` (default: all) on a cold cache, recording every compile."""
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="omkl-cold-")  # before omkl_dist is imported
    from numba.core import event

    from pipelines import warmup

    stack: list[list] = []  # [name, start, seconds of nested compiles]
    seconds: dict[str, float] = {}
    signatures: dict[str, list[str]] = {}

    class Timer(event.Listener):
        def on_start(self, ev):
            func = ev.data["dispatcher"].py_func
            name = f"{func.__module__}.{func.__qualname__}"
            signatures.setdefault(name, []).append(", ".join(str(a) for a in ev.data["args"]))
            stack.append([name, time.thread_time(), 0.0])

        def on_end(self, ev):
            name, start, nested = stack.pop()
            took = time.thread_time() - start
            seconds[name] = seconds.get(name, 0.0) + took - nested
            if stack:
                stack[-1][2] += took

    event.register("numba:compile", Timer())
    names = warmup.algorithms_in_order(algorithms or None)
    start, cpu = time.perf_counter(), time.process_time()
    for name in names:
        warmup.warm_one(name, cluster=False)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    rows = sorted(seconds.items(), key=lambda kv: -kv[1])
    return {
        "algorithms": names,
        "total_s": round(total, 2),
        "total_cpu_s": round(cpu, 2),
        "load_average": os.getloadavg()[0],
        "compile_s": round(sum(seconds.values()), 2),
        "functions": len(rows),
        "specialisations": sum(len(s) for s in signatures.values()),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "by_function": [{"function": name, "seconds": round(s, 3), "signatures": signatures[name]} for name, s in rows],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algorithms", nargs="*", help="default: every algorithm")
    parser.add_argument("--out", type=Path, default=RESULTS / "compile-times.json")
    args = parser.parse_args(argv)
    report = measure(args.algorithms)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(
        f"total {report['total_s']:.1f} s ({report['total_cpu_s']:.1f} s CPU, load {report['load_average']:.1f}), "
        f"compile {report['compile_s']:.1f} s over {report['functions']} "
        f"functions, {report['specialisations']} specialisations"
    )
    for row in report["by_function"][:TOP]:
        print(f"{row['seconds']:7.2f} s  x{len(row['signatures'])}  {row['function']}")


if __name__ == "__main__":
    main(sys.argv[1:])
