"""Declarative parameter constraints (in the style of scikit-learn's ``_parameter_constraints``) and
the one seed resolver.

An estimator declares what each parameter may be::

    _parameter_constraints = {
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "update": [StrOptions({"D", "S"})],
        "budget": [None, Interval(Integral, 1, None, closed="left")],
    }

and calls :func:`validate_params` where it starts fitting: a value must satisfy one of its
parameter's constraints, else a ``ValueError`` names the owner, the parameter, what it may be and
the value received (``"OMKC: beta must be a float in (0, 1), got 1.5"``). The function returns the
values, converted (``int`` for integers, ``float`` for reals). Rules between parameters (SPA's
``beta >= alpha``) stay as a short check after it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = ["Interval", "StrOptions", "Satisfies", "describe", "check_param", "validate_params", "resolve_seed"]


def _number(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


class Interval:
    """A number of ``type`` (``Integral`` or ``Real``, never a bool) between ``left`` and ``right``
    (``None``: unbounded; reals must then be finite); ``closed`` is "left", "right", "both" or
    "neither". ``whole_floats``: integers may also come as floats with an integer value (``2.0``)."""

    def __init__(self, type, left, right, *, closed: str, whole_floats: bool = False):
        if type not in (Integral, Real) or closed not in ("left", "right", "both", "neither"):
            raise ValueError(
                f"Interval({type!r}, closed={closed!r}): type must be Integral or Real, closed one of "
                "'left', 'right', 'both', 'neither'"
            )
        self.type, self.left, self.right, self.closed, self.whole_floats = type, left, right, closed, whole_floats

    def convert(self, value: Any) -> Any:
        """The value as ``int``/``float``, or ``None`` when it is not in the interval."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return None
        if self.type is Integral:
            if not isinstance(value, numbers.Integral):
                if not (self.whole_floats and math.isfinite(float(value)) and float(value).is_integer()):
                    return None
            value = int(value)
        else:
            try:
                value = float(value)
            except OverflowError:  # an int beyond the float range
                return None
            if not math.isfinite(value):
                return None
        if self.left is not None and not (value >= self.left if self.closed in ("left", "both") else value > self.left):
            return None
        if self.right is not None and not (
            value <= self.right if self.closed in ("right", "both") else value < self.right
        ):
            return None
        return value

    def __str__(self) -> str:
        left_closed, right_closed = self.closed in ("left", "both"), self.closed in ("right", "both")
        if self.type is Integral and self.right is None and self.left == (1 if left_closed else 0):
            return "a positive integer"
        if self.type is Real and self.right is None and self.left == 0 and not left_closed:
            return "a positive finite number"
        if self.left is not None and self.right is not None:
            interval = (
                f"{'[' if left_closed else '('}{_number(self.left)}, {_number(self.right)}"
                f"{']' if right_closed else ')'}"
            )
            return f"{'an integer' if self.type is Integral else 'a float'} in {interval}"
        kind = "an integer" if self.type is Integral else "a finite number"
        if self.left is not None:
            return f"{kind} {'>=' if left_closed else '>'} {_number(self.left)}"
        if self.right is not None:
            return f"{kind} {'<=' if right_closed else '<'} {_number(self.right)}"
        return kind


class StrOptions:
    """One of a set of strings, listed in the messages in the given order; a dict's values say what
    each option means (``{"D": "deterministic", "S": "stochastic"}``)."""

    def __init__(self, options, *, note: str = ""):
        self.options = dict(options) if isinstance(options, dict) else dict.fromkeys(options, "")
        self.note = note  # said after the list, e.g. where another option lives

    def convert(self, value: Any) -> Any:
        return value if isinstance(value, str) and value in self.options else None

    def __str__(self) -> str:
        meanings = ", ".join(f"{o}: {meaning}" for o, meaning in self.options.items() if meaning)
        notes = "; ".join(note for note in (meanings, self.note) if note)
        return f"one of {list(self.options)!r}" + (f" ({notes})" if notes else "")


class Satisfies:
    """A value that ``convert(value)`` takes: it returns the converted value, ``None`` (or raises
    ``TypeError``) for one it does not take, or raises ``ValueError`` with a message more precise
    than :func:`check_param`'s (an unknown kernel name and its close matches), which propagates.
    ``description`` says what is taken. For the values no interval or option list describes:
    kernel specs, lists of floats, pairs."""

    def __init__(self, convert: Callable, description: str):
        self._convert, self.description = convert, description

    def convert(self, value: Any) -> Any:
        try:
            return self._convert(value)
        except TypeError:
            return None

    def __str__(self) -> str:
        return self.description


def describe(constraints) -> str:
    """What a parameter with these constraints may be, e.g. ``"None or a positive integer"``."""
    return " or ".join("None" if c is None else str(c) for c in constraints)


def check_param(owner: str | None, name: str, value, constraints, *, hint: str = ""):
    """``value`` converted by the first of ``constraints`` it satisfies (``None`` in the list allows
    ``None``), else a ``ValueError`` naming ``owner``, ``name``, what is allowed and ``value``;
    ``hint`` (e.g. an example) ends the message."""
    for constraint in constraints:
        if constraint is None:
            if value is None:
                return None
            continue
        converted = constraint.convert(value)
        if converted is not None:
            return converted
    prefix = f"{owner}: " if owner else ""
    raise ValueError(f"{prefix}{name} must be {describe(constraints)}, got {value!r}{hint}")


def validate_params(estimator, names=None) -> dict:
    """Check the estimator's parameters against its ``_parameter_constraints`` (``names``: only
    those); return them converted, by name."""
    owner = type(estimator).__name__
    constraints = estimator._parameter_constraints
    return {
        name: check_param(owner, name, getattr(estimator, name), constraints[name])
        for name in (constraints if names is None else names)
    }


def resolve_seed(owner: str, random_state, *, default: int | None = None) -> int:
    """``random_state`` as a non-negative int; ``None`` is ``default``, or a fresh seed from the OS
    when ``default`` is None too."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2**63)) if default is None else int(default)
    return check_param(owner, "random_state", random_state, [None, Interval(Integral, 0, None, closed="left")])
