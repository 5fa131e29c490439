"""``omkl fit``: train a batch multiple-kernel classifier on a random split and report test accuracy.

The split and scaling are the MKBoost paper's protocol (:mod:`omkl_dist.reproduction.mkboost`):
``--seed S`` uses run 0's split of seed S, the scaler is fitted on the training rows only. The MKL
estimators and ``svc`` (one gaussian SVM, C and width tuned) choose C by cross-validation on the
training rows and scale each kernel to unit diagonal (the MKL estimators also drop the kernels under
which the rows have too few effective neighbours, the floor chosen with C: ``min_neighbors``);
``--paper-settings`` gives the paper's C = 50,
unit trace and every kernel instead (MKBoost: C = 50 either way).
MKBoost's per-kernel fits run serially, on ``--threads`` local threads, or on a Dask cluster
(``--scheduler ADDR``); SimpleMKL and Lp-MKL always run in this process.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .executors import connect_scheduler, default_threads, executor_for

if TYPE_CHECKING:
    from omkl_dist.preprocessing import ColumnEncoder

ALGOS = ("mkboost", "simplemkl", "silp", "level", "lpmkl", "svc", "oks-svm", "som-svm", "musvm", "alsvm")
SELECTORS = {"oks-svm": "OKSSVM", "som-svm": "SOMSVM", "musvm": "MuSVM", "alsvm": "AlSVM"}
_MKL_KEYS = {"simplemkl": "mkl-sd", "silp": "mkl-silp", "level": "mkl-level", "lpmkl": "lp-mkl"}


def run_fit(
    algo: str,
    data: str,
    *,
    variant: str = "D1",
    test_size: float = 0.5,
    seed: int = 0,
    scaling: str = "standard",
    n_trials: int = 100,
    ratio: float = 0.2,
    beta: float = 2**-5,
    C: float | str | None = None,
    kernels: str | None = None,
    kernel_normalization: str | None = None,
    paper_settings: bool = False,
    scheduler: str | None = None,
    threads: int | None = None,
    timeout: float = 10.0,
    data_dir=None,
    label_column=None,
    positive_class=None,
    verbose: int = 0,
    model_out=None,
    overwrite: bool = False,
    **reading,
) -> dict:
    """Load ``data`` (registry name, file or ingested dataset), split, scale, fit ``algo``, score; return a JSON-able
    report. ``verbose``: progress lines on standard error (MKBoost: a line per boosting trial; the MKL
    methods and svc: per cross-validation fold and pair). ``reading``:
    more of :func:`~omkl_dist.storage.read_dataset`'s options for a file (``features``,
    ``categorical``, ``impute``, ``zero_based``; an encoder is fitted on every row of the file).
    ``C``, ``kernels``, ``kernel_normalization``: None is the default (:func:`batch_settings`).
    ``model_out``: save the model fitted on the training rows there, with its scaling, column
    encoder, label map and feature names (what ``omkl predict --model-dir`` and ``load_model`` read;
    an existing saved model is replaced only with ``overwrite``): checked before the data is read."""
    from omkl_dist.algorithms.mkl import MIN_NEIGHBORS, TunedSVC
    from omkl_dist.reproduction.mkboost import make_model, prepare_split, run_seed, split_indices, split_scaler
    from omkl_dist.reproduction.tables import mkboost as paper_table

    if algo not in ALGOS:
        raise ValueError(f"--algo must be one of {', '.join(ALGOS)}, got {algo!r}")
    if model_out is not None:
        _check_model_out(algo, data, model_out, overwrite)
    C, kernels, kernel_normalization = batch_settings(algo, C, kernels, kernel_normalization, paper_settings)
    min_neighbors = paper_table.MIN_NEIGHBORS if paper_settings else MIN_NEIGHBORS
    reading = {"label_column": label_column, "positive_class": positive_class, **reading}
    rows = _fit_rows(data, data_dir, {k: v for k, v in reading.items() if v is not None})
    X, y, label_map, path, groups = rows.X, rows.y, rows.label_map, rows.path, rows.groups
    train, test = split_indices(len(y), test_size, seed, 0)
    scaler = split_scaler(X, train, scaling)
    X_train, y_train, X_test, y_test = prepare_split(X, y, train, test, scaler)
    clipped = _clip_for_chi2(X_test, kernels, scaling)
    if algo in SELECTORS:
        report = _fit_selector(
            algo,
            data,
            path,
            label_map,
            X_train,
            y_train,
            X_test,
            y_test,
            groups,
            seed=seed,
            scaling=scaling,
            test_size=test_size,
            kernels=kernels,
            scheduler=scheduler,
            timeout=timeout,
            verbose=verbose,
        )
        return {**report, **({"clipped": clipped} if clipped else {})}
    key = f"mkboost-{variant.lower()}" if algo == "mkboost" else _MKL_KEYS.get(algo, algo)
    if threads is None:  # (MKBoost's SVMs on the cores present, as the memory allows)
        threads = default_threads(len(train), ratio) if algo == "mkboost" else 1
    labels = dict((internal, original) for original, internal in label_map)
    with executor_for(scheduler if algo == "mkboost" else None, threads, timeout) as executor:
        if algo == "svc":
            model = TunedSVC(
                C=C,
                kernels=kernels,
                kernel_normalization=kernel_normalization,
                random_state=run_seed(seed, 0),
                verbose=verbose,
            )
        else:
            model = make_model(
                key,
                run_seed(seed, 0),
                n_trials=n_trials,
                ratio=ratio,
                beta=beta,
                C=C,
                kernels=kernels,
                kernel_normalization=kernel_normalization,
                min_neighbors=min_neighbors,
                executor=executor,
                verbose=verbose,
            )
        t0 = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - t0
    executor_name = (
        ("dask " + scheduler)
        if (scheduler and algo == "mkboost")
        else (f"threads x{threads}" if algo == "mkboost" and threads > 1 else "serial")
    )
    report = _test_report(
        model,
        X_test,
        y_test,
        labels,
        algo=algo,
        variant=variant if algo == "mkboost" else None,
        data=data,
        path=path,
        n_train=len(train),
        test_size=test_size,
        seed=seed,
        scaling=scaling,
        settings={"C": C, "kernels": kernels}
        if algo == "mkboost"
        else {
            "C": C,
            "kernels": kernels,
            "kernel_normalization": kernel_normalization,
            **(
                {}
                if algo == "svc"
                else {"min_neighbors": min_neighbors, "floor_chosen": model.neighbor_floor_.tolist()}
            ),
            "C_chosen": model.C_.tolist(),
        },
        executor=executor_name,
        seconds=seconds,
    )
    report["kernel_counts"] = {n: int(c) for n, c in zip(model.kernel_names_, model.kernel_counts_, strict=True)}
    if scheduler and algo != "mkboost":
        report["note"] = f"--scheduler ignored: {algo} runs in this process"
    if model_out is not None:
        _save(model, scaler, rows, model_out, overwrite, path)
        report["model_path"] = str(model_out)
    if clipped:
        report["clipped"] = clipped
    if algo == "mkboost":
        names = model.kernel_names_
        report.update(
            n_trials=n_trials,
            ratio=ratio,
            beta=beta,
            trials_run=model.n_trials_.tolist(),
            stop_reasons=model.stop_reasons_,
            pairs=[[report["classes"][i], report["classes"][j]] for i, j in model.pairs_],
            trial_kernels=[[[names[k] for k in ks] for ks in pair] for pair in model.trial_kernels_],
            alphas=[a.tolist() for a in model.alphas_],
            task_seconds=model.task_seconds_,
        )
    else:
        report.update(
            weights=dict(zip(model.kernel_names_, model.weights_.tolist(), strict=True)),
            n_iter=model.n_iter_.tolist(),
            duality_gap=model.duality_gap_.tolist(),
            stop_reasons=model.stop_reasons_,
        )
        if algo == "svc":
            report["selected_kernels"] = model.selected_kernels_
    return report


class FitRows(NamedTuple):
    """A dataset read whole for ``omkl fit``: features (dense float64), internal labels, the label
    map, the file read, feature groups (multi-view data) and, for a saved model, the feature names
    and the column encoder that made ``X`` from a table's raw columns."""

    X: np.ndarray
    y: np.ndarray
    label_map: list
    path: Path
    groups: dict | None = None
    feature_names: list | None = None
    columns: ColumnEncoder | None = None
    label_name: str | None = None


