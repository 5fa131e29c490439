"""Distributed execution on Dask: kernel shards + a coordinator for the online learners
(docs/design.md, "A cluster run").

The shard and coordinator classes are plain Python (a unit test drives them without Dask); the
job driver hosts them as Dask actors on a cluster's workers.
"""

from .engine import DaskEngine, WorkerLost
from .runner import DaskRunner

__all__ = ["DaskEngine", "DaskRunner", "WorkerLost"]
