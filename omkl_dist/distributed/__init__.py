"""Distributed execution on Dask: kernel shards + a coordinator for the online learners
(docs/design.md, "A cluster run").

The shard and coordinator classes are plain Python (a unit test drives them without Dask); the
job driver hosts them as Dask actors on a cluster's workers.
"""

from .runner import DaskRunner, fit_on_cluster
from .sharded_rounds import WorkerLost

__all__ = ["DaskRunner", "WorkerLost", "fit_on_cluster"]
