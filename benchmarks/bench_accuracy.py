"""``make bench-accuracy``: the batch MKL estimators' test accuracy beside one tuned RBF SVM.

On every binary dataset of the MKBoost paper that we have (:func:`binary_datasets`), over 5 random
50/50 splits (the reproduction's: ``omkl reproduce mkboost --seed 0`` runs 0-4, standardised on the
training half), each estimator is fitted with its defaults -- the kernels with fewer effective
neighbours per training row than a floor dropped, unit-diagonal kernels, the floor (1, n/16, n/4) and
C (2^-1..2^15) by 3-fold cross-validation on the training half (``min_neighbors="auto"``,
``C="auto"``) -- and scored on the test half: SimpleMKL, MKL-SILP, MKL-Level,
Lp-MKL and :class:`~omkl_dist.algorithms.mkl.TunedSVC` (C 2^-5..2^15 × γ 2^-15..2^3). The paper's
protocol (C = 50, unit trace, every kernel) runs beside them as "paper" rows, and MKBoost-D1 at several fixed C
(does choosing its C matter?). Every fit is one line of ``batch-accuracy.jsonl`` (a rerun skips the
fits already there, also those another process appended meanwhile: resumable, and datasets can run in
parallel processes); the summary goes to ``batch-accuracy.json`` and BENCHMARKS.md's "Batch MKL
accuracy" section. Fit times are single runs on a shared 2-core machine. ``--part online`` (or
``both``, the default) runs the online half, :mod:`benchmarks.bench_stream_accuracy`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import RESULTS, replace_section

SPLITS = 5
SEED = 0
TARGET = 0.005  # each ℓ1-MKL solver at least as accurate as the tuned SVC minus 0.5 points (issue 35)
# row label -> the key of omkl_dist.reproduction.mkboost.make_model (or TunedSVC)
DEFAULTS = {"SimpleMKL": "mkl-sd", "SILP": "mkl-silp", "Level": "mkl-level", "Lp-MKL": "lp-mkl", "SVC": "svc"}
PAPER = {"SimpleMKL paper": "mkl-sd", "SILP paper": "mkl-silp", "Level paper": "mkl-level"}
MKBOOST_C = (1.0, 10.0, 50.0, 100.0)
SECTION = "## Batch MKL accuracy"


def binary_datasets() -> list[str]:
    """The MKBoost paper's two-class datasets among ours (its Table 1 order)."""
    from omkl_dist.reproduction.mkboost import resolve_datasets
    from omkl_dist.reproduction.tables import mkboost as paper

    return [name for name in resolve_datasets()[0] if paper.PAPER[name].n_classes == 2]


def make(label: str, random_state: int):
    """A fresh estimator for a row label."""
    from omkl_dist.algorithms.mkl import MIN_NEIGHBORS, TunedSVC
    from omkl_dist.reproduction.mkboost import make_model

    if label == "SVC":
        return TunedSVC(random_state=random_state)
    if label in DEFAULTS:  # the estimators' own defaults (C and the floor "auto", unit diagonal)
        return make_model(
            DEFAULTS[label], random_state, C="auto", kernel_normalization="diagonal", min_neighbors=MIN_NEIGHBORS
        )
    if label in PAPER:
        return make_model(PAPER[label], random_state)
    C = float(label.rsplit("C=", 1)[1])
    return make_model("mkboost-d1", random_state, C=C)


def labels(mkboost: bool) -> list[str]:
    return [*DEFAULTS, *PAPER, *([f"MKBoost-D1 C={C:g}" for C in MKBOOST_C] if mkboost else [])]


def read_runs(path: Path) -> dict:
    """The fits of the JSONL log by (dataset, split, row label)."""
    runs = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            runs[(r["data"], r["split"], r["algo"])] = r
    return runs


