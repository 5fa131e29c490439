"""Read back a JSON file the tool wrote (``meta.json``, ``model.json``, ...) and check its shape.

A file read back from disk may have been edited by hand, damaged, or replaced by something else
entirely, with its recorded hash recomputed. Before any of it is used -- as a size, an index that
reaches compiled code, a key to look up -- it goes through :func:`read_json`, which refuses what
is not a small UTF-8 JSON document (a device, a FIFO, a file over :data:`MAX_JSON_BYTES`, nesting
deeper than :data:`MAX_JSON_DEPTH`), and :func:`check`, which compares it with a :class:`Schema`:
JSON types (a bool is not an int), required keys, ranges, lengths and choices. Every refusal is
one :class:`~omkl_dist.storage.DataError` naming the file, the key path (``checksums.features[3]``)
and the fix.

>>> from omkl_dist.storage.schema import check, integer, obj
>>> check({"n_rows": 5}, obj({"n_rows": integer(minimum=0)}), path="meta.json", fix="re-ingest it")
>>> check({"n_rows": True}, obj({"n_rows": integer(minimum=0)}), path="meta.json", fix="re-ingest it")
Traceback (most recent call last):
...
omkl_dist.storage.errors.DataError: meta.json: n_rows is true (a boolean), expected an integer >= 0. Fix: re-ingest it
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import DataError
from .location import PathArg, is_remote, location

MAX_JSON_BYTES = 256 * 2**20  # a dataset of a million chunks has a meta.json of ~300 MB: refuse before that
MAX_JSON_DEPTH = 64  # the tool writes at most 4 levels; deeper is damage, and would exhaust the recursion limit
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


@dataclass(frozen=True)
class Schema:
    """What one JSON value must be; build it with :func:`integer`, :func:`string`, :func:`obj`, ...

    Attributes
    ----------
    kind : str
        ``"integer"``, ``"number"``, ``"string"``, ``"boolean"``, ``"scalar"`` (any of those
        three), ``"array"``, ``"object"`` or ``"any"``.
    minimum, maximum : int or float, optional
        Numbers: the allowed range (inclusive).
    choices : tuple, optional
        The allowed values.
    min_items, max_items : int, optional
        Arrays (and strings: their length): the allowed length.
    items : Schema, optional
        Arrays: the schema of every item.
    positional : tuple of Schema, optional
        Arrays: the schema of each item in order (the array has exactly that many).
    required, optional : mapping of str to Schema
        Objects: the keys that must be present and the keys that may be, with their schemas.
    values : Schema, optional
        Objects: the schema of every other key's value (None: anything).
    """

    kind: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    min_items: int = 0
    max_items: int | None = None
    items: Schema | None = None
    positional: tuple[Schema, ...] | None = None
    required: Mapping[str, Schema] = field(default_factory=dict)
    optional: Mapping[str, Schema] = field(default_factory=dict)
    values: Schema | None = None


ANY = Schema("any")


def integer(minimum: int | None = None, maximum: int | None = None) -> Schema:
    """A JSON integer (not a bool, not ``1.0``) in ``[minimum, maximum]``."""
    return Schema("integer", minimum=minimum, maximum=maximum)


def number(minimum: float | None = None, maximum: float | None = None) -> Schema:
    """A finite JSON number (integer or float, not a bool) in ``[minimum, maximum]``."""
    return Schema("number", minimum=minimum, maximum=maximum)


def string(choices: tuple[str, ...] | None = None, min_length: int = 0, max_length: int | None = None) -> Schema:
    """A JSON string, one of ``choices`` when given, of ``min_length`` to ``max_length`` characters."""
    return Schema("string", choices=choices, min_items=min_length, max_items=max_length)


def scalar() -> Schema:
    """A JSON string, finite number or boolean (not an array, object or null): a label, say."""
    return Schema("scalar")


def boolean() -> Schema:
    """``true`` or ``false``."""
    return Schema("boolean")


def array(items: Schema = ANY, min_items: int = 0, max_items: int | None = None) -> Schema:
    """A JSON array of ``min_items`` to ``max_items`` items, each matching ``items``."""
    return Schema("array", items=items, min_items=min_items, max_items=max_items)


def tuple_of(*positional: Schema) -> Schema:
    """A JSON array of exactly ``len(positional)`` items, the i-th matching ``positional[i]``."""
    return Schema("array", positional=positional, min_items=len(positional), max_items=len(positional))


def obj(
    required: Mapping[str, Schema] | None = None,
    optional: Mapping[str, Schema] | None = None,
    values: Schema | None = None,
) -> Schema:
    """A JSON object with the ``required`` keys, maybe the ``optional`` ones, and any others
    matching ``values`` (anything when None)."""
    return Schema("object", required=required or {}, optional=optional or {}, values=values)


def check(document: Any, schema: Schema, *, path: PathArg, fix: str, key: str = "") -> None:
    """Check a loaded JSON ``document`` against ``schema``.

    Parameters
    ----------
    document : object
        The value ``json.loads`` returned.
    schema : Schema
        What it must be.
    path : str or Path
        The file it was read from (named in the error).
    fix : str
        What the user should do about a mismatch (e.g. "re-ingest the dataset").
    key : str, optional
        The key path of ``document`` inside the file (for nested checks).

    Raises
    ------
    DataError
        The first mismatch, naming the file, the key path, what was found and what was expected.
    """
    problem = _mismatch(document, schema)
    if problem is not None:
        raise DataError(f"{key or 'the document'} is {_show(document)}, expected {problem}", path=path, fix=fix)
    if schema.kind == "object":
        missing = next((name for name in schema.required if name not in document), None)
        if missing is not None:
            raise DataError(f"{_join(key, missing)} is missing", path=path, fix=fix)
    for child_key, child, child_schema in _children(document, schema, key):
        check(child, child_schema, path=path, fix=fix, key=child_key)


def read_json(path: PathArg, *, fix: str, schema: Schema | None = None, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Read the JSON file ``path`` (bounded, strictly UTF-8) and check it against ``schema``.

    Parameters
    ----------
    path : str, Path or location
        The file (local, or an fsspec URL).
    fix : str
        What the user should do when the file is refused (named in the error).
    schema : Schema, optional
        What the document must be (see :func:`check`).
    max_bytes : int, default MAX_JSON_BYTES
        Larger files are refused without being read.

    Returns
    -------
    object
        The document.

    Raises
    ------
    DataError
        The file is not a regular file, too large, not UTF-8 (naming the byte offset and line), not
        JSON (naming the line and column), nested deeper than :data:`MAX_JSON_DEPTH`, or not what
        ``schema`` describes.
    """
    path = location(path)
    raw = _read_bounded(path, max_bytes, fix)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"byte {exc.start} (line {line}) is {raw[exc.start : exc.start + 1]!r}, not UTF-8 text: this is not "
            "the JSON file the tool wrote",
            path=path,
            fix=fix,
        ) from None
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON ({exc})", path=path, fix=fix) from None
    except (RecursionError, ValueError) as exc:  # ValueError: NaN/Infinity, or an integer of over 4300 digits
        problem = (
            f"arrays or objects nested deeper than {MAX_JSON_DEPTH} levels" if isinstance(exc, RecursionError) else exc
        )
        raise DataError(f"not valid JSON ({problem})", path=path, fix=fix) from None
    if _depth(document) > MAX_JSON_DEPTH:
        raise DataError(
            f"not valid JSON (arrays or objects nested deeper than {MAX_JSON_DEPTH} levels)", path=path, fix=fix
        )
    if schema is not None:
        check(document, schema, path=path, fix=fix)
    return document


