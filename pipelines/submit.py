"""``omkl submit``: run an online job on a Dask cluster, with checkpoints and exact resume.

The job reads an ingested dataset directory (zarr + parquet) that the workers can read too. Every
``--checkpoint-every`` rounds the full model (support vectors, coefficients, weights, counters,
the stream position — ``n_seen`` — and the metrics so far) is written atomically as a saved model
into ``CHECKPOINT_DIR/ckpt-<rows seen>``, beside ``job.json`` (what the job is). ``--resume``
continues from the newest checkpoint after checking that ``job.json`` describes the same job.
A worker that dies mid-job is recovered from automatically (see :class:`DaskEngine`). The final
model is bit-identical to an uninterrupted run's, and to the in-process engine's (``omkl run``
with the same seed and block size); it loads with ``omkl_dist.pipelines.models.load_model`` like
any other.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from omkl_dist.distributed.engine import DaskEngine, engine_state_start
from omkl_dist.distributed.shard import engine_program
from omkl_dist.preprocessing import Scaler
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.ingest import dataset_info
from omkl_dist.storage.outputs import CHECKPOINTS, MODEL, check_output

from .models import load_model, save_model
from .run import make_stream_estimator

CHECKPOINT_SCHEMA = 1
JOB = "job.json"
KEEP_CHECKPOINTS = 2


def job_description(algo, data, params, *, block_size, seed, scaling, permute, limit, n_rows) -> dict:
    """What identifies a job: a resume must match it exactly."""
    return {"schema": CHECKPOINT_SCHEMA, "algo": algo, "data": str(Path(data).resolve()), "params": params,
            "block_size": block_size, "seed": seed, "scaling": scaling, "permute": permute, "limit": limit,
            "n_rows": n_rows}


class CheckpointStore:
    """``job.json`` + ``ckpt-<n_seen>`` saved models; keeps the newest few.

    It creates, replaces and deletes only its own entries, in a folder that holds nothing else
    (:data:`omkl_dist.storage.outputs.CHECKPOINTS`).
    """

    def __init__(self, directory):
        self.dir = Path(directory).absolute()

    def start(self, job: dict, *, resume: bool, overwrite: bool = False):
        """Record the job (or, for a resume, check it is the recorded one); return the newest
        checkpoint directory to resume from, or None. Without ``resume``, an existing checkpoint
        folder of an earlier job is replaced only with ``overwrite``."""
        recorded = self.dir / JOB
        if not resume:
            if self.dir.exists():  # only an earlier job's checkpoints, and only with overwrite
                check_output(self.dir, CHECKPOINTS, overwrite=overwrite, option="--checkpoint-dir")
                self.clear()
            self.dir.mkdir(parents=True, exist_ok=True)
            recorded.write_text(json.dumps(job, indent=2, sort_keys=True) + "\n")
            return None
        if not recorded.is_file():
            raise DataError("nothing to resume: no job.json", path=self.dir,
                            fix="run the job without --resume (or point --checkpoint-dir at the job's checkpoints)")
        try:
            old = json.loads(recorded.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"job.json is not valid JSON ({exc})", path=recorded,
                            fix="restore it from a copy, or start over without --resume (--overwrite)") from None
        if not isinstance(old, dict) or old.get("schema") != CHECKPOINT_SCHEMA:
            found = old.get("schema") if isinstance(old, dict) else None
            raise DataError(f"checkpoint schema {found!r}, this omkl-dist writes {CHECKPOINT_SCHEMA}",
                            path=recorded, fix="resume with the omkl-dist version that wrote it, or start over")
        diff = {k: (old.get(k), v) for k, v in job.items() if old.get(k) != v}
        if diff:
            detail = "; ".join(f"{k}: checkpoint has {a!r}, this command {b!r}" for k, (a, b) in sorted(diff.items()))
            raise DataError(f"the checkpoints belong to another job ({detail})", path=self.dir,
                            fix="repeat the original command with --resume, or start over without --resume")
        return self.latest()

    def latest(self):
        found = self._checkpoints()
        return found[-1] if found else None

    def _checkpoints(self):
        return sorted(p for p in self.dir.glob("ckpt-*") if re.fullmatch(r"ckpt-\d+", p.name))

    def write(self, model, scaler, n_seen: int, history, job: dict) -> Path:
        path = self.dir / f"ckpt-{n_seen:012d}"
        save_model(model, path, scaler=scaler, overwrite=True, option="--checkpoint-dir",
                   extra_meta={"job": job, "history": [list(h) for h in history]})
        for old in self._checkpoints()[:-KEEP_CHECKPOINTS]:
            shutil.rmtree(old, ignore_errors=True)
        return path

    def clear(self) -> None:
        """Delete the job record and the checkpoints, then the folder if nothing else is in it."""
        for ckpt in self._checkpoints():
            shutil.rmtree(ckpt, ignore_errors=True)
        (self.dir / JOB).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # not empty: something else is there, and stays
            self.dir.rmdir()


def check_submit_outputs(data, out, checkpoint_dir=None, *, overwrite: bool, resume: bool) -> Path:
    """Check a job's outputs before it starts (nothing is deleted unless it is ours to replace);
    return its checkpoint folder (default ``OUT.checkpoints``)."""
    checkpoint_dir = Path(checkpoint_dir or Path(str(out) + ".checkpoints"))
    check_output(out, MODEL, overwrite=overwrite or resume,
                 inputs=[("dataset", data), ("checkpoint folder", checkpoint_dir)])
    check_output(checkpoint_dir, CHECKPOINTS, overwrite=overwrite or resume, inputs=[("dataset", data)],
                 option="--checkpoint-dir")
    return checkpoint_dir


def _template(algo, params, *, block_size, seed, n_features, n_rows, classes):
    """An estimator started on the job's shape: its fresh engine is the job's initial state."""
    model = make_stream_estimator(algo, params, n_rows=n_rows, block_size=block_size, seed=seed)
    model._check_params()
    model.classes_ = np.array(classes)
    model.n_features_in_ = n_features
    model._start(n_features, n_rows)
    return model


def _with_state(model, arrays, scalars):
    program = engine_program(model.kernel_pool_.to_spec_string(), arrays["kernel_ids"])
    model.engine_ = type(model)._engine_class().from_state(program, arrays, scalars)
    if hasattr(model, "validation_size_") and model.engine_.n_seen >= model.validation_size_:
        model.best_kernel_ = model.kernel_pool_.names[int(arrays["kernel_ids"][0])]  # Perceptron(*) chose
    model._publish()
    return model


def submit_job(client, algo: str, data, out, *, params: dict, block_size: int = 1024, seed: int = 0,
               scaling: str = "none", permute: bool = True, limit=None, checkpoint_every: int = 50,
               checkpoint_dir=None, resume: bool = False, overwrite: bool = False, max_retries: int = 3,
               n_shards=None, show_progress: bool = True, keep_checkpoints: bool = False) -> dict:
    """Run ``algo`` over the dataset directory ``data`` on the cluster behind ``client``; write the
    model to ``out`` and return the report."""
    data, out = Path(data), Path(out)
    meta = dataset_info(data)  # a clear DataError if it is not a dataset directory
    classes = sorted(internal for _, internal in meta["label_map"])
    checkpoint_dir = check_submit_outputs(data, out, checkpoint_dir, overwrite=overwrite, resume=resume)
    n_rows = int(meta["n_rows"]) if limit is None else min(int(limit), int(meta["n_rows"]))
    n_features = int(meta["n_features"])
    job = job_description(algo, data, params, block_size=block_size, seed=seed, scaling=scaling, permute=permute,
                          limit=limit, n_rows=n_rows)
    store = CheckpointStore(checkpoint_dir)
    model = _template(algo, params, block_size=block_size, seed=seed, n_features=n_features, n_rows=n_rows,
                      classes=classes)
    resume_from = store.start(job, resume=resume, overwrite=overwrite)
    if resume_from is not None:
        _, scaler, ckpt_meta = load_model(resume_from)
        start = {"checkpoint": str(resume_from.resolve()), "history": ckpt_meta.get("history", [])}
        n_start = int(ckpt_meta["engine"]["n_seen"])
    else:
        scaler = _fit_scaler(client, data, scaling, permute, seed, limit, n_features)
        start, n_start = engine_state_start(model.engine_), 0
    shard_job = {"data": str(data.resolve()), "shuffle": permute, "seed": seed, "limit": limit,
                 "kernel_pool": model.kernel_pool_.to_spec_string(), "scaler": scaler.to_dict()}

    def on_checkpoint(arrays, scalars, history):
        return store.write(_with_state(model, arrays, scalars), scaler, int(scalars["n_seen"]), history, job)

    bar = tqdm(total=n_rows, initial=n_start, unit="inst", desc=f"{algo} on {data.name} (cluster)",
               disable=not show_progress, file=sys.stderr, dynamic_ncols=True)

    def on_progress(p):
        bar.update(p["n_seen"] - bar.n)
        bar.set_postfix(mistakes=f"{100.0 * p['n_mistakes'] / max(p['n_seen'], 1):.2f}%", refresh=False)

    engine = DaskEngine(client, shard_job, n_shards=n_shards, checkpoint_every=checkpoint_every,
                        max_retries=max_retries)
    t0 = time.perf_counter()
    try:
        result = engine.run(start, n_rows, on_progress=on_progress, on_checkpoint=on_checkpoint,
                            keep_best_at=getattr(model, "validation_size_", None))
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    model = _with_state(model, result["arrays"], result["scalars"])
    report = _report(algo, data, model, result, seconds, n_start, block_size, seed, scaling, engine)
    save_model(model, out, scaler=scaler, overwrite=True, extra_meta={"trained_on": job, "report": report},
               inputs=[("dataset", data), ("checkpoint folder", store.dir)], option="--out")
    report["model_path"] = str(out)
    if not keep_checkpoints:
        store.clear()
    return report


def _fit_scaler(client, data, scaling, permute, seed, limit, n_features) -> Scaler:
    """Fit the scaler on a prefix of the stream, on a worker (no feature data to the client)."""
    if scaling == "none":
        return Scaler("none").fit(np.zeros((1, n_features)))
    stats = client.submit(_fit_scaler_task, str(Path(data).resolve()), scaling, permute, seed, limit,
                          pure=False).result()
    return Scaler.from_dict(stats)


def _fit_scaler_task(data, scaling, permute, seed, limit):
    from omkl_dist.storage import open_stream

    stream = open_stream(data, block_size=4096, shuffle=permute, seed=seed, stop=limit)
    scaler = Scaler(scaling)
    scaler.fit_prefix(stream, min(stream.n_rows, 10_000))
    return scaler.to_dict()


def _report(algo, data, model, result, seconds, n_start, block_size, seed, scaling, engine) -> dict:
    n = int(model.engine_.n_seen)
    timing = result["timing"]
    rounds = max(timing["rounds"], 1)
    per_shard = timing["shard_s"]
    return {
        "algo": algo, "data": str(data), "n": n, "mistakes": int(model.mistakes_),
        "mistake_rate": model.mistakes_ / max(n, 1),
        "n_support": {"total": int(model.n_support_.sum()),
                      "per_kernel": dict(zip(model.active_kernel_names_, model.n_support_.tolist()))},
        "seconds": seconds, "instances_per_second": (n - n_start) / seconds if seconds > 0 else None,
        "resumed_from": n_start, "block_size": block_size, "seed": seed, "scaling": scaling,
        "workers": engine.n_workers, "shards": result["n_shards"], "rounds": timing["rounds"],
        "shard_compute_seconds": per_shard, "shard_io_seconds": timing["shard_io_s"],
        "coordinator_ms_per_round": 1000.0 * timing["combine_s"] / rounds,
        # per round: the round's wall time minus the slowest shard's work (reading, appending, computing)
        "overhead_ms_per_round": 1000.0 * (timing["round_s"] - timing["slowest_shard_s"]) / rounds,
        # row-split rounds (stochastic updates): the first shard's time waiting for the others' scores
        "lead_wait_seconds": timing["lead_wait_s"],
        "worker_failures": result["failures"],
    }


def format_report(report: dict) -> str:
    per = report["n_support"]["per_kernel"]
    resumed = f", resumed at row {report['resumed_from']}" if report["resumed_from"] else ""
    failures = f"; recovered from {len(report['worker_failures'])} worker failure(s)" if report["worker_failures"] else ""
    return "\n".join([
        f"{report['algo']} on {report['data']} ({report['n']} instances, block {report['block_size']}, "
        f"seed {report['seed']}, scaling {report['scaling']}{resumed})",
        f"  mistake rate     {100 * report['mistake_rate']:.2f} %  ({report['mistakes']} mistakes)",
        f"  support vectors  {report['n_support']['total']} total over {len(per)} kernel(s)",
        f"  learning time    {report['seconds']:.2f} s  ({report['instances_per_second']:.0f} instances/s) on "
        f"{report['workers']} worker(s), {report['shards']} kernel shard(s){failures}",
        f"  per round        coordinator {report['coordinator_ms_per_round']:.2f} ms, overhead "
        f"{report['overhead_ms_per_round']:.2f} ms ({report['rounds']} rounds)",
        f"  model            {report['model_path']}",
    ])
