"""Running the defaults study: one run test-then-train, the grid's missing runs in single-threaded
worker processes (or in this process), progress lines, and ``omkl study defaults`` itself (run what is
missing, then write the report)."""

from __future__ import annotations

import math
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from functools import lru_cache
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from omkl_dist.defaults import SCALE_ROWS

from .defaults_data import StudyData, load_data, permuted_stream, plan_datasets
from .defaults_plan import (
    AXES,
    BLOCK_SIZE,
    FORMS,
    MAX_ROWS,
    NEAR,
    PERMUTATIONS,
    PREFIXES,
    SCALINGS,
    SEED,
    STUDY_ALGORITHMS,
    WORKERS,
    cap_text,
    kernel_param,
    plan_runs,
    resolve_names,
    study_spec,
    variant_label,
    variants,
)
from .defaults_records import default_results, doc_path, read_records, record_writer, run_key
from .defaults_report import check_report_outputs, write_report

PROGRESS_EVERY = 5.0  # seconds between progress lines


@lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the package sources a run used: the code may change while a study resumes over
    days, and a record says which code measured it (the report counts the versions)."""
    from omkl_dist._numba_cache import sources_digest

    return sources_digest()


def run_task(task: dict) -> dict:
    """Learn one run test-then-train and return its JSONL record (an ``error`` record if it fails,
    so that one broken combination does not stop a study of hours)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    base = {**task, "seed": SEED, "scale_rows": SCALE_ROWS, "block_size": BLOCK_SIZE, "code": code_version()}
    try:
        outcome = _learn(task)
    except Exception as exc:  # noqa: BLE001 -- recorded, shown in the report, retried on resume
        outcome = {"error": f"{type(exc).__name__}: {exc}"}
    return {
        **base,
        **outcome,
        "wall_seconds": time.perf_counter() - t0,
        # the run's CPU time (its process is single-threaded): its cost on a machine shared with other work
        "cpu_seconds": time.process_time() - cpu0,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def run_params(algorithm: str, settings: dict, kernel_spec) -> tuple[str, dict, str]:
    """(omkl run --algo, its parameters, the kernels' parameter name) of a run: the study's
    parameters of ``algorithm``, its kernels, and the axes its ``settings`` move (:data:`AXES`)."""
    algo, params = STUDY_ALGORITHMS[algorithm]
    name, default = kernel_param(algorithm)
    moved = {AXES[axis].param: value for axis, value in settings.items() if AXES[axis].param is not None}
    return algo, {**params, **moved, name: kernel_spec or default}, name


def prefix_mistakes(flags: np.ndarray) -> list[list[int]]:
    """[[rows, cumulative mistakes]] after each of PREFIXES shorter than the run, then at its end."""
    total = np.cumsum(flags, dtype=np.int64)
    return [[h, int(total[h - 1])] for h in PREFIXES if h < len(flags)] + [[len(flags), int(total[-1])]]


def _learn(task: dict) -> dict:
    from omkl_dist.evaluation import feed_calls, progressive_score
    from omkl_dist.job import make_stream_estimator

    data = load_data(task["dataset"])
    X, y = permuted_stream(data, task["permutation"], task["max_rows"], task["scaling"])
    algo, params, name = run_params(task["algorithm"], task.get("settings", {}), task["kernel_spec"])
    model = make_stream_estimator(
        algo, params, n_rows=len(y), block_size=BLOCK_SIZE, seed=task["permutation"], feature_groups=data.groups
    )
    rows = model.feed_rows()
    blocks = [(X[lo : lo + rows], y[lo : lo + rows]) for lo in range(0, len(y), rows)]
    flags: list = []
    trace = progressive_score(
        model,
        feed_calls(blocks, model.feed()),  # as omkl run feeds it
        classes=data.classes,
        on_outcome=lambda outcome: flags.append(outcome["mistakes"]),
    )
    summary = trace.summary()
    return {
        "prefix_mistakes": prefix_mistakes(np.concatenate(flags)),
        "kernel_spec": params[name],
        "n": summary["n"],
        "rows_available": len(data.y),
        "n_features": int(X.shape[1]),
        "n_classes": len(data.classes),
        "mistakes": summary["mistakes"],
        "mistake_rate": summary["mistake_rate"],
        "seconds": summary["seconds"],
        "n_support": summary["n_support"]["total"],
    }


@contextmanager
def single_threaded():
    """One thread for numba and BLAS: the runs of --workers processes share the cores, and a run's
    time does not depend on how many others run beside it."""
    import numba
    from threadpoolctl import threadpool_limits

    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        numba.set_num_threads(previous)


def warm(specs: list) -> None:
    """Compile (or load from numba's cache) every code path the study times, on tiny binary and
    3-class data, so that no run's time includes compilation. ``specs``: (algorithm, settings,
    kernel spec) of each variant the study runs."""
    from omkl_dist.evaluation import progressive_score
    from omkl_dist.job import make_stream_estimator

    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 5)) * [0.1, 1, 10, 100, 1000]
    labels = (np.where(X[:, 0] > 0, 1, -1), np.argmax(X / [0.1, 1, 10, 100, 1000], axis=1))
    for algorithm, settings, spec in specs:
        algo, params, _ = run_params(algorithm, settings, spec)
        for y in labels:
            for scaling in SCALINGS:
                data = StudyData("warm-up", "generated", X, y, sorted(set(y.tolist())))
                Xs, ys = permuted_stream(data, 0, len(y), scaling)
                model = make_stream_estimator(algo, params, n_rows=len(ys), block_size=BLOCK_SIZE, seed=0)
                progressive_score(model, [(Xs[:32], ys[:32]), (Xs[32:], ys[32:])], classes=data.classes)


