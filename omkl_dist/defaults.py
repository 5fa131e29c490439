"""What a job does when its user does not say: the feature scaling and kernel normalisation that
whole-stream measurements chose (docs/defaults.md), a race of the candidate settings on the stream's
own head when asked (``--scaling auto``, :mod:`omkl_dist.race`), and the papers' settings, which
``--paper-settings`` restores and every ``omkl reproduce`` uses.

A scaler is fitted on the first :data:`SCALE_ROWS` rows of a stream (every row seen later is
transformed with it, as it is on a cluster and after a resume: the scaler is stored with the
model). Min-max scaling maps those rows onto [0, 1]; later values outside their range are passed
through on the same affine map (so below 0 or above 1, never clipped and never NaN), and a column
constant on them is shifted, not scaled (see :mod:`omkl_dist.preprocessing`).

An automatic setting is a request until it is raced: each candidate learns the stream's first
:data:`RACE_ROWS` rows test-then-train, exactly as the run would, and the one with the fewest
mistakes wins (ties: the earlier candidate of :data:`CANDIDATES`). The winner and every candidate's
mistakes are recorded in the job (``job.json``, the model's provenance), so a cluster run, a resume
and a later retrain use the choice made once and never race again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SCALE_ROWS = 10_000  # rows of the stream's head the scaler is fitted on
# rows per block of every job (omkl run, submit, retrain, the runners) and estimator; measured in
# docs/defaults.md ("Block size"): in-process and on a cluster alike
BLOCK_SIZE = 256
SEED = 0  # a job's seed when none is given: its estimator's random_state and its stream's order
# Whole streams (docs/defaults.md, "Whole streams"; cod-rna, SUSY, magic04- and letters-shaped, ijcnn1
# for SPA): with SPA's Hedge discounting mistakes (JOB_PARAMS), standardised features and normalised
# kernels are within 1 point of the best of the six combinations for SPA, OMKC (S,S), OM-2 and BPAS
# on every stream measured (worst: BPAS on magic04-shaped, +0.64), and the 5,000-row race ("auto")
# picked no better on any of them while it learns the head six more times (BENCHMARKS.md, "The
# race's cost": +3.5 % CPU on a 1,000,000-row SPA run, the head read once with the run's rows; a small
# file's first run compiles six variants).
# So the race is a choice (--scaling auto), not the default. One exception, a rule on the head: where
# every feature value of the rows the scaler is fit on is 0 or 1 (indicator features: a9a, w7a), the
# default leaves the features unscaled (Settings.for_zero_one_head): none+norm is the best of the six
# there or within 0.85 points of it for every algorithm, standard+norm up to 1.46 points off (BPAS on
# a9a; docs/defaults.md, "The 0/1 rule").
SCALING = "standard"
NORMALIZE_KERNELS = True  # with an explicit --scaling (and what a sparse stream or a batch fit keeps)
FIXED_SCALING = "standard"  # where nothing is raced: a batch fit's scaling (the 3,000-row study's choice)
SCALINGS = ("none", "minmax", "standard")
# the race's candidates, in the order that breaks ties (the 3,000-row study's most frequent winners first)
CANDIDATES = ("standard+norm", "standard", "minmax+norm", "minmax", "none+norm", "none")
# Estimator parameters a job sets unless given (not with --paper-settings, which keeps the papers'):
# SPA's Hedge weights discounted by mistakes -- the authors' C++ rule -- instead of by the hinge loss
# (Algorithm 1 as printed, the estimator's default): on whole streams it makes fewer mistakes
# (cod-rna 6.35 % vs 6.90 %, each at its best setting; docs/defaults.md "Whole streams").
JOB_PARAMS = {"spa": {"hedge_loss": "mistake"}}
# rows of the stream's head the candidates learn. On the whole-stream study's runs (their cumulative
# mistakes after the first rows are the race's scores; pipelines/studies/defaults_race.py), the pick after
# 5,000 rows is within 1 point of the best of the six on 28 of 31 streams -- every algorithm's defaults
# among them; the three others are SPA's hinge Hedge loss and the gaussian-only pools on cod-rna --, after
# 10,000 rows on all 31, at twice the cost (BENCHMARKS.md, "The race's cost")
RACE_ROWS = 5_000


@dataclass(frozen=True)
class Settings:
    """A job's feature scaling and kernel normalisation, and where they come from.

    ``scaling="auto"`` is a request: ``candidates`` (``"minmax+norm"``: min-max scaling and
    normalised kernels; a bare scaling: the kernels as ``normalize_kernels`` says) race over the
    stream's first ``race_rows`` rows (:mod:`omkl_dist.race`), and :meth:`chosen` gives the settings
    that won, origin ``"auto"``, with every candidate's ``race`` mistakes.
    """

    scaling: str
    normalize_kernels: bool | None  # None: the kernels exactly as given (their own +norm suffixes)
    scale_rows: int
    # "defaults", "defaults-sparse", "defaults-zero-one" (the default on a 0/1 head), "paper", "given"
    # or "auto" (raced)
    origin: str
    candidates: tuple = ()  # an automatic setting's candidates (empty: a fixed setting)
    race_rows: int = 0  # rows the candidates learn
    race: tuple = ()  # their mistakes on those rows, in the candidates' order (once raced)

    def __post_init__(self):
        object.__setattr__(self, "candidates", tuple(self.candidates))
        object.__setattr__(self, "race", tuple(int(m) for m in self.race))
        for label in self.candidates:
            scaling, _, kernels = label.partition("+")
            if scaling not in SCALINGS or kernels not in ("", "norm", "raw"):
                raise ValueError(f"an automatic setting's candidate is a scaling with +norm or +raw, got {label!r}")
        if self.race and len(self.race) != len(self.candidates):
            raise ValueError(f"{len(self.race)} race results for {len(self.candidates)} candidates")

    @property
    def is_auto(self) -> bool:
        """An automatic setting not raced yet."""
        return self.scaling == "auto"

    def candidate(self, label: str) -> Settings:
        """The fixed settings of one of the candidates."""
        scaling, _, kernels = label.partition("+")
        normalize = {"norm": True, "raw": False, "": self.normalize_kernels}[kernels]
        return Settings(scaling, normalize, self.scale_rows, "given")

    def chosen(self, mistakes, rows: int) -> Settings:
        """The settings the race chose: the candidate with the fewest ``mistakes`` on the first
        ``rows`` rows (ties: the earlier one)."""
        mistakes = [int(m) for m in mistakes]
        winner = self.candidates[mistakes.index(min(mistakes))]
        fixed = self.candidate(winner)
        return replace(
            self,
            scaling=fixed.scaling,
            normalize_kernels=fixed.normalize_kernels,
            origin="auto",
            race_rows=rows,
            race=tuple(mistakes),
        )

    @property
    def checks_head(self) -> bool:
        """Whether these settings are decided on the stream's head by the 0/1 rule
        (:meth:`for_zero_one_head`): the defaults, unless they leave the features unscaled already."""
        return self.origin == "defaults" and self.scaling != "none"

    def for_zero_one_head(self) -> Settings:
        """The default on a stream whose head (the first ``scale_rows`` rows, the ones a scaler
        would be fitted on) has every feature value 0 or 1: no feature scaling, the kernels as the
        defaults say (:data:`SCALING`'s comment); any other settings as they are."""
        if not self.checks_head:
            return self
        return replace(self, scaling="none", origin="defaults-zero-one")

    def settles(self, request: Settings) -> bool:
        """Whether these are ``request``'s settings as decided on the stream's head (a resume's
        recorded choice): an automatic setting as raced, or the defaults after the 0/1 rule and
        the rule for sparse rows."""
        if not request.is_auto:
            return request.checks_head and self in (
                request,
                request.for_zero_one_head(),
                request.for_sparse_rows(),
            )
        return self.origin == "auto" and (self.candidates, self.scale_rows, self.race_rows <= request.race_rows) == (
            request.candidates,
            request.scale_rows,
            True,
        )

    def describe(self, head_rows: int | None = None) -> str:
        """One line for a report; ``head_rows``: the rows the scaler was fitted on, when known (a
        stream shorter than ``scale_rows`` is said to be read whole)."""
        head = (
            f"the first {self.scale_rows:,} rows"
            if head_rows is None or head_rows >= self.scale_rows
            else f"all {head_rows:,} rows"
        )
        if self.is_auto:
            return f"automatic: the best of {', '.join(self.candidates)} on the stream's first {self.race_rows:,} rows"
        scaling = "raw features" if self.scaling == "none" else f"{self.scaling} scaling fitted on {head}"
        kernels = {True: "normalised kernels", False: "unnormalised kernels", None: "kernels as given"}
        where = {
            "defaults": "the defaults of docs/defaults.md; --paper-settings for the papers'",
            "defaults-sparse": "the defaults of docs/defaults.md, unscaled: scaling would densify sparse rows",
            "defaults-zero-one": (
                f"default: no feature scaling — every feature of {head} is 0 or 1; --scaling to choose"
            ),
            "paper": "the papers' settings (--paper-settings)",
            "given": "as chosen",
        }
        if self.origin == "auto":
            return f"{scaling}, {kernels[self.normalize_kernels]} ({self.race_line()})"
        return f"{scaling}, {kernels[self.normalize_kernels]} ({where[self.origin]})"

    def race_line(self) -> str:
        """How the race went: ``auto chose minmax+norm: 61 vs 74 (standard+norm), ... mistakes on the
        first 5,000 rows``."""
        ranked = sorted(zip(self.race, range(len(self.race))))
        winner, *others = [(self.candidates[i], m) for m, i in ranked]
        rest = ", ".join(f"{m:,} ({label})" for label, m in others)
        return (
            f"auto chose {winner[0]}: {winner[1]:,} vs {rest} mistakes on the first {self.race_rows:,} rows; "
            "--scaling/--paper-settings to choose"
        )

    def for_sparse_rows(self) -> Settings:
        """The settings for sparse rows (a csr dataset, a wide LIBSVM file): a default scaling
        would densify them (standardising moves every zero), so by default they stay unscaled (an
        automatic setting races its unscaled candidates only); a scaling asked for is kept (and
        refused if it would densify)."""
        if self.is_auto:
            unscaled = tuple(label for label in self.candidates if label.partition("+")[0] == "none")
            return replace(self, candidates=unscaled)
        if self.origin != "defaults" or self.scaling == "none":
            return self
        return replace(self, scaling="none", origin="defaults-sparse")

    def as_dict(self, head_rows: int | None = None) -> dict:
        """JSON-able, with the report line (``describe``; ``head_rows`` as there)."""
        document = {
            "scaling": self.scaling,
            "normalize_kernels": self.normalize_kernels,
            "scale_rows": self.scale_rows,
            "origin": self.origin,
            "describe": self.describe(head_rows),
        }
        if self.candidates:
            document.update(candidates=list(self.candidates), race_rows=self.race_rows)
        if self.race:
            document["race"] = dict(zip(self.candidates, self.race))
        return document


def resolve_settings(
    *,
    scaling: str | None = None,
    normalize_kernels: bool | None = None,
    paper: bool = False,
    scale_rows: int | None = None,
    kernels_given: bool = False,
    race_rows: int | None = None,
) -> Settings:
    """The settings of a job: what was asked, the defaults for the rest, or (``paper``) raw
    features and unnormalised kernels. With ``kernels_given`` and no explicit choice, the kernels
    are taken as written (a ``+norm`` suffix normalises them). An automatic scaling
    (``scaling="auto"``) races the three scalings, each with normalised and unnormalised kernels
    unless the kernels are given or their normalisation is asked for."""
    rows = SCALE_ROWS if scale_rows is None else int(scale_rows)
    if paper:
        if scaling not in (None, "none") or normalize_kernels:
            raise ValueError(
                "--paper-settings means raw features and unnormalised kernels: drop --scaling / "
                "--normalize-kernels, or --paper-settings"
            )
        return Settings("none", False, rows, "paper")
    origin = "given" if scaling is not None or normalize_kernels is not None else "defaults"
    scaling = SCALING if scaling is None else scaling
    if scaling == "auto":
        raced = normalize_kernels is None and not kernels_given
        candidates = CANDIDATES if raced else tuple(dict.fromkeys(c.partition("+")[0] for c in CANDIDATES))
        labels = tuple(c if "+" in c or not raced else f"{c}+raw" for c in candidates)
        race = RACE_ROWS if race_rows is None else int(race_rows)
        return Settings("auto", normalize_kernels, rows, origin, candidates=labels, race_rows=race)
    if normalize_kernels is None and not kernels_given:
        normalize_kernels = NORMALIZE_KERNELS
    return Settings(scaling, normalize_kernels, rows, origin)