def _fit_rows(data, data_dir, reading: dict) -> FitRows:
    """``data`` read whole: an ingested dataset (its columns chosen at ingest: reading options
    refused), a multi-view registry dataset (e.g. mfeat: the views side by side, each a feature
    group), or a file or registry name read with ``reading``
    (:func:`~omkl_dist.storage.read_dataset`'s options)."""
    from omkl_dist.preprocessing import ColumnEncoder
    from omkl_dist.storage import load_arrays, read_dataset, resolve_dataset
    from omkl_dist.storage.job_data import is_ingested, refuse_label_options
    from omkl_dist.storage.location import is_url, location
    from omkl_dist.storage.views import feature_groups, is_multiview, read_views

    path = location(data)
    if is_ingested(path):
        refuse_label_options(data, reading)
        X, y, meta = load_arrays(path)
        columns = ColumnEncoder.from_dict(meta["columns"]) if "columns" in meta else None
        names, label_name = meta.get("feature_names"), meta.get("label_column")
        return FitRows(_dense(X), y, meta["label_map"], path, feature_groups(meta), names, columns, label_name)
    if is_multiview(data, data_dir=data_dir):
        ds, groups = read_views(data, data_dir=data_dir, label_column=reading.get("label_column"))
        return FitRows(_dense(ds.X), np.asarray(ds.y), ds.label_map, ds.path, groups, ds.feature_names)
    ds = read_dataset(data if is_url(data) else resolve_dataset(data, data_dir=data_dir), **reading)
    return FitRows(
        _dense(ds.X), np.asarray(ds.y), ds.label_map, ds.path, None, ds.feature_names, ds.columns, ds.label_name
    )