def _init_worker(specs: list) -> None:
    """A worker process: single-threaded for its whole life (see :func:`single_threaded`), numba
    warmed once."""
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)
    threadpool_limits(limits=1, user_api="blas")  # kept for the life of the worker process
    warm(specs)


def run_study(
    *,
    algorithms=None,
    datasets=None,
    permutations: int = PERMUTATIONS,
    max_rows: int | None = MAX_ROWS,
    axes=(),
    workers: int = WORKERS,
    results,
    log=None,
    warn=None,
) -> dict:
    """Run the grid's missing runs, appending each record to ``results`` as it finishes.

    Returns ``{"planned", "done_before", "ran", "errors", "wall_seconds"}``. ``log``
    receives progress lines, ``warn`` what the user must know (both default to nothing)."""
    log, warn = log or (lambda _msg: None), warn or (lambda _msg: None)
    algorithms = resolve_names(algorithms, list(STUDY_ALGORITHMS), "algorithm")
    plan, _ = plan_datasets()
    datasets = resolve_names(datasets, [d["name"] for d in sorted(plan, key=_cost)], "dataset")
    records, bad = read_records(results)
    if bad:
        warn(f"{bad} unreadable line(s) in {results} (a write cut short?) ignored: those runs are done again")
    done = {run_key(r) for r in records if "error" not in r}
    planned = plan_runs(algorithms, datasets, permutations, max_rows, axes)
    todo = [t for t in planned if run_key(t) not in done]
    specs = [(a, v, study_spec(a, v, form)) for a in algorithms for v in variants(a, axes) for form in FORMS]
    log(
        f"study defaults: {len(planned)} runs planned, {len(planned) - len(todo)} already in {results}, "
        f"{len(todo)} to run on {workers} worker(s)"
    )
    t0 = time.perf_counter()
    errors = _execute(todo, specs, workers, Path(results), _Progress(len(todo), log, t0))
    return {
        "planned": len(planned),
        "done_before": len(planned) - len(todo),
        "ran": len(todo),
        "errors": errors,
        "wall_seconds": time.perf_counter() - t0,
    }


def _cost(dataset: dict) -> int:
    """A dataset's cost for ordering a study, cheapest first, so that a study cut short (whole streams
    take hours) has its cheap streams complete: each row is compared with support vectors whose number
    grows with the rows (rows^2), over its features, once per one-vs-rest classifier."""
    rows, classes = dataset["rows"] or 0, dataset["classes"] or 0
    return rows * rows * (dataset["features"] or 1) * (classes if classes > 2 else 1)


