"""Checkpoints of a cluster job: ``job.json`` (what the job is) beside ``ckpt-<rows seen>`` saved models.

Every checkpoint is a full saved model (:func:`omkl_dist.persistence.save_model`, written
atomically) with the stream position (``n_seen``) and the metrics so far; a resume checks that
``job.json`` describes the same job and continues from the newest checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import re

from ..job import JOB_SCHEMA, Job
from ..model import Model
from ..persistence import save_model
from ..storage.errors import DataError
from ..storage.location import is_remote, location, remove_tree
from ..storage.outputs import CHECKPOINTS, check_output

JOB = "job.json"
KEEP_CHECKPOINTS = 2


def _differences(old: dict, new: dict, prefix: str = "") -> list:
    """``(key, old value, new value)`` where the jobs differ; nested objects (the parameters) by key."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append((f"{prefix}{key}", (a, b)))
    return out


class CheckpointStore:
    """``job.json`` + ``ckpt-<n_seen>`` saved models; keeps the newest few.

    It creates, replaces and deletes only its own entries, in a folder that holds nothing else
    (:data:`omkl_dist.storage.outputs.CHECKPOINTS`).
    """

    def __init__(self, directory):
        self.dir = location(directory)
        if not is_remote(self.dir):
            self.dir = self.dir.absolute()

    def start(self, job: Job, *, resume: bool, overwrite: bool = False):
        """Record the job (or, for a resume, check it is the recorded one, its engine options
        aside); return the newest checkpoint directory to resume from, or None. Without
        ``resume``, an existing checkpoint folder of an earlier job is replaced only with
        ``overwrite``."""
        recorded = self.dir / JOB
        if not resume:
            if self.dir.exists():  # only an earlier job's checkpoints, and only with overwrite
                check_output(self.dir, CHECKPOINTS, overwrite=overwrite, option="--checkpoint-dir")
                self.clear()
            self.dir.mkdir(parents=True, exist_ok=True)
            recorded.write_text(json.dumps(job.to_dict(), indent=2, sort_keys=True) + "\n")
            return None
        if not recorded.is_file():
            raise DataError(
                "nothing to resume: no job.json",
                path=self.dir,
                fix="run the job without --resume (or point --checkpoint-dir at the job's checkpoints)",
            )
        old = self.recorded_job().identity
        diff = _differences(old, job.identity)
        if diff:
            detail = "; ".join(f"{k}: checkpoint has {a!r}, this command {b!r}" for k, (a, b) in diff)
            raise DataError(
                f"the checkpoints belong to another job ({detail})",
                path=self.dir,
                fix="repeat the original command with --resume, or start over without --resume",
            )
        return self.latest()

    def recorded_job(self) -> Job | None:
        """The job ``job.json`` records (None: there is none); a clear error if it cannot be read."""
        recorded = self.dir / JOB
        if not recorded.is_file():
            return None
        try:
            old = json.loads(recorded.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(
                f"job.json is not valid JSON ({exc})",
                path=recorded,
                fix="restore it from a copy, or start over without --resume (--overwrite)",
            ) from None
        if not isinstance(old, dict) or old.get("schema") != JOB_SCHEMA:
            found = old.get("schema") if isinstance(old, dict) else None
            raise DataError(
                f"checkpoint schema {found!r}, this omkl-dist writes {JOB_SCHEMA}",
                path=recorded,
                fix="resume with the omkl-dist version that wrote it, or start over",
            )
        return Job.from_dict(old, path=recorded, fix="start over without --resume (--overwrite)")

    def latest(self):
        found = self._checkpoints()
        return found[-1] if found else None

    def _checkpoints(self):
        return sorted(p for p in self.dir.glob("ckpt-*") if re.fullmatch(r"ckpt-\d+", p.name))

    def write(self, model, scaler, n_seen: int, job: Job, *, history, samples, calibration_rows: dict):
        """Save ``model`` (its ``calibration_`` the coordinator's so far) as the checkpoint at
        ``n_seen`` rows; ``history`` and ``samples``: the job's mistake curve and model samples so
        far; ``calibration_rows``: the rows the calibration has gathered since its last batch
        (:meth:`~.calibration.RoundCalibration.state`'s ``pending``)."""
        path = self.dir / f"ckpt-{n_seen:012d}"
        # the job block of a checkpoint also holds the rounds' (rows seen, mistakes), the model's
        # samples and the calibration's gathered rows so far: a resume continues them
        extra = {
            "history": [list(h) for h in history],
            "samples": [list(s) for s in samples],
            "calibration_rows": calibration_rows,
        }
        save_model(
            Model(model, scaler=scaler, job={**job.to_dict(), **extra}),
            path,
            overwrite=True,
            option="--checkpoint-dir",
        )
        for old in self._checkpoints()[:-KEEP_CHECKPOINTS]:
            remove_tree(old)
        return path

    def clear(self) -> None:
        """Delete the job record and the checkpoints, then the folder if nothing else is in it."""
        for ckpt in self._checkpoints():
            remove_tree(ckpt)
        (self.dir / JOB).unlink(missing_ok=True)
        if not is_remote(self.dir):  # (an object store's prefix is gone once empty)
            with contextlib.suppress(OSError):  # not empty: something else is there, and stays
                self.dir.rmdir()
