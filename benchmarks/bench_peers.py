"""``make bench-peers`` (and ``make bench``'s peer part): every learner of the authors' C++ toolbox
(Lu, Wu, Hoi, "Online-Multiple-Kernel-Learning": ``src/main.cpp``'s ``-opt`` names) that this project
has, with the toolbox's parameters, on cod-rna, a9a and ijcnn1 -- mistakes and seconds (the minimum
of up to 5 passes, one for a pass of 30 s or more, each case in a child process that warms numba up on 2,000 rows first:
:func:`benchmarks.bench_budget.child`; rows permuted with ``numpy.random.default_rng(0)``, raw
features, one pass).

The toolbox's defaults (``src/Params.cpp``): 16 kernels (polynomial p = 1, 2, 3 and gaussians
σ = 2^-6..2^6, unnormalised: ``omkc16``), ``-eta 0.1``, ``-gamma 0.99`` (the Hedge discount on a
mistake), ``-B 100`` per kernel, ``-lambda 0.1`` (BOGD), ``-delta 0.001`` (stochastic updates),
``-k 20`` (NOGD's features); FOGD's 13 gaussians with 100 directions each. Ours differ where said:
NOGD runs on the 16 kernels normalised (``omkc16+norm``: we combine the kernels' scores where the C++
combines their signs, and the unnormalised cubic kernel's scores on raw cod-rna drown the others').

The C++ columns are the numbers published in issue 36 (the toolbox built with -O3 on this machine
class, one core, a quiet machine) and, for SPA on ijcnn1, issue 4's C++ BOMKL tool; a learner
without a published number shows "—" (the Projectrons: docs/algorithms/projectron.md says where the
C++ and the paper differ). The PA-mode learners (kernel-ddpa/-sdpa) take the toolbox's ``-eta`` as
PA-I's C; the ``_sd`` budget forms are our ``update="S"`` with the toolbox's ``-delta``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from benchmarks.bench_budget import BLOCK_SIZE, LONG_SECONDS, REPEATS, child
from benchmarks.common import RESULTS, kept_notes

DATA = ("codrna", "a9a", "ijcnn1")
_ONE_PASS = {"n_epochs": 1, "shuffle": False}  # (rows permuted by the child, as `omkl run`)
_POOL = {"kernels": "omkc16", **_ONE_PASS}
_BUDGET = {**_POOL, "budget": 100, "gamma": 0.99}
_SD = {"update": "S", "delta": 0.001}  # the toolbox's kernel_*_sd: stochastic updates, -delta 0.001
# C++ -opt name -> (our algorithm, its parameters as the toolbox's)
PEERS = {
    # one kernel: the toolbox's ``-single 1`` default, its second gaussian (``gau[1]``, σ = 2^-5)
    "kernel-single": ("perceptron", {"kernel": "gaussian:2^-5", **_ONE_PASS}),
    "kernel-dd": ("omkc", {**_POOL, "update": "D", "combination": "D", "beta": 0.99}),
    "kernel-ddave": ("omkc", {**_POOL, "update": "D", "combination": "U", "beta": 0.99}),
    "kernel-sd": ("omkc", {**_POOL, "update": "S", "combination": "D", "beta": 0.99, "delta": 0.001}),
    "kernel-ddpa": ("omkc-pa", {**_POOL, "update": "D", "combination": "D", "beta": 0.99, "C": 0.1}),
    "kernel-sdpa": ("omkc-pa", {**_POOL, "update": "S", "combination": "D", "beta": 0.99, "delta": 0.001, "C": 0.1}),
    "spa (BOMKL)": ("spa", {**_POOL, "hedge_loss": "mistake", "gamma": 0.99, "eta": 0.1}),
    "kernel-rbp": ("rbp", _BUDGET),
    "kernel-forgetron": ("forgetron", _BUDGET),
    "kernel-bogd": ("bogd", {**_BUDGET, "eta": 0.1, "lam": 0.1}),
    "kernel-bpas": ("bpas", {**_BUDGET, "eta": 0.1}),
    "kernel-rbp-sd": ("rbp", {**_BUDGET, **_SD}),
    "kernel-forgetron-sd": ("forgetron", {**_BUDGET, **_SD}),
    "kernel-bogd-sd": ("bogd", {**_BUDGET, **_SD, "eta": 0.1, "lam": 0.1}),
    "kernel-bpas-sd": ("bpas", {**_BUDGET, **_SD, "eta": 0.1}),
    # the C++ Projectrons have no η (they add on every mistake until B is full): a small one does the same
    "kernel-projectron": ("projectron", {**_BUDGET, "eta": 1e-3}),
    "kernel-projectronpp": ("projectron++", {**_BUDGET, "eta": 1e-3}),
    "kernel-fogd": ("fogd", {"kernels": "gaussian:2^-6..2^6", "n_components": 100, "eta": 0.1, **_ONE_PASS}),
    "kernel-nogd": ("nogd", {"kernels": "omkc16+norm", "budget": 100, "n_components": 20, "eta": 0.1, **_ONE_PASS}),
}
# the C++'s published numbers: seconds, mistake % (issue 36; SPA on ijcnn1: issue 4's BOMKL tool)
CXX = {
    "spa (BOMKL)": {"codrna": (13.31, 12.12), "a9a": (19.42, 16.66), "ijcnn1": (139.3, 3.14)},
    "kernel-bpas": {"codrna": (2.61, 12.82), "a9a": (3.34, 19.17)},
    "kernel-fogd": {"codrna": (2.20, 15.1), "ijcnn1": (4.17, 6.5), "a9a": (1.06, 20.7)},
    "kernel-nogd": {"codrna": (2.13, 12.8), "ijcnn1": (5.29, 9.6), "a9a": (2.39, 17.4)},
}


def run_peers_bench(results: Path, peers=tuple(PEERS), data=DATA, log=print) -> dict:
    """Measure the given peers on the given data sets; rows already in ``results/peers.json`` for
    other (peer, data) pairs are kept, so a long comparison can be run in parts."""
    path = results / "peers.json"
    old = json.loads(path.read_text())["rows"] if path.is_file() else []
    rows = {(r["peer"], r["data"]): r for r in old if r["peer"] in PEERS}
    notes = kept_notes(path)
    out: dict = {}
    for name in data:
        for peer in peers:
            algo, params = PEERS[peer]
            row = {"peer": peer, **child(algo, name, None, params)}
            rows[(peer, name)] = row
            log(f"{peer} ({algo}) {name}: {row['seconds']:.2f} s, {100 * row['mistake_rate']:.2f} % mistakes")
            out = {  # written after every row: an interrupted run keeps what it measured
                "peers": PEERS,
                "block_size": BLOCK_SIZE,
                "repeats": REPEATS,
                "rows": [rows[k] for k in sorted(rows, key=lambda k: (DATA.index(k[1]), list(PEERS).index(k[0])))],
                "cxx": CXX,
                "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
                "notes": notes,  # (paragraphs written beside the table: kept until rewritten by hand)
            }
            path.write_text(json.dumps(out, indent=2) + "\n")
    return out


def _load(row: dict) -> str:
    """The row's load average, or "—" for a row measured before rows recorded theirs."""
    return f"{row['load_average']:.1f}" if "load_average" in row else "—"


