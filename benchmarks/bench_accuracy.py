"""``make bench-accuracy``: the batch MKL estimators' test accuracy beside one tuned RBF SVM.

On every binary dataset of the MKBoost paper that we have (:func:`binary_datasets`), over 5 random
50/50 splits (the reproduction's: ``omkl reproduce mkboost --seed 0`` runs 0-4, standardised on the
training half), each estimator is fitted with its defaults -- unit-diagonal kernels, C by 3-fold
cross-validation on the training half -- and scored on the test half: SimpleMKL, MKL-SILP, MKL-Level,
Lp-MKL and :class:`~omkl_dist.algorithms.mkl.TunedSVC` (C 2^-5..2^15 × γ 2^-15..2^3). The paper's
protocol (C = 50, unit trace) runs beside them as "paper" rows, and MKBoost-D1 at several fixed C
(does choosing its C matter?). Every fit is one line of ``batch-accuracy.jsonl`` (a rerun skips the
fits already there: resumable); the summary goes to ``batch-accuracy.json`` and BENCHMARKS.md's
"Batch MKL accuracy" section. Fit times are single runs on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time

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
    from omkl_dist.algorithms.mkl import TunedSVC
    from omkl_dist.reproduction.mkboost import make_model

    if label == "SVC":
        return TunedSVC(random_state=random_state)
    if label in DEFAULTS:  # the estimators' own defaults (C="auto", unit diagonal)
        return make_model(DEFAULTS[label], random_state, C="auto", kernel_normalization="diagonal")
    if label in PAPER:
        return make_model(PAPER[label], random_state)
    C = float(label.rsplit("C=", 1)[1])
    return make_model("mkboost-d1", random_state, C=C)


def labels(mkboost: bool) -> list[str]:
    return [*DEFAULTS, *PAPER, *([f"MKBoost-D1 C={C:g}" for C in MKBOOST_C] if mkboost else [])]


def run(datasets, *, splits: int = SPLITS, mkboost: bool = True, log=print) -> dict:
    """Fit every row label on every split, appending to the JSONL log; return the summary report."""
    from omkl_dist.reproduction.mkboost import load_dataset, prepare_split, run_seed, split_indices

    RESULTS.mkdir(parents=True, exist_ok=True)
    runs_path = RESULTS / "batch-accuracy.jsonl"
    done = {}
    if runs_path.is_file():
        for line in runs_path.read_text().splitlines():
            r = json.loads(line)
            done[(r["data"], r["split"], r["algo"])] = r
    started = time.perf_counter()
    for name in datasets:
        data = load_dataset(name)
        for split in range(splits):
            train, test = split_indices(len(data.y), 0.5, SEED, split)
            X_train, y_train, X_test, y_test = prepare_split(data.X, data.y, train, test, "standard")
            for label in labels(mkboost):
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
                }
                done[(name, split, label)] = row
                with runs_path.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                log(f"{name} split {split} {label}: {row['accuracy']:.4f} in {seconds:.1f} s (C {row['C']})")
    report = summarise(done, datasets, splits, mkboost)
    report["seconds_this_run"] = time.perf_counter() - started
    (RESULTS / "batch-accuracy.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


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
                }
        svc = rows.get("SVC", {}).get("accuracy")
        met = {
            label: rows[label]["accuracy"] >= svc - TARGET
            for label in ("SimpleMKL", "SILP", "Level")
            if svc is not None and label in rows
        }
        table[name] = {"rows": rows, "target_met": met}
    total = sum(r["seconds"] for d in table.values() for r in d["rows"].values())
    return {"splits": splits, "seed": SEED, "target": TARGET, "datasets": table, "fit_seconds_total": total}


def markdown(report: dict) -> list[str]:
    """BENCHMARKS.md's section from ``batch-accuracy.json``."""
    names = list(report["datasets"])
    algos = [a for a in labels(True) if any(a in report["datasets"][n]["rows"] for n in names)]
    lines = [
        "",
        f"{SECTION} (benchmarks/bench_accuracy.py, results/batch-accuracy.json)",
        "",
        f"Test accuracy (%), mean ± std over {report['splits']} random 50/50 splits (the reproduction's runs "
        f"0-{report['splits'] - 1} of seed {report['seed']}, standardised on the training half) of the MKBoost "
        "paper's binary datasets. Defaults: mkboost17, unit-diagonal kernels, C from (1, 10, 100) by 3-fold "
        "cross-validation on the training half. SVC: one gaussian SVM, C 2^-5..2^15 × γ 2^-15..2^3 by the same "
        "cross-validation. *paper*: C = 50, unit trace (`omkl reproduce mkboost`). MKBoost-D1 at fixed C: "
        "whether its SVMs' C is worth choosing. ✓/✗: within 0.5 points of the SVC or not.",
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
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--datasets", default=None, help="comma-separated subset (default: every binary one)")
    parser.add_argument("--splits", type=int, default=SPLITS)
    parser.add_argument("--skip-mkboost", action="store_true", help="no MKBoost-D1 rows at fixed C")
    args = parser.parse_args(argv)
    datasets = args.datasets.split(",") if args.datasets else binary_datasets()
    report = run(datasets, splits=args.splits, mkboost=not args.skip_mkboost, log=lambda m: print(m, flush=True))
    replace_section(markdown(report), SECTION)
    print(f"wrote {RESULTS / 'batch-accuracy.json'} and BENCHMARKS.md ({report['seconds_this_run']:.0f} s)")


if __name__ == "__main__":
    main()
