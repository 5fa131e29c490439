"""``make bench-cxx``: the authors' C++ toolbox timed on this machine beside ours (issue 36).

The peer table (:mod:`benchmarks.bench_peers`) compares our seconds with the C++ seconds published in
issue 36, measured on another machine. Given a build of the toolbox (Lu, Wu, Hoi,
"Online-Multiple-Kernel-Learning"; ``--toolbox PATH`` or ``OMKL_CXX_TOOLBOX``), this bench runs both
here, alternating: per (learner, data set), ``--repeats`` rounds of one C++ pass and one of our child
processes (:func:`benchmarks.bench_budget.child`: numba warmed up, the minimum of its passes), and
keeps each side's minimum. Both read the same rows: the data set through our reader, permuted with
``numpy.random.default_rng(0)`` (as every bench here), written once as a LIBSVM file for the C++.

The C++'s time is the one it prints (``Learning time``): its training call, which reads and parses
the file in a second thread while it learns (it excludes start-up and building the model); its
mistakes are its ``Learn errRate``. Its parameters are its defaults, passed explicitly
(``-B 100 -eta 0.1 -gamma 0.99 -lambda 0.1 -delta 0.001 -k 20``), the ones
:data:`benchmarks.bench_peers.PEERS` gives ours; its FOGD and RBP draw from the clock, so their
mistakes vary from run to run. The toolbox reads every value as a 32-bit float, and its number parser
gathers digits in a 32-bit integer: the files are written with each value's shortest round-trip text,
and a value with more than 9 digits is refused (it would be read wrong).

Building the toolbox is not part of this project (nothing here downloads): its repository
(github.com/jingcoco/Online-Multiple-Kernel-Learning) lacks the headers of Yue Wu's SOL library
(github.com/yuewu001/sol) it includes (``common/util.h``, ``common/ezOptionParser.hpp``,
``data/DataSetHelper.h``, ``data/parser.h``, ``data/basic_io.*`` ...), and g++ 12 needs four kinds of
edit to compile its MSVC-era templates (redundant member-template headers removed, base-class
initialisers given their template arguments, ``this->eta`` in the NOGD classes, and
``using Kernel_optim<...>::gau; using ...::pol;`` in each learner class); then
``g++ -O3 -I/usr/include/eigen3/Eigen -I/usr/include/eigen3 main.cpp Params.cpp data/basic_io.cpp -o omkl_cxx
-lpthread`` (Debian's ``libeigen3-dev``; its ``kernel.h`` includes ``<Eigen>``).

    python -m benchmarks.bench_cxx --toolbox PATH [--peers kernel-bpas,...] [--data codrna,...] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_budget import FILES, child
from benchmarks.bench_peers import PEERS
from benchmarks.common import RESULTS, kept_notes, replace_section

DATA = ("codrna", "a9a", "ijcnn1")
# issue 36's learners: the budget baselines (a tenth of the C++'s time) and FOGD, NOGD (ten times faster)
DEFAULT_PEERS = ("kernel-rbp", "kernel-forgetron", "kernel-bogd", "kernel-bpas", "kernel-fogd", "kernel-nogd")
CXX_PARAMS = [
    *("-passes", "1", "-B", "100", "-eta", "0.1", "-gamma", "0.99"),
    *("-lambda", "0.1", "-delta", "0.001", "-k", "20"),
]
REPEATS = 3
HEADING = "## The C++ toolbox timed on this machine"
MAX_DIGITS = 9  # the toolbox's parser gathers a value's digits in a 32-bit integer


def cxx_name(peer: str) -> str:
    """The toolbox's ``-opt`` name of a peer (its stochastic forms end in ``_sd``, ours in ``-sd``)."""
    return peer[: -len("-sd")] + "_sd" if peer.endswith("-sd") else peer


def write_libsvm(data: str, path: Path) -> int:
    """Data set ``data`` as our benches read it (rows permuted by ``default_rng(0)``) written as a
    LIBSVM file for the toolbox: labels ±1, non-zero features 1-based in increasing order, each value
    as its shortest round-trip text. Returns the number of rows."""
    from scipy import sparse

    from omkl_dist.storage import read_dataset
    from omkl_dist.storage.datadir import data_dir

    ds = read_dataset(data_dir() / FILES[data])
    X = sparse.csr_matrix(ds.X, dtype=np.float64)
    y = np.asarray(ds.y)
    labels = np.unique(y)
    if len(labels) != 2:
        raise ValueError(f"{data}: the toolbox learns two classes, this data set has {len(labels)}")
    order = np.random.default_rng(0).permutation(X.shape[0])
    X, y = X[order], y[order]
    X.sort_indices()
    with path.open("w") as out:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            values = [repr(float(v)) for v in X.data[lo:hi]]
            for v in values:
                if len(re.sub(r"[^0-9]", "", v.split("e")[0]).lstrip("0")) > MAX_DIGITS:
                    raise ValueError(f"{data}: row {order[i]}'s value {v} has more digits than the toolbox reads")
            features = " ".join(f"{j + 1}:{v}" for j, v in zip(X.indices[lo:hi], values))
            out.write(f"{'+1' if y[i] == labels[1] else '-1'} {features}\n")
    return X.shape[0]


