"""What the shards, the coordinator and the Dask engine call of an engine: its round adapter.

An adapter wraps one engine kind's public in-process API (:mod:`omkl_dist.engine`) for one kind of
round; :func:`~omkl_dist.distributed.rounds.round_adapter` picks it from a saved state.

* every adapter (:class:`RoundAdapter`): where a job's rounds end (:meth:`~RoundAdapter.round_ends`),
  how the kernels are shared among shards (:meth:`~RoundAdapter.partition`), what a shard keeps of
  the engine (the adapter's constructor), what the coordinator owns
  (``COMBINER_ARRAYS``), the update every shard applies between rounds
  (:meth:`~RoundAdapter.apply_update`), and how the whole state is rebuilt from the coordinator's
  arrays and the shards' parts (:meth:`~RoundAdapter.model_part`, :meth:`~RoundAdapter.gather`);
* a kernel-split round (:class:`KernelSplit`): each shard learns its kernels
  (:meth:`~KernelSplit.kernel_round`), the coordinator replays the combiner
  (:meth:`~KernelSplit.replay_round`) piece by piece (:meth:`~KernelSplit.pieces`: what the
  in-process run learns in one call);
* a row-split round (:class:`RowSplit`): every shard scores a range of rows
  (:meth:`~RowSplit.score_rows`), the first (the lead) runs the recurrence over all of them and
  hands out what the others apply (:meth:`~RowSplit.learned_update`). The lead's recurrence needs
  every score first (:meth:`~RowSplit.learn_scored`) unless the adapter offers an **early start**
  (:meth:`~RowSplit.early_start`): a recurrence fed the scores in row order, begun on the lead's
  own rows while the others score theirs, with what it draws computed ahead between rounds
  (:meth:`~RowSplit.prepare`);
* **kernel selection** (:class:`SelectsKernel`): a model that learns every kernel over a prefix of
  the stream and then keeps one. The coordinator ends a round where the prefix ends, asks
  :meth:`~SelectsKernel.select_kernel` which kernel goes on, and every shard keeps only it
  (:meth:`~SelectsKernel.keep_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

if TYPE_CHECKING:
    from ...engine.local import Rounds
    from ...engine.protocol import Engine
    from ...scoring.program import KernelProgram


class RoundAdapter(Protocol):
    """One engine's side of a cluster job, built on a shard from the whole engine and the kernel
    ``positions`` the shard learns."""

    COMBINER_ARRAYS: ClassVar[tuple[str, ...]]  # the engine arrays the coordinator owns
    SPLITS_ROWS: ClassVar[bool]  # whether rounds are split by rows (else by kernels)
    engine: Engine  # what this shard keeps of the engine

    def __init__(self, engine: Engine, positions: np.ndarray) -> None: ...

    @staticmethod
    def takes(scalars: dict[str, Any]) -> bool:
        """Whether this adapter runs the job of a saved state (among its engine kind's adapters)."""

    @staticmethod
    def partition(program: KernelProgram, scalars: dict[str, Any], n_shards: int) -> list[np.ndarray]:
        """The kernel positions each of (at most) ``n_shards`` shards is built with."""

    @staticmethod
    def round_ends(scalars: dict[str, Any], program: KernelProgram) -> Rounds:
        """Where a job's rounds end: where the in-process engine's segments end."""

    @staticmethod
    def samples_inside(scalars: dict[str, Any]) -> bool:
        """Whether the coordinator reads the model inside a round (the trace's samples at the
        mistake curve's points, :mod:`omkl_dist.engine.samples`); if so the adapter also has
        ``samples(scalars, start, outcome, y, rows)``."""

    @staticmethod
    def support_counts(arrays: dict[str, np.ndarray]) -> np.ndarray:
        """Support vectors per kernel of a whole state's arrays (where a job starts)."""

    @staticmethod
    def support_after(
        support: np.ndarray, outcome: dict[str, Any], parts: Sequence[np.ndarray], outs: Sequence[dict[str, Any]]
    ) -> np.ndarray:
        """Support vectors per kernel after a round that began with ``support``, from the round's
        ``outcome`` and the shards' replies ``outs`` (shard i's kernels ``parts[i]``)."""

    @staticmethod
    def weight_shares(combiner: dict[str, np.ndarray], scalars: dict[str, Any]) -> np.ndarray:
        """The kernel weight shares the estimator publishes (``weights_``) from the coordinator's arrays."""

    def apply_update(self, X: np.ndarray, xsq: np.ndarray, update: Any) -> None:
        """Take the last round's update (its rows ``X``, their squared norms ``xsq``)."""

    def model_part(self) -> object:
        """What this shard contributes to :meth:`gather`."""

    @classmethod
    def gather(
        cls, combiner: dict[str, np.ndarray], scalars: dict[str, Any], part_of: Callable[[int], object], n_shards: int
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The whole state from the coordinator's ``combiner`` arrays and counters (in ``scalars``)
        and shard ``i``'s :meth:`model_part` (``part_of(i)``)."""


class KernelSplit(RoundAdapter, Protocol):
    """Rounds split by kernels: each shard learns its kernels, the coordinator replays the combiner."""

    def kernel_round(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, act: np.ndarray) -> dict[str, Any]:
        """This shard's part of a round over rows (X, y) with the model's weights ``w``: its kernels'
        (``act``) decision values ``F``, what :meth:`replay_round` needs, and ``xsq`` (the rows'
        squared norms) when the rows may join a shared pool."""

    @staticmethod
    def pieces(scalars: dict[str, Any], g: int, n: int) -> list[tuple[int, int]]:
        """The round of ``n`` rows from instance ``g`` as the in-process run's calls learn it:
        ``(lo, hi)`` offsets, replayed, calibrated and sampled one after the other."""

    @staticmethod
    def piece_of(out: dict[str, Any], index: int, lo: int, hi: int) -> dict[str, Any]:
        """A shard's :meth:`kernel_round` reply for piece ``index`` of the round (rows ``lo:hi``):
        what :meth:`replay_round` and :meth:`~RoundAdapter.support_after` read of it."""

    @staticmethod
    def replay_round(
        combiner: dict[str, np.ndarray],
        scalars: dict[str, Any],
        y: np.ndarray,
        parts: Sequence[np.ndarray],
        outs: Sequence[dict[str, Any]],
        g: int,
    ) -> tuple[dict[str, np.ndarray], object]:
        """Replay the combiner over a round's piece starting at instance ``g`` (updates the ``combiner``
        arrays in place); returns the round's online outcome as the in-process engine gives it
        (``mistakes`` and the combined ``score`` per row, ``F`` the per-kernel scores) and the
        update every shard applies next (or None)."""


class Recurrence(Protocol):
    """A round's recurrence fed its rows' scores in row order, in parts of any size."""

    def feed(self, scores: np.ndarray) -> None: ...

    def result(self) -> tuple[Any, ...]:
        """``(scores, score, mistakes, coef)`` once every row is fed."""


class RowSplit(RoundAdapter, Protocol):
    """Rounds split by rows: every shard scores some rows, the lead shard runs the recurrence."""

    score_width: int  # columns of :meth:`score_rows`

    def score_rows(self, X: np.ndarray, xsq: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo:hi`` of a round scored against the model as it is, ``(hi - lo, score_width)``."""

    def early_start(self, X: np.ndarray, xsq: np.ndarray, y: np.ndarray, prepared: Any) -> Recurrence | None:
        """The round's recurrence, to be fed the scores as they arrive (None: this job's recurrence
        needs every score first, :meth:`learn_scored`). ``prepared``: :meth:`prepare` of this round
        if the lead computed it ahead, else None."""

    def prepare(self, g: int, n: int) -> Any:
        """What :meth:`early_start` of the round of ``n`` rows from instance ``g`` can take computed
        ahead (the lead computes it in the background while it waits)."""

    def learn_scored(self, X: np.ndarray, xsq: np.ndarray, y: np.ndarray, scores: np.ndarray) -> tuple[Any, ...]:
        """The recurrence over the round given every row's :meth:`score_rows`:
        ``(scores, score, mistakes, coef)``."""

    def learned_update(self, coef: Any) -> Any:
        """What the other shards apply (:meth:`apply_update`) after the round."""

    def combiner_arrays(self) -> dict[str, np.ndarray]:
        """Copies of the ``COMBINER_ARRAYS`` the lead's engine holds after the round."""


class SelectsKernel(Protocol):
    """An adapter whose model may go on with one kernel after a prefix of the stream."""

    @staticmethod
    def select_kernel(combiner: dict[str, np.ndarray]) -> int:
        """The kernel position that goes on, from the coordinator's arrays at the prefix's end."""

    def keep_kernel(self, position: int, program: KernelProgram) -> None:
        """Keep only kernel ``position`` (``program``: its compiled kernel) from now on."""
