"""``omkl run``: one online job over one stream in this process, with a progress bar and a trace."""

from __future__ import annotations

from pathlib import Path

from omkl_dist.job import Job
from omkl_dist.runner import LocalRunner
from omkl_dist.storage.outputs import JSON_REPORT, MODEL, check_output, first_free, write_json_report

from .compile_ahead import compile_first_use
from .data_source import origin
from .datasource import data_path
from .progress import CountProgress, ProgressBar, advising
from .run_report import build_report


def run_job(
    job: Job,
    data: str,
    *,
    trace_out=None,
    model_out=None,
    overwrite=False,
    show_progress=True,
    labels=None,
    mlflow=None,
    compile_ahead=False,
) -> dict:
    """Run ``job`` test-then-train over ``data`` (:class:`~omkl_dist.runner.LocalRunner`) and
    return the JSON-able report (:func:`~.run_report.build_report`).

    The outputs (``model_out``, ``trace_out``) are checked before the data is read: a long run
    never ends in a result that cannot be written, and neither may replace the data or each other
    (either replaces an earlier one only with ``overwrite``; the command's default trace is a new
    name every time, :func:`default_trace_path`).
    ``labels``: how a file's columns are read (``label_column``, ``positive_class``, ``features``;
    see :func:`omkl_dist.storage.read_dataset`). ``mlflow``: an
    :class:`omkl_dist.mlflow.connection.Target` to log the job's run to (the report's ``mlflow`` says how it went).
    ``compile_ahead``: a first run (``omkl run`` from the console script) compiles on two cores,
    :func:`.compile_ahead.compile_first_use`.
    """
    source = data_path(data)
    if model_out is not None:
        check_output(
            model_out,
            MODEL,
            overwrite=overwrite,
            inputs=[("data", source), ("trace file", trace_out)],
            option="--model-out",
        )
    if trace_out is not None:
        check_output(trace_out, JSON_REPORT, overwrite=overwrite, inputs=[("data", source)], option="--trace-out")
    reading = CountProgress(f"reading {origin(data) or Path(str(data)).name}", show=show_progress)
    with reading, ProgressBar(f"{job.algorithm} on {Path(str(data)).name}", show=show_progress) as bar:
        if compile_ahead:
            bar.compiled_ahead(compile_first_use(job, data, labels))
        learning = advising(job.algorithm, bar)

        def on_progress(progress: dict) -> None:
            reading.close()  # (read: its time stops)
            learning(progress)

        result = LocalRunner(labels=labels, on_progress=on_progress, reading=reading).fit(job, data)
    report = build_report(result, data)
    if model_out is not None:
        from omkl_dist.persistence import save_model

        save_model(
            result.as_model(),
            model_out,
            overwrite=overwrite,
            inputs=[("data", source)],
        )
        report["model_path"] = str(model_out)
    if trace_out is not None:
        write_json_report(
            trace_out,
            {"report": report, "trace": result.trace},
            inputs=[("data", source)],
            option="--trace-out",
        )
        report["trace_path"] = str(trace_out)
    if mlflow is not None:
        from omkl_dist.mlflow.commands import after_job

        report["mlflow"] = after_job(mlflow, "run", report, result.job.to_dict(), result.trace)
    return report


def default_trace_path(algo: str, data: str, seed: int) -> Path:
    """``runs/trace-ALGO-DATA-seedS.json``, or the first of ``...-2.json``, ``-3``, ... that does not
    exist: a run never replaces an earlier run's trace unless told to (``--trace-out``, ``--overwrite``)."""
    return first_free(Path("runs") / f"trace-{algo}-{Path(data).name.split('.')[0]}-seed{seed}.json")