def run(
    datasets,
    *,
    splits: int = SPLITS,
    mkboost: bool = True,
    fit: bool = True,
    only_splits=None,
    only_algos=None,
    log=print,
) -> dict:
    """Fit every row label on every split, appending to the JSONL log (``fit=False``: none, the
    summary of the fits logged so far); return the summary report."""
    from omkl_dist.reproduction.mkboost import load_dataset, prepare_split, run_seed, split_indices

    RESULTS.mkdir(parents=True, exist_ok=True)
    runs_path = RESULTS / "batch-accuracy.jsonl"
    done = read_runs(runs_path)
    started = time.perf_counter()
    for name in datasets if fit else ():
        data = load_dataset(name)
        for split in range(splits) if only_splits is None else only_splits:
            train, test = split_indices(len(data.y), 0.5, SEED, split)
            X_train, y_train, X_test, y_test = prepare_split(data.X, data.y, train, test, "standard")
            for label in labels(mkboost):
                if (name, split, label) in done or (only_algos is not None and label not in only_algos):
                    continue
                done.update(read_runs(runs_path))  # another process on other datasets may have run it
                if (name, split, label) in done:
                    continue
                model = make(label, run_seed(SEED, split))
                t0 = time.perf_counter()
                model.fit(X_train, y_train)
                seconds = time.perf_counter() - t0
                row = {
                    "data": name,
                    "split": split,
                    "algo": label,
                    "accuracy": float(np.mean(model.predict(X_test) == y_test)),
                    "seconds": seconds,
                    "C": np.asarray(getattr(model, "C_", [model.C])).tolist(),
                    **({"kernels": model.selected_kernels_} if hasattr(model, "selected_kernels_") else {}),
                    **({"floor": model.neighbor_floor_.tolist()} if hasattr(model, "neighbor_floor_") else {}),
                    "n_kernels": np.asarray(model.kernel_counts_ > 0).sum().item(),
                }
                done[(name, split, label)] = row
                with runs_path.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                log(f"{name} split {split} {label}: {row['accuracy']:.4f} in {seconds:.1f} s (C {row['C']})")
    report = summarise(done, datasets, splits, mkboost)
    keep_unchanged_rows(report, RESULTS / "batch-accuracy.json")
    report["seconds_this_run"] = time.perf_counter() - started
    (RESULTS / "batch-accuracy.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def keep_unchanged_rows(report: dict, previous: Path) -> None:
    """Carry the MKBoost-D1 and *paper* rows of an earlier summary over a run that did not fit them,
    marked ``"earlier": true``: neither uses the MKL estimators' defaults (the paper's protocol passes
    C, the normalisation and ``min_neighbors=0`` explicitly), so a change of the defaults leaves them."""
    if not previous.is_file():
        return
    earlier = json.loads(previous.read_text())["datasets"]
    for name, entry in report["datasets"].items():
        for label, row in earlier.get(name, {}).get("rows", {}).items():
            if (label.startswith("MKBoost") or label in PAPER) and label not in entry["rows"]:
                entry["rows"][label] = {**row, "earlier": True}


def summarise(done: dict, datasets, splits: int, mkboost: bool) -> dict:
    """Mean accuracy, std and fit seconds per dataset and row; the target's verdict per dataset."""
    table = {}
    for name in datasets:
        rows = {}
        for label in labels(mkboost):
            got = [done[(name, s, label)] for s in range(splits) if (name, s, label) in done]
            if len(got) == splits:
                acc = np.array([r["accuracy"] for r in got])
                rows[label] = {
                    "accuracy": float(acc.mean()),
                    "std": float(acc.std(ddof=1)) if splits > 1 else 0.0,
                    "seconds": float(np.sum([r["seconds"] for r in got])),
                    "C": [r["C"] for r in got],
                    **({"floor": [r["floor"] for r in got]} if all("floor" in r for r in got) else {}),
                }
        svc = rows.get("SVC", {}).get("accuracy")
        met = {
            label: rows[label]["accuracy"] >= svc - TARGET
            for label in ("SimpleMKL", "SILP", "Level")
            if svc is not None and label in rows
        }
        table[name] = {"rows": rows, "target_met": met}
    total = sum(r["seconds"] for d in table.values() for r in d["rows"].values() if not r.get("earlier"))
    return {"splits": splits, "seed": SEED, "target": TARGET, "datasets": table, "fit_seconds_total": total}


# measured once (sessions 48-49, MKL-SILP on split 0 and the effective neighbours of mkboost17 on split 0's
# training halves; /tmp scripts, not rerun by this benchmark)
WHY_MIN_NEIGHBORS = (
    "Why the floor, and why chosen: with every kernel of mkboost17 a finer C grid changes nothing -- MKL-SILP's "
    "test accuracy is flat from C = 8 to 2048 (split 0: svmguide3 80.4 %, german.numer 75.6 %, sonar 85.6 %) "
    "because ℓ1-MKL puts 84-94 % of the weight on a gaussian whose Gram is the identity on the training rows "
    "and the rest on the linear kernel: d·I + (1-d)·K is an ℓ2 soft margin on K, whose margin beats every "
    "smooth kernel's, so the optimum is the same at every C. Scaling each kernel to unit variance in feature "
    "space (Kloft et al.'s multiplicative normalisation) kept that choice (81.0 %). The same holds among the "
    "kernels left: at unit diagonal the narrower a gaussian, the more nearly orthogonal the training rows and "
    "the larger the margin, so ℓ1-MKL always leans on the narrowest kernel it is given -- the margin cannot "
    "choose a width, which is what a tuned SVC chooses by cross-validation. A fixed floor of one effective "
    "neighbour per row (session 48's default) dropped only the memorising gaussians and left ℓ1-MKL on the "
    "narrowest smooth one: 72.8-73.5 % on german.numer and 80.2-80.6 % on svmguide3 (SVC 74.9 and 83.2). The "
    "floor is a width: on split 0's training halves, 1 effective neighbour keeps σ ≥ 2 on german.numer "
    "(n = 500) and σ ≥ 1 on svmguide3 (n = 621) with the polynomials, n/16 keeps σ ≥ 4 (and on svmguide3 the "
    "linear kernel), n/4 keeps σ ≥ 8 on both -- the widths the "
    "tuned SVC picks there (σ = 8-64 and 4-16). So the default chooses the floor among 1, n/16 and n/4 with C "
    "by the same 3-fold cross-validation (three times the fits of a fixed floor); the floors it chose are "
    "below. Nothing here looks at the test halves. Against the fixed floor of 1 on the same splits "
    "(SimpleMKL / SILP / Level): german.numer +2.2 / +2.0 / +1.9, svmguide3 +3.0 / +3.2 / +2.7, glass +0.7 "
    "each, wdbc +0.3 / +0.6 / +0.6, sonar unchanged, ionosphere -0.2 / -0.5 / -0.2 (2-4 of 880 test rows; "
    "still above the SVC); Lp-MKL +0.6, +1.4, 0, +0.6, 0, -0.7."
)


# measured once (session 49; a /tmp script with this benchmark's protocol and estimators, not rerun by it)
NOT_SHARED = (
    "The paper's other two binary sets are not among the shared datasets; measured once the same way "
    "(5 splits, standardised on the training half): balance-scale generated from UCI's definition (every "
    "weight and distance in 1..5, class B dropped: 576 × 4) -- SVC 98.7, SimpleMKL 99.2, SILP 99.0, Level "
    "99.2 (✓, C grid to 2^11); monks1 (MONK's problem 1: its 124 training rows and the 432 of its test set, "
    "556 × 6, as the paper's Table 1) -- SVC 95.1, SimpleMKL 95.2, SILP 95.3, Level 95.4 (✓). With the C grid "
    "ending at 2^11 (the table's first run) monks1 gave 94.5 / 94.6 / 93.1 (✗): on split 1 the SVC reaches "
    "100 % at C = 2^13 and so do the MKL solvers once the grid reaches it, so the grid now ends at 2^15 (the "
    "SVC's top). Refitted with that grid, the six sets above gave the same C and test accuracy on every "
    "(dataset, split, solver): the table stands."
)


def floor_counts(report: dict, name: str, label: str) -> str:
    """How many splits chose each floor (1, n/16, n/4: in that order, as candidates are listed)."""
    floors = report["datasets"][name]["rows"].get(label, {}).get("floor")
    if not floors:
        return "-"
    values = sorted({f for per_split in floors for f in per_split})
    return " / ".join(f"{sum(v in per_split for per_split in floors)}×{v:.3g}" for v in values)


def markdown(report: dict) -> list[str]:
    """BENCHMARKS.md's section from ``batch-accuracy.json``."""
    names = list(report["datasets"])
    algos = [a for a in labels(True) if any(a in report["datasets"][n]["rows"] for n in names)]
    carried = {label for d in report["datasets"].values() for label, r in d["rows"].items() if r.get("earlier")}
    kinds = (("*paper*", True), ("MKBoost", False))
    earlier = [kind for kind, paper in kinds if any((c in PAPER) == paper for c in carried)]
    lines = [
        "",
        f"{SECTION} (benchmarks/bench_accuracy.py, results/batch-accuracy.json)",
        "",
        f"Test accuracy (%), mean ± std over {report['splits']} random 50/50 splits (the reproduction's runs "
        f"0-{report['splits'] - 1} of seed {report['seed']}, standardised on the training half) of the MKBoost "
        "paper's binary datasets (balance-scale and monks1, the other two, are not among ours). Defaults "
        '(`min_neighbors="auto"`, `C="auto"`): mkboost17 less the kernels under which the training rows '
        "have fewer effective neighbours each than a floor, unit-diagonal kernels, the floor (1, n/16 or n/4 "
        "of the n training rows) and C (2^-1..2^15, factors of 4) chosen together by 3-fold cross-validation "
        "on the training half. SVC: one gaussian SVM, C 2^-5..2^15 × γ 2^-15..2^3 by "
        "the same cross-validation. *paper*: C = 50, unit trace, every kernel (`omkl reproduce mkboost`). "
        "MKBoost-D1 at fixed C: whether its SVMs' C is worth choosing"
        + (f" ({' and '.join(earlier)} rows: an earlier run, their settings unchanged)" if earlier else "")
        + ". ✓/✗: within 0.5 points of the SVC or not.",
        "",
        "| algorithm | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for algo in algos:
        cells = []
        for n in names:
            d = report["datasets"][n]
            r = d["rows"].get(algo)
            if r is None:
                cells.append("-")
                continue
            mark = {True: " ✓", False: " ✗"}.get(d["target_met"].get(algo), "")
            cells.append(f"{100 * r['accuracy']:.1f} ± {100 * r['std']:.1f}{mark}")
        lines.append(f"| {algo} | " + " | ".join(cells) + " |")
    lines += ["", WHY_MIN_NEIGHBORS, "", NOT_SHARED, "", "Floors chosen (splits × effective neighbours per row):", ""]
    lines += ["| algorithm | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for algo in (a for a in DEFAULTS if a != "SVC" and a in algos):
        lines.append(f"| {algo} | " + " | ".join(floor_counts(report, n, algo) for n in names) + " |")
    lines += ["", "Fit seconds, all splits (single runs on a shared 2-core machine):", ""]
    lines += ["| algorithm | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for algo in algos:
        cells = [
            f"{report['datasets'][n]['rows'][algo]['seconds']:.0f}" if algo in report["datasets"][n]["rows"] else "-"
            for n in names
        ]
        lines.append(f"| {algo} | " + " | ".join(cells) + " |")
    lines += ["", f"Total fit time: {report['fit_seconds_total'] / 60:.0f} minutes."]
    return lines


def main(argv=None) -> None:
    from benchmarks import bench_stream_accuracy as online

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default=None, help="comma-separated subset (default: every binary one)")
    parser.add_argument("--splits", type=int, default=SPLITS)
    parser.add_argument(
        "--only-splits", default=None, help="fit only these comma-separated splits (another process runs the rest)"
    )
    parser.add_argument(
        "--algos", default=None, help="fit only these comma-separated row labels (another process runs the rest)"
    )
    parser.add_argument("--skip-mkboost", action="store_true", help="no MKBoost-D1 rows at fixed C")
    parser.add_argument("--streams", default=",".join(online.STREAMS), help="the online half's streams")
    parser.add_argument("--part", choices=("both", "batch", "online"), default="both")
    parser.add_argument("--rows", default=None, help="the online half: only these comma-separated row labels")
    parser.add_argument("--summary-only", action="store_true", help="the batch half's tables from its log, no fit")
    args = parser.parse_args(argv)
    if args.part != "online":
        datasets = args.datasets.split(",") if args.datasets else binary_datasets()
        report = run(
            datasets,
            splits=args.splits,
            mkboost=not args.skip_mkboost,
            fit=not args.summary_only,
            only_splits=None if args.only_splits is None else [int(k) for k in args.only_splits.split(",")],
            only_algos=None if args.algos is None else args.algos.split(","),
            log=lambda m: print(m, flush=True),
        )
        replace_section(markdown(report), SECTION)
        print(f"wrote {RESULTS / 'batch-accuracy.json'} and BENCHMARKS.md ({report['seconds_this_run']:.0f} s)")
    if args.part != "batch":
        if not online.has_river():
            print("river is not installed (pip install -e '.[bench]'): the online half runs without its rows")
        only = None if args.rows is None else args.rows.split(",")
        report = online.run(args.streams.split(","), only=only, log=lambda m: print(m, flush=True))
        (RESULTS / "online-accuracy.json").write_text(json.dumps(report, indent=2) + "\n")
        section = online.markdown(report)
        replace_section(section, online.SECTION)
        print("\n".join(section))
        print(f"wrote {RESULTS / 'online-accuracy.json'} and BENCHMARKS.md")


if __name__ == "__main__":
    main()