class _Progress:
    """Progress lines: runs done / total, elapsed, an estimate of the rest; at most every few seconds."""

    def __init__(self, total: int, log, t0: float):
        self.total, self.log, self.t0, self.done, self.last, self.first = total, log, t0, 0, -math.inf, None

    def __call__(self, record: dict) -> None:
        self.done += 1
        now = time.perf_counter()
        self.first = now if self.first is None else self.first
        if now - self.last < PROGRESS_EVERY and self.done < self.total:
            return
        self.last = now
        elapsed = now - self.t0
        per_run = (now - self.first) / (self.done - 1) if self.done > 1 else None
        rest = "" if per_run is None else f", ~{_clock(per_run * (self.total - self.done))} left"
        what = (
            f"{record['algorithm']} {record['dataset']} {record['scaling']}"
            f"{'+norm' if record['kernels'] == 'norm' else ''} {variant_label(record.get('settings', {}))} "
            f"p{record['permutation']}: "
        )
        what += (
            f"error {record['error'][:80]}"
            if "error" in record
            else f"{100 * record['mistake_rate']:.2f} % in {record['seconds']:.2f} s"
        )
        self.log(f"[{self.done}/{self.total} runs, {_clock(elapsed)} elapsed{rest}] {what}")


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _execute(tasks: list, specs: list, workers: int, results: Path, progress) -> int:
    """Run ``tasks`` (in this process when ``workers`` is 1, else in a pool of spawned processes)
    and append each record to ``results`` as it arrives; returns how many failed."""
    if not tasks:
        return 0
    errors = 0
    with record_writer(results) as append:
        for record in _records(tasks, specs, workers):
            append(record)
            errors += "error" in record
            progress(record)
    return errors


def _records(tasks: list, specs: list, workers: int):
    """The records of ``tasks`` as they finish."""
    if workers == 1:
        with single_threaded():
            warm(specs)
            for task in tasks:
                yield run_task(task)
        return
    # spawn: a fork would copy this process's numba thread pool, which is not fork-safe
    with ProcessPoolExecutor(
        workers, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(specs,)
    ) as pool:
        pending = {pool.submit(run_task, task) for task in tasks}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield future.result()
        finally:
            for future in pending:
                future.cancel()


def study_defaults(
    *,
    algorithms=None,
    datasets=None,
    permutations=PERMUTATIONS,
    max_rows=MAX_ROWS,
    axes=(),
    workers=WORKERS,
    results=None,
    doc=None,
    compare=None,
    report_only=False,
    show_progress=True,
) -> dict:
    """``omkl study defaults``: run what is missing of the grid (unless ``report_only``), then write
    the report. Returns ``{"study": run summary or None, "report": the report}``.

    ``results`` (the JSONL; a study there is resumed) defaults to a new folder
    (:func:`~.defaults_records.default_results`), ``doc`` to the Markdown beside it; the report and
    the JSON summary replace only earlier reports of ours, which is checked before anything runs;
    ``compare``, another study's JSON summary, is reported beside this one (:mod:`.defaults_compare`)."""
    if results is None:
        if report_only:
            raise ValueError("--report-only reports on a study's runs: name them with --results FILE.jsonl")
        results = default_results()
    doc = doc_path(results) if doc is None else doc
    check_report_outputs(results, doc)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if show_progress else None
    warn = lambda msg: print(f"note: {msg}", file=sys.stderr, flush=True)  # noqa: E731
    study = None
    if not report_only:
        study = run_study(
            algorithms=algorithms,
            datasets=datasets,
            permutations=permutations,
            max_rows=max_rows,
            axes=axes,
            workers=workers,
            results=results,
            log=log,
            warn=warn,
        )
    return {"study": study, "report": write_report(results, doc, max_rows=max_rows, compare=compare, warn=warn)}


def format_outcome(outcome: dict) -> str:
    """What the command prints: what ran, where the report is, the overall winner."""
    report, study = outcome["report"], outcome["study"]
    lines = []
    if study is not None:
        lines.append(
            f"ran {study['ran']:,} of {study['planned']:,} planned runs ({study['done_before']:,} already "
            f"done) in {_clock(study['wall_seconds'])}" + (f"; {study['errors']} failed" if study["errors"] else "")
        )
    lines.append(
        f"report: {report['doc']} and {report['summary_json']} ({report['runs']:,} runs, "
        f"{len(report['algorithms'])} algorithms × {len(report['datasets'])} datasets, max-rows "
        f"{cap_text(report['max_rows'])}, scale window {report['scale_rows']:,} rows)"
    )
    overall = report["overall"]
    if overall["winner"] is not None:
        w = overall["combinations"][overall["winner"]]
        lines.append(
            f"overall: {overall['winner']} is best or within {NEAR} points on {w['near']} of "
            f"{overall['rows']} rows (mean gap {w['mean_gap']:.2f} points)"
        )
    return "\n".join(lines)
