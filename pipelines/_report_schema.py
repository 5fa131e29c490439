"""The shape of the documents ``omkl report`` reads: a retrain's ``report.json`` and a run's trace.

A schema is written with a few small pieces: a type name (``"number"``, ``"integer"``,
``"text"``, ``"bool"``, ``"null"``, ``"object"``), :class:`Obj` (required and optional keys; other
keys are allowed), :class:`ListOf`, :class:`OneOf` and :class:`Const`. :func:`check` walks a
document against one and returns the first problem, naming the key path (``trace.n_seen[3]``);
:func:`check_report_document` adds what the plots need beyond types (series as long as their
x axis, a name for every kernel).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_TYPES = {
    "number": "a number",
    "integer": "an integer",
    "text": "a string",
    "bool": "true or false",
    "null": "null",
    "object": "an object",
}


@dataclass(frozen=True)
class Obj:
    """A JSON object with these required and optional keys (others are allowed and ignored)."""

    required: dict[str, Any]
    optional: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ListOf:
    """A JSON list of items of one schema, of ``length`` items when given."""

    item: Any
    length: int | None = None


@dataclass(frozen=True)
class OneOf:
    """Any of these schemas."""

    options: tuple


@dataclass(frozen=True)
class Const:
    """One of these exact values."""

    values: tuple


def _is(value: Any, name: str) -> bool:
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "text":
        return isinstance(value, str)
    if name == "bool":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    return isinstance(value, dict)


def _kind_of(value: Any) -> str:
    for name in ("bool", "integer", "number", "text", "null", "object"):
        if _is(value, name):
            return _TYPES[name]
    return "a list" if isinstance(value, list) else type(value).__name__


def _expected(schema: Any) -> str:
    if isinstance(schema, str):
        return _TYPES[schema]
    if isinstance(schema, Obj):
        return "an object"
    if isinstance(schema, ListOf):
        return "a list" if schema.length is None else f"a list of {schema.length}"
    if isinstance(schema, Const):
        return " or ".join(repr(v) for v in schema.values)
    return " or ".join(_expected(o) for o in schema.options)


def _resemblance(value: Any, schema: Any) -> int:
    """How many of an object schema's required keys ``value`` has (-1: not even the type)."""
    if isinstance(schema, Obj):
        return sum(key in value for key in schema.required) if isinstance(value, dict) else -1
    if isinstance(schema, str):
        return 0 if _is(value, schema) else -1
    return 0 if isinstance(value, list) == isinstance(schema, ListOf) else -1


def check(value: Any, schema: Any, where: str) -> str | None:
    """The first way ``value`` (found at key path ``where``) differs from ``schema``; None if none."""
    if isinstance(schema, OneOf):
        problems = [check(value, option, where) for option in schema.options]
        if all(problems):  # the option the value resembles most says most
            return problems[max(range(len(problems)), key=lambda i: _resemblance(value, schema.options[i]))]
        return None
    if isinstance(schema, Const):
        return None if value in schema.values else f"key {where} is {value!r}, expected {_expected(schema)}"
    if isinstance(schema, str):
        return None if _is(value, schema) else f"key {where} is {_kind_of(value)}, expected {_expected(schema)}"
    if isinstance(schema, ListOf):
        if not isinstance(value, list) or (schema.length is not None and len(value) != schema.length):
            found = f"a list of {len(value)}" if isinstance(value, list) else _kind_of(value)
            return f"key {where} is {found}, expected {_expected(schema)}"
        return next(
            (p for i, item in enumerate(value) if (p := check(item, schema.item, f"{where}[{i}]")) is not None), None
        )
    if not isinstance(value, dict):
        return f"key {where} is {_kind_of(value)}, expected an object"
    for key, sub in schema.required.items():
        if key not in value:
            return f"key {where}.{key} is missing"
    for key, sub in {**schema.required, **schema.optional}.items():
        if key in value and (problem := check(value[key], sub, f"{where}.{key}")) is not None:
            return problem
    return None


