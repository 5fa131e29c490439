"""The round adapters: what a cluster job's rounds need of an engine (:mod:`.protocol`), one small
adapter per engine kind and kind of round, built over the engine's public in-process API.

:func:`round_adapter` picks a saved state's adapter: the first of its engine kind's adapters
(:data:`ADAPTERS`) that :meth:`~.protocol.RoundAdapter.takes` the job. The shards, the coordinator
and the Dask engine call only the adapter.
"""

from __future__ import annotations

from typing import Any

from ...engine.budget import BudgetEngine
from ...engine.features import FourierEngine
from ...engine.local import LocalEngine
from ...engine.nystrom import NystromEngine
from ...engine.oks import OKSEngine
from ...engine.protocol import engine_class
from .kernel_split import BudgetEngineSplit, BudgetKernelSplit, PoolKernelSplit
from .protocol import KernelSplit, Recurrence, RoundAdapter, RowSplit, SelectsKernel
from .row_split import OKSRowSplit, PoolRowSplit

__all__ = [
    "ADAPTERS",
    "KernelSplit",
    "Recurrence",
    "RoundAdapter",
    "RowSplit",
    "SelectsKernel",
    "round_adapter",
    "splits_rows",
]

# engine kind -> its adapters, in the order they are asked whether they take a job
ADAPTERS: dict[type, tuple[type, ...]] = {
    LocalEngine: (PoolRowSplit, PoolKernelSplit),
    BudgetEngine: (BudgetEngineSplit,),
    FourierEngine: (BudgetKernelSplit,),
    NystromEngine: (BudgetKernelSplit,),
    OKSEngine: (OKSRowSplit,),
}


def round_adapter(scalars: dict[str, Any]) -> type:
    """The adapter class that runs the job of a saved state (``scalars``)."""
    return next(adapter for adapter in ADAPTERS[engine_class(scalars)] if adapter.takes(scalars))


def splits_rows(scalars: dict[str, Any]) -> bool:
    """Whether a job's rounds are split by rows (every shard scores some rows with every kernel)
    rather than by kernels."""
    return round_adapter(scalars).SPLITS_ROWS
