"""``omkl submit``: run an online job on a Dask cluster, with checkpoints and exact resume.

The job reads an ingested dataset directory (zarr + parquet) that the workers can read too. Every
``--checkpoint-every`` rounds the full model (support vectors, coefficients, weights, counters,
the stream position — ``n_seen`` — and the metrics so far) is written atomically as a saved model
into ``CHECKPOINT_DIR/ckpt-<rows seen>``, beside ``job.json`` (what the job is). ``--resume``
continues from the newest checkpoint after checking that ``job.json`` describes the same job.
A worker that dies mid-job is recovered from automatically (see :class:`DaskEngine`). The final
model is bit-identical to an uninterrupted run's, and to the in-process engine's (``omkl run``
with the same seed and block size); it loads with ``omkl_dist.persistence.load_model`` like
any other. The command is a thin caller of the library's :meth:`DaskEngine.fit`.
"""

from __future__ import annotations

import json
import sys

from tqdm import tqdm

from omkl_dist.distributed.checkpoints import JOB, CheckpointStore
from omkl_dist.distributed.engine import DaskEngine
from omkl_dist.model import Model
from omkl_dist.persistence import save_model
from omkl_dist.storage.ingest import dataset_info
from omkl_dist.storage.location import location, text
from omkl_dist.storage.outputs import CHECKPOINTS, MODEL, check_output
from omkl_dist.storage.views import feature_groups

from .run import kernel_settings, make_stream_estimator


def check_submit_outputs(data, out, checkpoint_dir=None, *, overwrite: bool, resume: bool):
    """Check a job's outputs before it starts (nothing is deleted unless it is ours to replace);
    return its checkpoint folder (default ``OUT.checkpoints``; paths or URLs)."""
    checkpoint_dir = location(checkpoint_dir or text(out) + ".checkpoints")
    check_output(
        out, MODEL, overwrite=overwrite or resume, inputs=[("dataset", data), ("checkpoint folder", checkpoint_dir)]
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
    algo: str,
    data,
    out,
    *,
    params: dict,
    block_size: int = 1024,
    seed: int = 0,
    scaling: str = "none",
    permute: bool = True,
    limit=None,
    checkpoint_every: int = 50,
    checkpoint_dir=None,
    resume: bool = False,
    overwrite: bool = False,
    max_retries: int = 3,
    n_shards=None,
    show_progress: bool = True,
    keep_checkpoints: bool = False,
    settings=None,
) -> dict:
    """Run ``algo`` over the dataset directory ``data`` on the cluster behind ``client``
    (:meth:`DaskEngine.fit`); write the model to ``out`` and return the report. ``settings``
    (:func:`omkl_dist.defaults.resolve_settings`) override ``scaling`` and the kernels' normalisation
    (the scaler is fitted on the stream's first ``SCALE_ROWS`` rows either way)."""
    data, out = location(data), location(out)
    checkpoint_dir = check_submit_outputs(data, out, checkpoint_dir, overwrite=overwrite, resume=resume)
    meta = dataset_info(data)  # a clear DataError if it is not a dataset directory
    if settings is not None:
        settings = settings.for_sparse_rows() if meta.get("layout") == "csr" else settings
        params, scaling = kernel_settings(algo, params, settings), settings.scaling
    n_rows = int(meta["n_rows"])
    model = make_stream_estimator(
        algo,
        params,
        n_rows=n_rows if limit is None else min(limit, n_rows),
        block_size=block_size,
        seed=seed,
        feature_groups=feature_groups(meta),
    )
    bar = None

    def on_progress(p):
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=p["n_rows"],
                initial=p["n_seen"],
                unit="inst",
                desc=f"{algo} on {data.name} (cluster)",
                disable=not show_progress,
                file=sys.stderr,
                dynamic_ncols=True,
            )
        bar.update(p["n_seen"] - bar.n)
        bar.set_postfix(mistakes=f"{100.0 * p['n_mistakes'] / max(p['n_seen'], 1):.2f}%", refresh=False)

    engine = DaskEngine(client, n_shards=n_shards, checkpoint_every=checkpoint_every, max_retries=max_retries)
    try:
        fit = engine.fit(
            model,
            data,
            scaling=scaling,
            permute=permute,
            seed=seed,
            limit=limit,
            checkpoint_dir=checkpoint_dir,
            resume=resume,
            overwrite=overwrite,
            on_progress=on_progress,
        )
    finally:
        if bar is not None:
            bar.close()
    report = _report(algo, data, fit, block_size, seed, scaling)
    report["settings"] = settings.as_dict() if settings is not None else {"scaling": scaling, "origin": "given"}
    job = json.loads((fit.checkpoint_dir / JOB).read_text())
    save_model(
        Model(
            fit.model,
            scaler=fit.scaler,
            label_map=meta["label_map"],
            feature_names=meta.get("feature_names"),
            job={**job, "settings": report["settings"]},
        ),
        out,
        overwrite=True,
        inputs=[("dataset", data), ("checkpoint folder", fit.checkpoint_dir)],
        option="--out",
    )
    report["model_path"] = str(out)
    if not keep_checkpoints:
        CheckpointStore(fit.checkpoint_dir).clear()
    return report