def _check_model_out(algo: str, data, model_out, overwrite: bool) -> None:
    """Before any work: a kernel selector's model is not saved, and ``model_out`` may receive a model."""
    from omkl_dist.storage.outputs import MODEL, check_output

    from .datasource import data_path

    if algo in SELECTORS:
        batch = ", ".join(a for a in ALGOS if a not in SELECTORS)
        raise ValueError(
            f"--model-out: {algo} is one of the OKS paper's kernel selectors, compared here by their test "
            f"accuracy; its model is not saved. Save a batch model instead ({batch})"
        )
    check_output(model_out, MODEL, overwrite=overwrite, inputs=[("data", data_path(data))], option="--model-out")


def _save(estimator, scaler, rows: FitRows, model_out, overwrite: bool, path) -> None:
    """The model fitted on the training rows, as ``omkl run --model-out`` saves one: with its scaling,
    column encoder, label map and feature names (no job: a batch fit has no stream to resume)."""
    from omkl_dist.model import Model
    from omkl_dist.persistence import save_model

    if "verbose" in estimator.get_params():  # (the command's progress lines: a retrain's refit is quiet)
        estimator.set_params(verbose=0)
    model = Model(
        estimator,
        scaler=scaler,
        columns=rows.columns,
        label_map=rows.label_map,
        feature_names=rows.feature_names,
        label_name=rows.label_name,
    )
    save_model(model, model_out, overwrite=overwrite, inputs=[("data", path)])


def _dense(X) -> np.ndarray:
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)


