"""The hyper-parameters of :class:`~.local.LocalEngine`'s rules: one frozen record per family.

A rule reads only its own family's record (:func:`hyper_class`). A saved state keeps every family's
scalars under fixed keys (:func:`saved_scalars`: the other families' at their defaults), so a model
file names the same keys whatever its rule, and :meth:`from_scalars` reads a family's back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..combiners import codes
from .records import OMKCParams


@dataclass(frozen=True)
class RuleHyper:
    """A rule family's hyper-parameters, and their conversion to and from a saved state's scalars
    (``SAVED_AS``: field -> key where the two differ)."""

    SAVED_AS: ClassVar[dict[str, str]] = {}

    def to_scalars(self) -> dict[str, Any]:
        """This record as a saved state's scalars."""
        return {self.SAVED_AS.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_scalars(cls, scalars: dict[str, Any]) -> RuleHyper:
        """The record a saved state's scalars hold (a field the state lacks keeps its default)."""
        keys = {f.name: cls.SAVED_AS.get(f.name, f.name) for f in fields(cls)}
        return cls(**{name: scalars[key] for name, key in keys.items() if key in scalars})

    def __post_init__(self) -> None:
        for f in fields(self):  # JSON and callers may give ints for floats: the record holds the type
            object.__setattr__(self, f.name, type(f.default)(getattr(self, f.name)))


@dataclass(frozen=True)
class OMKCHyper(RuleHyper):
    """The OMKC family's and the kernel Perceptrons': Hedge discount β, sampling smoothing δ, and the
    component learner: the Perceptron, or with ``pa`` PA-I of aggressiveness ``pa_c``."""

    beta: float = 1.0
    delta: float = 1.0
    pa: bool = False
    pa_c: float = 1.0


def omkc_params(rule: int, t0: int, block_size: int, block_sync: bool, hyper: OMKCHyper) -> OMKCParams:
    """The OMKC recurrence's scalars over a segment starting at global instance ``t0``."""
    return OMKCParams(rule, t0, block_size, block_sync, hyper.beta, hyper.delta, hyper.pa, hyper.pa_c)


@dataclass(frozen=True)
class SPAHyper(RuleHyper):
    """SPA's: loss discount γ, sampling smoothing δ, support-vector sampling ratio α/β,
    aggressiveness η, and whether Hedge discounts by mistakes rather than hinge losses."""

    SAVED_AS: ClassVar[dict[str, str]] = {"beta": "spa_beta"}  # (OMKC's β is another quantity)

    gamma: float = 1.0
    delta: float = 1.0
    alpha: float = 1.0
    beta: float = 1.0
    eta: float = 1.0
    hedge_mistake: bool = False


@dataclass(frozen=True)
class OM2Hyper(RuleHyper):
    """OM-2's: the dual norm exponent q and whether ‖z‖²_{2,q} takes its bound 2F^{2/q}."""

    q: float = 2.0
    bounded_norm: bool = False


def hyper_class(rule: int) -> type[RuleHyper]:
    """The record of a rule's hyper-parameters."""
    if rule == codes.SPA:
        return SPAHyper
    if rule == codes.OM2:
        return OM2Hyper
    return OMKCHyper


def saved_scalars(hyper: RuleHyper) -> dict[str, Any]:
    """A saved state's hyper-parameter scalars: ``hyper``'s over every family's defaults."""
    out: dict[str, Any] = {}
    for family in (OMKCHyper, SPAHyper, OM2Hyper):
        out.update(family().to_scalars())
    out.update(hyper.to_scalars())
    return out
