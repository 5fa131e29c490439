"""``omkl submit``: run an online job on a Dask cluster, with checkpoints and exact resume.

The job reads an ingested dataset directory (zarr + parquet) that the workers can read too. Every
``checkpoint_every`` rounds the full model (support vectors, coefficients, weights, counters,
the stream position — ``n_seen`` — and the metrics so far) is written atomically as a saved model
into ``CHECKPOINT_DIR/ckpt-<rows seen>``, beside ``job.json`` (the job, :meth:`Job.to_dict`).
``--resume`` continues from the newest checkpoint after checking that ``job.json`` describes the
same job. A worker that dies mid-job is recovered from automatically (see :mod:`omkl_dist.distributed.sharded_rounds`).
The final model is bit-identical to an uninterrupted run's, and to the in-process runner's
(``omkl run`` of the same job); it loads with ``omkl_dist.persistence.load_model`` like any
other. The command is a thin caller of :class:`~omkl_dist.distributed.runner.DaskRunner`.
"""

from __future__ import annotations

from omkl_dist.distributed.checkpoints import CheckpointStore
from omkl_dist.distributed.runner import DaskRunner
from omkl_dist.job import Job
from omkl_dist.persistence import save_model
from omkl_dist.storage.location import location, text
from omkl_dist.storage.outputs import CHECKPOINTS, JSON_REPORT, MODEL, check_output, write_json_report

from .progress import ProgressBar, advising
from .run_report import build_report


def check_submit_outputs(data, out, checkpoint_dir=None, trace_out=None, *, overwrite: bool, resume: bool):
    """Check a job's outputs before it starts (nothing is deleted unless it is ours to replace);
    return its checkpoint folder (default ``OUT.checkpoints``; paths or URLs). ``trace_out``: the
    trace file to write too (None: none), replaced only with ``overwrite`` (a resume writes it anew)."""
    checkpoint_dir = location(checkpoint_dir or text(out) + ".checkpoints")
    check_output(
        out,
        MODEL,
        overwrite=overwrite or resume,
        inputs=[("dataset", data), ("checkpoint folder", checkpoint_dir), ("trace file", trace_out)],
    )
    if trace_out is not None:
        check_output(
            trace_out,
            JSON_REPORT,
            overwrite=overwrite,
            inputs=[("dataset", data), ("checkpoint folder", checkpoint_dir)],
            option="--trace-out",
        )
    check_output(
        checkpoint_dir,
        CHECKPOINTS,
        overwrite=overwrite or resume,
        inputs=[("dataset", data)],
        option="--checkpoint-dir",
    )
    return checkpoint_dir


def submit_job(
    client,
    job: Job,
    out,
    *,
    checkpoint_dir=None,
    trace_out=None,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    keep_checkpoints: bool = False,
    mlflow=None,
    named=None,
) -> dict:
    """Run ``job`` over its ingested dataset (``job.data.location``) on the cluster behind
    ``client`` (:class:`DaskRunner`); write the model to ``out``, the trace to ``trace_out`` (as
    ``omkl run`` does: ``omkl report`` draws it) and return the report (``mlflow``: an
    :class:`omkl_dist.mlflow.connection.Target` to log the job's run to; ``named``: the data as the
    user named it -- a file ingested for the job -- which the report's ``data`` and the plots' titles
    say, as ``omkl run``'s do; default the dataset)."""
    data, out = location(job.data.location), location(out)
    checkpoint_dir = check_submit_outputs(data, out, checkpoint_dir, trace_out, overwrite=overwrite, resume=resume)
    with ProgressBar(f"{job.algorithm} on {data.name} (cluster)", show=show_progress) as bar:
        runner = DaskRunner(
            client,
            checkpoint_dir=checkpoint_dir,
            resume=resume,
            overwrite=overwrite,
            on_progress=advising(job.algorithm, bar),
        )
        result = runner.fit(job, data)
    report = build_report(result, data if named is None else named)
    save_model(
        result.as_model(),
        out,
        overwrite=True,
        inputs=[("dataset", data), ("checkpoint folder", checkpoint_dir)],
        option="--out",
    )
    report["model_path"] = str(out)
    if trace_out is not None:
        write_json_report(
            trace_out, {"report": report, "trace": result.trace}, inputs=[("dataset", data)], option="--trace-out"
        )
        report["trace_path"] = str(trace_out)
    if not keep_checkpoints:
        CheckpointStore(checkpoint_dir).clear()
    if mlflow is not None:
        from omkl_dist.mlflow.commands import after_job

        report["mlflow"] = after_job(mlflow, "submit", report, result.job.to_dict(), result.trace)
    return report