def batch_settings(
    algo: str, C: float | str | None, kernels: str | None, kernel_normalization: str | None, paper: bool
) -> tuple[float | str, str, str]:
    """``(C, kernels, kernel_normalization)`` of ``omkl fit``: what was given, else the defaults --
    C by cross-validation ("auto") and unit-diagonal kernels, or with ``paper`` (``--paper-settings``)
    the MKBoost paper's C = 50 and unit trace; MKBoost's SVMs take C = 50 either way (measured in
    BENCHMARKS.md, "Batch MKL accuracy": choosing it does not pay) and its own default pool, the
    paper's with its polynomial kernels normalised (it has no normalisation option; BENCHMARKS.md,
    "MKBoost's polynomial kernels": as accurate, 1.5x faster), or the paper's raw one with ``paper``;
    ``svc``'s kernels are gaussian widths."""
    from omkl_dist.algorithms.mkboost import MKBoost
    from omkl_dist.algorithms.mkl.svc import SVC_KERNELS
    from omkl_dist.reproduction.tables import mkboost as paper_table

    if C is None:
        C = paper_table.C if paper or algo == "mkboost" else "auto"
    if kernel_normalization is None:
        kernel_normalization = paper_table.KERNEL_NORMALIZATION if paper else "diagonal"
    if kernels is None:
        own = MKBoost().get_params()["kernels"] if algo == "mkboost" and not paper else paper_table.KERNELS
        kernels = SVC_KERNELS if algo == "svc" else own
    return C, kernels, kernel_normalization


def _clip_for_chi2(X_test, kernels, scaling) -> str | None:
    """Min-max scaling is fitted on the training rows, so test rows can fall below 0, where the
    chi-square kernels are undefined: those are clipped to 0 (in place), and the report says so."""
    from omkl_dist.kernels import make_pool

    if scaling != "minmax" or not any(s.family in ("chi2", "achi2") for s in make_pool(kernels)):
        return None
    below = int((X_test < 0.0).sum())
    np.maximum(X_test, 0.0, out=X_test)
    return f"{below} test feature value(s) below the training minimum clipped to 0 for the chi-square kernels"


def _fit_selector(
    algo,
    data,
    path,
    label_map,
    X_train,
    y_train,
    X_test,
    y_test,
    groups,
    *,
    seed,
    scaling,
    test_size,
    kernels,
    scheduler,
    timeout,
    verbose,
) -> dict:
    """A kernel selector of the OKS paper's comparison: which kernel, its C, the test accuracy."""
    from omkl_dist.algorithms import selectors

    params = {"kernels": kernels, "feature_groups": groups, "random_state": seed, "verbose": verbose}
    with contextlib.ExitStack() as stack:
        if scheduler and algo == "musvm":
            client = connect_scheduler(scheduler, timeout)
            stack.callback(client.close)
            params["client"] = client
        model = getattr(selectors, SELECTORS[algo])(**params)
        t0 = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - t0
    labels = dict((internal, original) for original, internal in label_map)
    report = _test_report(
        model,
        X_test,
        y_test,
        labels,
        algo=algo,
        variant=None,
        data=data,
        path=path,
        n_train=len(y_train),
        test_size=test_size,
        seed=seed,
        scaling=scaling,
        settings={"kernels": kernels},
        executor=("dask " + scheduler) if (scheduler and algo == "musvm") else "serial",
        seconds=seconds,
    )
    report.update(
        {
            "selected_kernel": model.selected_kernel_name_,
            "C": model.C_,
            "validation_accuracy": model.validation_accuracy_,
            "selection_seconds": model.selection_seconds_,
            "svm_seconds": model.svm_seconds_,
        }
    )
    if scheduler and algo != "musvm":
        report["note"] = f"--scheduler ignored: {algo} runs in this process"
    names = list(model.kernel_pool_.names)
    scores = {"musvm": "validation_scores_", "alsvm": "alignments_"}.get(algo)
    if scores is not None:
        report["per_kernel"] = dict(zip(names, map(float, getattr(model, scores)), strict=True))
    else:
        report["per_kernel"] = dict(zip(names, map(float, model.selector_.kernel_weights_), strict=True))
    return report