_SERIES = ListOf("number")
_NUMBER_OR_NULL = OneOf(("number", "null"))
_MODEL = {  # the model read at rows of the stream (a budget learner's none), the speed at block (round) ends
    "sampled_at": ListOf("integer"),
    "n_support": ListOf(ListOf("number")),
    "weights": ListOf(ListOf("number")),
    "block_ends": ListOf("integer"),
    "instances_per_second": _SERIES,
    "seconds": _SERIES,  # learning seconds at each block end
    "timed_from": "integer",  # the rows before the first timed block (a cluster run resumed: its checkpoint's)
}
_TRACE = Obj({"kernel_names": ListOf("text")}, _MODEL)
#: a trace of ``omkl run`` or ``omkl submit`` (``--trace-out``): ``{"report": {...}, "trace": {...}}``, the mistake
#: curve and the model's series
RUN_TRACE = Obj(
    {"trace": Obj({"kernel_names": ListOf("text"), "n_seen": ListOf("integer"), "mistake_rate": _SERIES}, _MODEL)},
    {"report": "object"},
)
_CURVE = Obj({"rows": _SERIES, "rate": _SERIES, "label": "text"})
#: a report document (a retrain's ``report.json``, or a run's redrawn by ``omkl report``)
REPORT_DOCUMENT = Obj(
    {
        "kind": Const(("retrain", "run")),
        "summary": Obj(
            {}, {"gate": OneOf(("null", Obj({}, {"challenger": _NUMBER_OR_NULL, "champion": _NUMBER_OR_NULL})))}
        ),
        "window": ListOf("integer", 2),
        "split": OneOf(("integer", "null")),
        "alarms": _SERIES,
        "curves": Obj({}, {"champion": _CURVE, "challenger": _CURVE, "run": _CURVE}),
        "history": ListOf(
            OneOf(
                (
                    Obj(
                        {
                            "version": "integer",
                            "challenger": _NUMBER_OR_NULL,
                            "champion": _NUMBER_OR_NULL,
                            "promoted": "bool",
                        }
                    ),
                    Obj({"rollback_to": "integer"}),
                )
            )
        ),
    },
    {
        "algo": OneOf(("text", "null")),
        "trace": _TRACE,
        "n_before": "integer",
        "budget": OneOf(("null", Obj({"slope": "number", "label": "text"}), Obj({"cap": "integer", "label": "text"}))),
    },
)


def _check_lengths(trace: dict, where: str, *, mistakes: bool) -> str | None:
    """Every series of a trace is as long as its x axis: the speed as ``block_ends``, the model's
    series as ``sampled_at`` (they may be absent or empty), a run trace's mistake curve
    (``mistakes``) as ``n_seen``; a report document keeps its mistake curves in ``curves``.
    Kernels all have names."""
    axes = {
        "instances_per_second": "block_ends",
        "seconds": "block_ends",
        "n_support": "sampled_at",
        "weights": "sampled_at",
    }
    if mistakes:
        axes["mistake_rate"] = "n_seen"
    for key, x in axes.items():
        series, n = trace.get(key) or [], len(trace.get(x) or [])
        if (series or key == "mistake_rate") and len(series) != n:
            return f"key {where}.{key} has {len(series)} entries but {where}.{x} has {n}; they go together"
    names = len(trace["kernel_names"])
    for key in ("n_support", "weights"):
        widths = {len(row) for row in trace.get(key) or []}
        if len(widths) > 1 or (widths and not 0 < widths.pop() <= names):
            return f"key {where}.{key} needs one value per kernel of {where}.kernel_names ({names}) at every entry"
    return None


def check_report_document(document: Any) -> str | None:
    """What is wrong with ``document`` as a report document or a run trace; None when nothing is."""
    if isinstance(document, dict) and "kind" in document:
        problem = check(document, REPORT_DOCUMENT, "document")
        if problem is None and "trace" in document:
            problem = _check_lengths(document["trace"], "document.trace", mistakes=False)
        for name, curve in (document.get("curves") or {}).items() if problem is None else ():
            if len(curve["rows"]) != len(curve["rate"]):
                problem = f"key document.curves.{name}: rows and rate differ in length"
        return None if problem is None else f"not a report document: {problem}"
    if isinstance(document, dict) and "trace" in document:
        problem = check(document, RUN_TRACE, "document") or _check_lengths(
            document["trace"], "document.trace", mistakes=True
        )
        return None if problem is None else f"not a run trace: {problem}"
    return "not a report: neither a retrain's report.json (key document.kind) nor a run trace (key document.trace)"