def run_cxx(toolbox: Path, peer: str, file: Path) -> dict:
    """One pass of the toolbox's ``peer`` over ``file``: its printed seconds and mistake rate, and
    the process's CPU seconds (both its threads: learning, and reading the file)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [str(toolbox), "-i", str(file), "-opt", cxx_name(peer), *CXX_PARAMS], capture_output=True, text=True, check=True
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = re.search(r"Learning time:\s*([0-9.eE+-]+)", out)
    rate = re.search(r"Learn errRate:\s*([0-9.eE+-]+)", out)
    if seconds is None or rate is None:
        raise RuntimeError(f"the toolbox printed no learning time or error rate for {peer}:\n{out[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": float(seconds.group(1)), "mistake_rate": float(rate.group(1)), "cpu_seconds": cpu}


def run_cxx_bench(toolbox: Path, results: Path, peers=DEFAULT_PEERS, data=DATA, repeats=REPEATS, log=print) -> dict:
    """Every (peer, data set) on the toolbox and ours, alternating ``repeats`` times; writes
    ``results/cxx.json`` after each row (rows of other pairs already there are kept)."""
    path = results / "cxx.json"
    old = json.loads(path.read_text())["rows"] if path.is_file() else []
    rows = {(r["peer"], r["data"]): r for r in old}
    notes = kept_notes(path)
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in data:
            file = Path(tmp) / f"{name}.libsvm"
            n = write_libsvm(name, file)
            for peer in peers:
                algo, params = PEERS[peer]
                cxx, ours = [], []
                for _ in range(repeats):  # (alternating: a drift of the machine's speed meets both alike)
                    cxx.append(run_cxx(toolbox, peer, file))
                    ours.append(child(algo, name, None, params))
                c, o = min(cxx, key=lambda r: r["seconds"]), min(ours, key=lambda r: r["seconds"])
                rows[(peer, name)] = {
                    "peer": peer,
                    "learner": algo,
                    "data": name,
                    "rows": n,
                    "repeats": repeats,
                    "cxx_seconds": c["seconds"],
                    "cxx_all_seconds": [r["seconds"] for r in cxx],
                    "cxx_cpu_seconds": min(r["cpu_seconds"] for r in cxx),
                    "cxx_mistake_rates": [r["mistake_rate"] for r in cxx],
                    "seconds": o["seconds"],
                    "all_seconds": [s for r in ours for s in r["all_seconds"]],
                    "cpu_seconds": min(r["cpu_seconds"] for r in ours),
                    "mistake_rate": o["mistake_rate"],
                    "load_average": os.getloadavg()[0],
                    "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                }
                log(
                    f"{peer} {name}: C++ {c['seconds']:.2f} s ({100 * c['mistake_rate']:.2f} %), ours "
                    f"{o['seconds']:.3f} s ({100 * o['mistake_rate']:.2f} %): {c['seconds'] / o['seconds']:.1f}x"
                )
                out = {
                    "toolbox": str(toolbox),
                    "parameters": CXX_PARAMS,
                    "rows": sorted(rows.values(), key=lambda r: (r["data"], r["peer"])),
                    "machine": {"cpus": os.cpu_count(), "cpu": _cpu_name()},
                    "notes": notes,
                }
                path.write_text(json.dumps(out, indent=2) + "\n")
    return out


def _cpu_name() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else "unknown"


def markdown(result: dict) -> list[str]:
    lines = [
        "",
        f"{HEADING} (`make bench-cxx`: alternating rounds, each side's minimum; one pass, raw features)",
        "",
        "The authors' C++ toolbox built on this machine (g++ -O3) and timed beside ours on the same permuted rows "
        "(benchmarks/bench_cxx.py says how): the C++'s printed learning time (its training call, reading the file in "
        "a second thread) and its mistake rate (several when it draws from the clock); ours the minimum wall "
        f"seconds of a warmed-up fit, as in the peer table. Machine: {result['machine']['cpu']}, "
        f"{result['machine']['cpus']} cores.",
        "",
        "| C++ learner | ours | data | rows | rounds | C++ mistake % | ours mistake % | C++ s | ours s | C++ CPU s "
        "| ours CPU s | ours vs C++ (wall / CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        rates = " / ".join(sorted({f"{100 * m:.2f}" for m in r["cxx_mistake_rates"]}))
        wall, cpu = r["cxx_seconds"] / r["seconds"], r["cxx_cpu_seconds"] / r["cpu_seconds"]
        lines.append(
            f"| {r['peer']} | {r['learner']} | {r['data']} | {r['rows']:,} | {r['repeats']} | {rates} "
            f"| {100 * r['mistake_rate']:.2f} | {r['cxx_seconds']:.2f} | {r['seconds']:.3f} "
            f"| {r['cxx_cpu_seconds']:.2f} | {r['cpu_seconds']:.2f} | {wall:.1f}x / {cpu:.1f}x |"
        )
    for note in result.get("notes", ()):
        lines += ["", note]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolbox", type=Path, default=os.environ.get("OMKL_CXX_TOOLBOX"))
    parser.add_argument("--peers", default=",".join(DEFAULT_PEERS), help="comma-separated peers of bench_peers")
    parser.add_argument("--data", default=",".join(DATA))
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args(argv)
    if args.toolbox is None or not Path(args.toolbox).is_file():
        parser.error(
            "no C++ toolbox: build it (this module's docstring says how) and pass its binary as --toolbox PATH "
            "or OMKL_CXX_TOOLBOX=PATH"
        )
    unknown = [p for p in args.peers.split(",") if p not in PEERS]
    if unknown:
        parser.error(f"unknown peers {unknown}: choose from {', '.join(PEERS)}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    peers, data = tuple(args.peers.split(",")), tuple(args.data.split(","))
    result = run_cxx_bench(Path(args.toolbox), RESULTS, peers, data, args.repeats)
    replace_section(markdown(result), HEADING)


if __name__ == "__main__":
    main()