def format_fit_report(report: dict) -> str:
    """Human-readable summary of :func:`run_fit`'s report."""
    algo = report["algo"] + (f"-{report['variant']}" if report.get("variant") else "")
    lines = [
        f"{algo} on {report['data']} ({report['n_train']} train / {report['n_test']} test rows, "
        f"{report['n_features']} features, {len(report['classes'])} classes, scaling {report['scaling']}, "
        f"seed {report['seed']}, {report['executor']})",
        f"test accuracy {report['accuracy']:.4f}   fit {report['seconds']:.2f} s   predict "
        f"{report['predict_seconds']:.2f} s",
    ]
    if "note" in report:
        lines.append(report["note"])
    if "clipped" in report:
        lines.append(report["clipped"])
    if "selected_kernel" in report:
        what = {"musvm": "validation accuracy", "alsvm": "centred alignment"}.get(report["algo"], "kernel weight")
        lines.append(
            f"selected kernel {report['selected_kernel']}  C {report['C']:g}  (validation accuracy "
            f"{report['validation_accuracy']:.4f}; selection {report['selection_seconds']:.2f} s, SVM "
            f"{report['svm_seconds']:.2f} s)"
        )
        lines.append(f"per kernel ({what}, best 5):")
        for name, v in sorted(report["per_kernel"].items(), key=lambda kv: -kv[1])[:5]:
            lines.append(f"  {name:<40} {v:.4f}")
        return _with_outputs(report, lines)
    if report["algo"] == "mkboost":
        lines.append(
            f"trials run per pair: {report['trials_run']}"
            + "".join(f"; stopped: {r}" for r in report["stop_reasons"] if r)
        )
        lines.append("kernel used in h_t (trials, all pairs):")
        counts = sorted(report["kernel_counts"].items(), key=lambda kv: -kv[1])
        used = [(name, count) for name, count in counts if count]
        width = max((len(name) for name, _ in used), default=0)  # (gaussian(sigma=0.015625)+norm: 29)
        lines.extend(f"  {name:<{width}} {count}" for name, count in used)
        if len(report["pairs"]) == 1:
            chosen = [" + ".join(ks) if len(ks) == 1 else f"{len(ks)} kernels" for ks in report["trial_kernels"][0]]
            lines.append(
                "per trial: "
                + ", ".join(f"{t + 1}:{c}" for t, c in enumerate(chosen[:20]))
                + (" ..." if len(chosen) > 20 else "")
            )
    else:
        lines.append(
            f"C {report['C']}"
            + (f" (chosen: {report['C_chosen']})" if report["C"] == "auto" else "")
            + f", kernels normalised: {report['kernel_normalization']}"
            + (
                f", kernels kept at >= {report['floor_chosen']} effective neighbours per row"
                + (" (min_neighbors auto)" if report["min_neighbors"] == "auto" else "")
                if "floor_chosen" in report
                else ""
            )
        )
        if "selected_kernels" in report:
            lines.append(f"selected kernel: {report['selected_kernels']}")
        lines.append(f"iterations {report['n_iter']}, stopped on {report['stop_reasons']}")
        lines.append("kernel weights (mean over pairs):")
        for name, w in sorted(report["weights"].items(), key=lambda kv: -kv[1]):
            if w > 0:
                lines.append(f"  {name:<26} {w:.4f}")
    return _with_outputs(report, lines)


def _with_outputs(report: dict, lines: list[str]) -> str:
    """The report's lines, then where its model went and what ``--mlflow`` did."""
    from .run_report import mlflow_outcome

    if "model_path" in report:
        lines.append(f"model            {report['model_path']} (fitted on the training rows)")
    if "mlflow" in report:
        lines.append(f"mlflow           {mlflow_outcome(report['mlflow'])}")
    return "\n".join(lines)


def _test_report(
    model,
    X_test,
    y_test,
    labels,
    *,
    algo,
    variant,
    data,
    path,
    n_train,
    test_size,
    seed,
    scaling,
    settings: dict,
    executor: str,
    seconds: float,
) -> dict:
    """The part of ``omkl fit``'s report every algorithm shares: the data, the split, the settings
    (``settings``, in the report's order), the test accuracy and the times."""
    t1 = time.perf_counter()
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    return {
        "algo": algo,
        "variant": variant,
        "data": str(data),
        "file": str(path),
        "n_train": int(n_train),
        "n_test": int(len(y_test)),
        "n_features": int(X_test.shape[1]),
        "classes": [labels.get(c, str(c)) for c in model.classes_.tolist()],
        "test_size": test_size,
        "seed": seed,
        "scaling": scaling,
        **settings,
        "executor": executor,
        "accuracy": accuracy,
        "seconds": seconds,
        "predict_seconds": time.perf_counter() - t1,
    }
