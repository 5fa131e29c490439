"""What both kinds of round share on :class:`~omkl_dist.engine.local.LocalEngine`: one pool of
support vectors, whole on every shard (each kernel is evaluated with the same data)."""

from __future__ import annotations

import numpy as np

from ...combiners.codes import OM2
from ...engine.hyper import OM2Hyper
from ...engine.local import segmenting
from ...engine.samples import factor_shares, om2_factors, pool_samples, pool_support, samples_inside, support_per_kernel


class SharedPool:
    """The shared-pool engine on a shard: the coordinator owns the weights and counters, every
    shard the pool; shards append the same rows with the same coefficients after every round."""

    COMBINER_ARRAYS = ("w", "wsync", "logw", "kernel_mistakes", "kernel_ids", "sqnorm")

    def __init__(self, engine, positions):
        self.engine = engine  # every shard keeps the whole pool

    @staticmethod
    def round_ends(scalars: dict, program):
        """The in-process segments (:func:`~omkl_dist.engine.local.segmenting`)."""
        return segmenting(int(scalars["rule"]), program, int(scalars["block_size"]))

    # --- the model read by the trace (omkl_dist.engine.samples) ------------------------------
    samples_inside = staticmethod(samples_inside)
    support_counts = staticmethod(pool_support)

    @staticmethod
    def samples(scalars: dict, start: dict, outcome: dict, y, rows):
        """:func:`~omkl_dist.engine.samples.pool_samples` of the round's outcome (``F``, ``coef``)."""
        return pool_samples(scalars, start, outcome["F"], outcome["coef"], y, rows)

    @staticmethod
    def support_after(support, outcome: dict, parts, outs):
        """Support vectors per kernel after the round: ``support`` plus the rows the round's
        coefficients (``coef``, what every shard appends) give each kernel."""
        return support + support_per_kernel(outcome["coef"], len(support))

    @staticmethod
    def weight_shares(combiner: dict, scalars: dict):
        """The kernel weight shares the estimator publishes (``weights_``): ``w`` normalised; OM-2's
        kernel factors α normalised (uniform before the first update)."""
        if int(scalars["rule"]) != OM2:
            return combiner["w"] / combiner["w"].sum()
        return factor_shares(om2_factors(combiner["sqnorm"], OM2Hyper.from_scalars(scalars).q))

    def apply_update(self, X, xsq, update) -> None:
        """Append a round's support vectors ``update = (rows, coef)`` of the round's rows ``X``."""
        rows, coef = update
        self.engine.support_vectors.append(X[rows], xsq[rows], coef)

    def model_part(self) -> dict:
        """The support-vector store (identical on every shard once a round is applied)."""
        return self.engine.support_vectors.state()

    @classmethod
    def gather(cls, combiner: dict, scalars: dict, part_of, n_shards: int):
        """The coordinator's arrays plus one shard's pool."""
        return {**combiner, **part_of(0)}, scalars

    # --- kernel selection (SelectsKernel) ----------------------------------------------------
    @staticmethod
    def select_kernel(combiner: dict) -> int:
        """The kernel with the fewest mistakes (the first of equals)."""
        return int(np.argmin(combiner["kernel_mistakes"]))

    def keep_kernel(self, position: int, program) -> None:
        """Restrict the engine to kernel ``position`` (:meth:`LocalEngine.keep_kernels`)."""
        self.engine.keep_kernels([position], program)
