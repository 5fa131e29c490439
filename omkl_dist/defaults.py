"""What a job does when its user does not say: the feature scaling and kernel normalisation that
``omkl study defaults`` measured to serve best (docs/defaults.md), and the papers' settings, which
``--paper-settings`` restores and every ``omkl reproduce`` uses.

A scaler is fitted on the first :data:`SCALE_ROWS` rows of a stream (every row seen later is
transformed with it, as it is on a cluster and after a resume: the scaler is stored with the
model). Min-max scaling maps those rows onto [0, 1]; later values outside their range are passed
through on the same affine map (so below 0 or above 1, never clipped and never NaN), and a column
constant on them is shifted, not scaled (see :mod:`omkl_dist.preprocessing`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SCALE_ROWS = 10_000  # rows of the stream's head the scaler is fitted on
# rows per block of every job (omkl run, submit, retrain, the runners) and estimator; measured in
# docs/defaults.md ("Block size"): in-process and on a cluster alike
BLOCK_SIZE = 256
SEED = 0  # a job's seed when none is given: its estimator's random_state and its stream's order
# The study (docs/defaults.md, 14 algorithms x 31 datasets x 5 permutations): standardised features
# with normalised kernels are best, or within 0.5 points of the best, on 264 of 434 rows (mean gap
# 1.20 points), the most of the six combinations, and the most often for 10 of the 14 algorithms.
SCALING = "standard"
NORMALIZE_KERNELS = True


@dataclass(frozen=True)
class Settings:
    """A job's feature scaling and kernel normalisation, and where they come from."""

    scaling: str
    normalize_kernels: bool | None  # None: the kernels exactly as given (their own +norm suffixes)
    scale_rows: int
    origin: str  # "defaults", "paper" or "given"

    def describe(self) -> str:
        """One line for a report."""
        scaling = (
            "raw features"
            if self.scaling == "none"
            else f"{self.scaling} scaling fitted on the first {self.scale_rows:,} rows"
        )
        kernels = {True: "normalised kernels", False: "unnormalised kernels", None: "kernels as given"}
        where = {
            "defaults": "the defaults of docs/defaults.md; --paper-settings for the papers'",
            "defaults-sparse": "the defaults of docs/defaults.md, unscaled: scaling would densify sparse rows",
            "paper": "the papers' settings (--paper-settings)",
            "given": "as chosen",
        }
        return f"{scaling}, {kernels[self.normalize_kernels]} ({where[self.origin]})"

    def for_sparse_rows(self) -> Settings:
        """The settings for sparse rows (a csr dataset, a wide LIBSVM file): the default scaling
        would densify them (standardising moves every zero), so by default they stay unscaled; a
        scaling asked for is kept (and refused if it would densify)."""
        if self.origin != "defaults" or self.scaling == "none":
            return self
        return replace(self, scaling="none", origin="defaults-sparse")

    def as_dict(self) -> dict:
        """JSON-able, with the report line (``describe``)."""
        return {
            "scaling": self.scaling,
            "normalize_kernels": self.normalize_kernels,
            "scale_rows": self.scale_rows,
            "origin": self.origin,
            "describe": self.describe(),
        }


def resolve_settings(
    *,
    scaling: str | None = None,
    normalize_kernels: bool | None = None,
    paper: bool = False,
    scale_rows: int | None = None,
    kernels_given: bool = False,
) -> Settings:
    """The settings of a job: what was asked, the study's defaults for the rest, or (``paper``)
    raw features and unnormalised kernels. With ``kernels_given`` and no explicit choice, the
    kernels are taken as written (a ``+norm`` suffix normalises them)."""
    rows = SCALE_ROWS if scale_rows is None else int(scale_rows)
    if paper:
        if scaling not in (None, "none") or normalize_kernels:
            raise ValueError(
                "--paper-settings means raw features and unnormalised kernels: drop --scaling / "
                "--normalize-kernels, or --paper-settings"
            )
        return Settings("none", False, rows, "paper")
    chosen = scaling is not None or normalize_kernels is not None
    if normalize_kernels is None and not kernels_given:
        normalize_kernels = NORMALIZE_KERNELS
    return Settings(SCALING if scaling is None else scaling, normalize_kernels, rows, "given" if chosen else "defaults")