def _read_bounded(path: Any, max_bytes: int, fix: str) -> bytes:
    """The file's bytes, refusing a special file (a device or FIFO never ends) or one over ``max_bytes``."""
    if not is_remote(path):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise DataError("no such file", path=path, fix=fix) from None
        if not stat.S_ISREG(mode):
            raise DataError(f"is {special_file_kind(mode)}, not a regular file", path=path, fix=fix)
    with path.open("rb") as fh:
        raw = read_at_most(fh, max_bytes + 1)
    if len(raw) > max_bytes:
        raise DataError(
            f"larger than {max_bytes:,} bytes, the most a JSON file of the tool may hold", path=path, fix=fix
        )
    return bytes(raw)


def read_at_most(fh: Any, limit: int, chunk: int = 16 * 2**20) -> bytes:
    """Up to ``limit`` bytes of ``fh``, read in chunks: ``fh.read(limit)`` of a buffered file
    allocates all ``limit`` bytes before it reads one, so a bound meant as a safety margin (256 MB,
    half the memory) would be allocated for every small file (and fail under an address-space limit)."""
    parts, size = [], 0
    while size < limit:
        part = fh.read(min(chunk, limit - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def special_file_kind(mode: int) -> str:
    """What a non-regular file is, for messages: "a directory", "a named pipe (FIFO)", ..."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _depth(document: Any) -> int:
    """The nesting depth of a loaded document (iteratively: a deep one must not exhaust the stack)."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_JSON_DEPTH:
                stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite_number(value: Any) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _mismatch(value: Any, schema: Schema) -> str | None:
    """What ``value`` should have been, or None when it matches ``schema`` (its own level only)."""
    expected = _describe(schema)
    if schema.kind == "any":
        return None
    if schema.kind == "integer" and not _is_int(value):
        return expected
    if schema.kind == "number" and not _is_finite_number(value):
        return expected
    if schema.kind == "scalar" and not (isinstance(value, (str, bool)) or _is_finite_number(value)):
        return expected
    if schema.kind in ("string", "boolean", "array", "object"):
        python_type = {"string": str, "boolean": bool, "array": list, "object": dict}[schema.kind]
        if not isinstance(value, python_type):
            return expected
    if schema.kind in ("integer", "number") and not _in_range(value, schema):
        return expected
    if schema.choices is not None and value not in schema.choices:
        return expected
    if schema.kind in ("string", "array") and not _length_ok(len(value), schema):
        return expected
    return None


def _in_range(value: float, schema: Schema) -> bool:
    return (schema.minimum is None or value >= schema.minimum) and (schema.maximum is None or value <= schema.maximum)


def _length_ok(length: int, schema: Schema) -> bool:
    return length >= schema.min_items and (schema.max_items is None or length <= schema.max_items)


def _children(document: Any, schema: Schema, key: str) -> list[tuple[str, Any, Schema]]:
    """``(key path, value, schema)`` of each part of ``document`` that ``schema`` describes."""
    if schema.kind == "array":
        if schema.positional is not None:
            return [(f"{key}[{i}]", v, s) for i, (v, s) in enumerate(zip(document, schema.positional))]
        if schema.items is not None and schema.items.kind != "any":
            return [(f"{key}[{i}]", v, schema.items) for i, v in enumerate(document)]
        return []
    if schema.kind == "object":
        out = []
        for name, value in document.items():
            child = schema.required.get(name) or schema.optional.get(name) or schema.values
            if child is not None and child.kind != "any":
                out.append((_join(key, name), value, child))
        return out
    return []


def _join(key: str, name: str) -> str:
    """The key path of ``name`` inside ``key``: ``checksums.features``, or ``class_counts["a b"]``
    for a name that is not a plain word (its control characters escaped: the message stays one line)."""
    if not _PLAIN_KEY.fullmatch(name):
        return f"{key}[{json.dumps(name)}]"
    return f"{key}.{name}" if key else name


def _describe(schema: Schema) -> str:
    """``schema`` in words: "an integer >= 1", "one of 'dense', 'csr'", "an array of 2 items"."""
    if schema.choices is not None:
        return "one of " + ", ".join(json.dumps(c) for c in schema.choices)
    words = {"integer": "an integer", "number": "a finite number", "string": "a string", "boolean": "true or false"}
    words.update({"array": "an array", "object": "an object", "any": "any value", "scalar": "a string or number"})
    text = words[schema.kind]
    if schema.minimum is not None and schema.maximum is not None:
        text += f" from {schema.minimum:,} to {schema.maximum:,}"
    elif schema.minimum is not None:
        text += f" >= {schema.minimum:,}"
    elif schema.maximum is not None:
        text += f" <= {schema.maximum:,}"
    if schema.kind in ("string", "array") and (schema.min_items or schema.max_items is not None):
        unit = "characters" if schema.kind == "string" else "items"
        if schema.min_items == schema.max_items:
            text += f" of {schema.min_items} {unit}"
        elif schema.max_items is None:
            text += f" of at least {schema.min_items} {unit}"
        else:
            text += f" of {schema.min_items} to {schema.max_items} {unit}"
    return text


def _show(value: Any) -> str:
    """A found value for a message: short JSON and its type, e.g. ``"10" (a string)``."""
    try:
        shown = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        shown = "?"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    kind = (
        "a number"
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else _JSON_NAMES.get(type(value), "a value")
    )
    return f"{shown} ({kind})"