def markdown(result: dict) -> list[str]:
    lines = [
        "",
        f"## Beside the authors' C++ toolbox (its parameters, raw features, one pass, block {result['block_size']}; "
        f"min of up to {result['repeats']} passes; `make bench-peers`)",
        "",
        "Every learner of the C++ `Online-Multiple-Kernel-Learning` toolbox we have, with its parameters "
        "(benchmarks/bench_peers.py lists them and where ours differ). The C++ columns are the numbers **as "
        "published in issue 36** (one core, quiet machine, same machine class; SPA on ijcnn1: issue 4's BOMKL "
        "tool), not remeasured here (the next section times a build of the toolbox beside ours on one machine, "
        "`make bench-cxx`); ours use both cores, so CPU s is the per-core comparison. Passes stop "
        f"after {LONG_SECONDS:.0f} s in all (the `passes` column). `load`: the 1-minute load average when the row "
        f"was measured, on {result['machine']['cpus']} cores: above that, seconds are inflated by waiting and only "
        "CPU s compares.",
        "",
        "| C++ learner | ours | data | rows | mistake % | C++ mistake % | seconds | CPU s | passes | load "
        "| C++ s (published) | vs C++ (wall / CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        cxx = result["cxx"].get(r["peer"], {}).get(r["data"])
        cxx_m, cxx_s, ratio = ("—", "—", "—")
        if cxx is not None:
            cxx_s, cxx_m = cxx
            ratio = f"{cxx_s / r['seconds']:.1f}x / {cxx_s / r['cpu_seconds']:.1f}x"
        lines.append(
            f"| {r['peer']} | {r['learner']} | {r['data']} | {r['rows']:,} | {100 * r['mistake_rate']:.2f} | {cxx_m} | "
            f"{r['seconds']:.2f} | {r['cpu_seconds']:.2f} | {len(r['all_seconds'])} | {_load(r)} | {cxx_s} | {ratio} |"
        )
    for note in result.get("notes", ()):  # what the run's author wrote beside it (a paragraph each)
        lines += ["", note]
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of: " + ", ".join(PEERS))
    parser.add_argument("--data", default=",".join(DATA), help="comma-separated subset of: " + ", ".join(DATA))
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    run_peers_bench(RESULTS, tuple(args.peers.split(",")), tuple(args.data.split(",")))