def _report(algo, data, fit, block_size, seed, scaling) -> dict:
    model, seconds, n_start = fit.model, fit.seconds, fit.resumed_from
    n = int(model.n_samples_seen_)
    timing = fit.timing
    rounds = max(timing["rounds"], 1)
    per_shard = timing["shard_s"]
    return {
        "algo": algo,
        "data": str(data),
        "n": n,
        "mistakes": int(model.mistakes_),
        "mistake_rate": model.mistakes_ / max(n, 1),
        "n_support": {
            "total": int(model.n_support_.sum()),
            "per_kernel": dict(zip(model.active_kernel_names_, model.n_support_.tolist())),
        },
        "seconds": seconds,
        "instances_per_second": (n - n_start) / seconds if seconds > 0 else None,
        "resumed_from": n_start,
        "block_size": block_size,
        "seed": seed,
        "scaling": scaling,
        "workers": fit.n_workers,
        "shards": fit.n_shards,
        "rounds": timing["rounds"],
        "shard_compute_seconds": per_shard,
        "shard_io_seconds": timing["shard_io_s"],
        "coordinator_ms_per_round": 1000.0 * timing["combine_s"] / rounds,
        # per round: the round's wall time minus the slowest shard's work (reading, appending, computing)
        "overhead_ms_per_round": 1000.0 * (timing["round_s"] - timing["slowest_shard_s"]) / rounds,
        # row-split rounds (stochastic updates): the first shard's time waiting for the others' scores
        "lead_wait_seconds": timing["lead_wait_s"],
        "worker_failures": fit.failures,
    }


def format_report(report: dict) -> str:
    per = report["n_support"]["per_kernel"]
    resumed = f", resumed at row {report['resumed_from']}" if report["resumed_from"] else ""
    failures = (
        f"; recovered from {len(report['worker_failures'])} worker failure(s)" if report["worker_failures"] else ""
    )
    return "\n".join(
        [
            f"{report['algo']} on {report['data']} ({report['n']} instances, block {report['block_size']}, "
            f"seed {report['seed']}, scaling {report['scaling']}{resumed})",
            f"  mistake rate     {100 * report['mistake_rate']:.2f} %  ({report['mistakes']} mistakes)",
            f"  support vectors  {report['n_support']['total']} total over {len(per)} kernel(s)",
            f"  learning time    {report['seconds']:.2f} s  ({report['instances_per_second']:.0f} instances/s) on "
            f"{report['workers']} worker(s), {report['shards']} kernel shard(s){failures}",
            f"  per round        coordinator {report['coordinator_ms_per_round']:.2f} ms, overhead "
            f"{report['overhead_ms_per_round']:.2f} ms ({report['rounds']} rounds)",
            *([f"  settings         {report['settings']['describe']}"] if "describe" in report["settings"] else []),
            f"  model            {report['model_path']}",
        ]
    )
