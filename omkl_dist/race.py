"""``scaling="auto"``: a job's feature scaling and kernel normalisation chosen on its own stream.

Each candidate of the job's automatic setting (:attr:`omkl_dist.defaults.Settings.candidates`)
learns the stream's first ``race_rows`` rows test-then-train, exactly as the job would learn them
with that setting fixed: the same rows in the same order, the scaler fitted on the same head
(``scale_rows``), the same estimator (sized for the whole window), seed and blocks. The candidate
with the fewest mistakes wins; a tie goes to the earlier candidate. The race reads only the head
of an ingested stream (in a run, of the rows the run opened: a data file is parsed once), and is
a pure function of the job and the data: in this process, on a cluster worker (:func:`race_task`)
and after a resume (which takes the recorded choice instead) it chooses the same. Its cost is
``len(candidates) x race_rows`` rows of learning, at the start of the stream where the models are
smallest (docs/defaults.md, "The race").

>>> from omkl_dist.job import DataWindow, Job
>>> job = Job.build("spa", {}, data=DataWindow("codrna"))
>>> job.settings.is_auto, job.settings.candidates[:2]
(True, ('standard+norm', 'standard+raw'))
>>> chosen = race(job, "codrna")  # doctest: +SKIP
>>> chosen.settings.race_line()  # doctest: +SKIP
'auto chose minmax+norm: 301 vs 305 (minmax+raw), ... mistakes on the first 5,000 rows; ...'
"""

from __future__ import annotations

from .evaluation import feed_calls, progressive_score
from .job import Job
from .preprocessing import Scaler
from .storage.job_data import JobRows, open_job_rows


def race(job: Job, dataset, *, labels: dict | None = None) -> Job:
    """``job`` with its automatic setting decided on the head of ``dataset`` (a registry name, a
    data file or an ingested dataset; or its rows opened already,
    :class:`~omkl_dist.storage.job_data.JobRows`: a run reads them once); unchanged if its settings
    are fixed. ``labels``: how a data file's columns are read (as :class:`~omkl_dist.runner.LocalRunner`'s)."""
    request = job.settings
    if not request.is_auto:
        return job
    rows = dataset
    if not isinstance(rows, JobRows):
        rows = open_job_rows(
            dataset,
            feed_rows=job.estimator(n_rows=1).feed_rows(),
            seed=job.seed,
            permute=job.data.permute,
            start=job.data.start,
            stop=job.data.stop,
            labels=labels,
        )
    if rows.sparse:  # no scaling that would densify the rows (Settings.for_sparse_rows)
        request = request.for_sparse_rows()
    if len(request.candidates) == 1:
        only = request.candidate(request.candidates[0])
        return job.settled(only)
    n_scale = min(rows.n_rows, request.scale_rows)
    n_race = min(rows.n_rows, request.race_rows)
    X, y = rows.head(max(n_scale, n_race))
    mistakes = [
        _mistakes(job.settled(request.candidate(label)), X, y, rows, n_scale, n_race) for label in request.candidates
    ]
    return job.settled(request.chosen(mistakes, n_race))


def race_task(job_document: dict, dataset: str) -> dict:
    """Task: :func:`race` on a worker (no feature data reaches the client); the decided job's document."""
    return race(Job.from_dict(job_document), dataset).to_dict()


def _mistakes(job: Job, X, y, rows: JobRows, n_scale: int, n_race: int) -> int:
    """Mistakes of ``job`` (one candidate's fixed settings) over the first ``n_race`` rows, its
    scaler fitted on the first ``n_scale`` (the stream's head ``X``, ``y``)."""
    if n_race == 0:
        return 0
    scaler = Scaler(job.settings.scaling).fit_prefix([X], n_scale)
    Xs, y = scaler.transform(X[:n_race]), y[:n_race]
    model = job.estimator(n_rows=rows.n_rows, feature_groups=rows.feature_groups)
    feed = model.feed_rows()
    blocks = [(Xs[lo : lo + feed], y[lo : lo + feed]) for lo in range(0, n_race, feed)]
    calls = feed_calls(blocks, model.feed())  # as the job will be fed
    return int(progressive_score(model, calls, n_rows=n_race, classes=rows.classes).summary()["mistakes"])
