"""One sub-command per online algorithm for ``run`` and ``submit`` (``omkl run spa --data ...``),
whose options are exactly that estimator's parameters: their names (``--hedge-loss`` for
``hedge_loss``), ranges and choices are read from the estimator's declarative
``_parameter_constraints``, their help from its docstring, so no option means two things and a
new learner gets its options by being in the registry."""

from __future__ import annotations

import re

import click

from omkl_dist._validation.params import Interval, StrOptions, describe
from omkl_dist.algorithms.registry import ALGORITHMS
from omkl_dist.job import JOB_FIELDS

from ..cli_base import FiniteFloat, given_kernel_spec

_ENTRY = re.compile(r"^ {4}([a-z_][a-z_0-9, ]*) : (.*)$")
_CLASS_REFERENCE = re.compile(r"as in :class:`~?[\w.]*?(\w+)`")


def algorithm_group(name: str, help: str, options, callback) -> click.Group:
    """A group with one command per online algorithm: its parameters' options, then ``options``
    (decorators shared by every algorithm); ``callback(algo, params, **the other options)`` runs it."""
    group = click.Group(name, help=help)
    for algo, cls in ALGORITHMS.items():
        group.add_command(_algorithm_command(algo, cls, options, callback))
    return group


def _algorithm_command(algo: str, cls, options, callback) -> click.Command:
    names = [name for name in cls().get_params() if name not in JOB_FIELDS]

    def command(**kwargs):
        params = {name: kwargs.pop(name) for name in names}
        callback(algo, {k: v for k, v in params.items() if v is not None}, **kwargs)

    for option in reversed(options):
        command = option(command)
    docs = parameter_docs(cls)
    for name in reversed(names):
        command = _parameter_option(cls, name, docs.get(name, ""))(command)
    summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())  # the docstring's first paragraph
    return click.command(algo, help=f"{cls.__name__}: {summary}", short_help=summary.split(". ")[0])(command)


def _parameter_option(cls, name: str, doc: str):
    """The option of one estimator parameter: its type and range from the constraints, its help
    from the docstring, its default the estimator's (an absent option leaves the parameter alone)."""
    constraints = cls._parameter_constraints.get(name)
    default = cls().get_params()[name]
    flag = "--" + name.replace("_", "-")
    allowed = f"{describe(constraints)}; " if constraints else ""
    help = f"{doc} ({allowed}default {default!r})".lstrip()
    if constraints is None and isinstance(default, bool):
        return click.option(flag, name, is_flag=True, default=None, help=help)
    kind, callback = _click_type(constraints or []), None
    if name in ("kernels", "kernel"):
        callback = given_kernel_spec
    elif kind is None:
        callback = _number_or_list
    return click.option(flag, name, type=kind, default=None, callback=callback, help=help)


def _click_type(constraints):
    """The click type of the first constraint that names one (an interval, a list of choices)."""
    for c in constraints:
        if isinstance(c, Interval):
            bounds = {"min_open": c.closed in ("right", "neither"), "max_open": c.closed in ("left", "neither")}
            if c.type.__name__ == "Integral":
                return click.IntRange(c.left, c.right, **bounds)
            return FiniteFloat(c.left, c.right, **bounds)
        if isinstance(c, StrOptions):
            return click.Choice(list(c.options))
    return None


def _number_or_list(ctx, param, value):
    """A value the estimator checks itself (OKS's ``lam``: a number or "validation"; ``delta``: a
    number or a comma-separated list): numbers as floats, the rest as written."""
    if value is None:
        return None
    parts = [part.strip() for part in value.split(",")]
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        return value
    return numbers[0] if len(numbers) == 1 else numbers


def parameter_docs(cls) -> dict:
    """``{parameter: first sentence of its description}`` from the numpydoc "Parameters" section
    of ``cls``'s docstring (an entry "as in :class:`OMKC`" is looked up there)."""
    text = (cls.__doc__ or "").split("Parameters\n    ----------\n", 1)
    if len(text) < 2:
        return {}
    docs, names, lines = {}, None, []

    def close():
        if names:
            sentence = " ".join(lines).split(". ")[0].rstrip(".")
            for name in names:
                docs[name] = sentence
            reference = _CLASS_REFERENCE.search(sentence)
            if reference:
                other = {c.__name__: c for c in ALGORITHMS.values()}.get(reference[1])
                found = parameter_docs(other) if other is not None else {}
                docs.update({name: found.get(name, "") for name in names})

    for line in text[1].splitlines():
        entry = _ENTRY.match(line)
        if entry:
            close()
            names, lines = [n.strip() for n in entry[1].split(",")], []
            if entry[2].startswith("as in"):
                lines.append(entry[2])
        elif line.startswith(" " * 8) and names is not None:
            lines.append(line.strip())
        else:  # a blank line or the next section: the parameters end
            break
    close()
    return docs
