"""The ``omkl`` command line: the root group and its sub-commands (one module each in ``commands/``).

Every sub-command is a thin layer over the library: parse options, call one function, print.
Bad input surfaces as a one-line ``error: ...`` (exit 2) naming the problem and the fix, never a
traceback.
"""

from __future__ import annotations

import importlib
import warnings

import click

from .cli_base import CommandGroup
from .entry import imports_interruptible

#: Each sub-command: its module in ``commands/``, the click command there, and the first sentence of
#: its help (what ``omkl --help`` lists). A module is imported only when its command runs or shows
#: its own help (a Ctrl-C in its imports is an interrupt like any other, :mod:`.entry`): every command
#: imported up front brought in numpy, scikit-learn and the algorithms first, 1.9 s before
#: ``omkl --help``, ``omkl data info`` or a scheduled ``omkl schedule window`` did anything.
#: tests/test_cli_startup.py checks these lines against the commands' own help.
COMMANDS = {
    "cluster": (
        "cluster",
        "cluster",
        "Start, inspect and stop a local Dask cluster (real scheduler and worker processes).",
    ),
    "data": ("data", "data", "Ingest, inspect, list and generate datasets."),
    "fit": (
        "fit",
        "fit_cmd",
        "Train on a random split and report test accuracy, fit time and the kernels used "
        "(--mlflow: also an MLflow run).",
    ),
    "models": (
        "models",
        "models",
        "List, inspect, promote, roll back, clean up and verify the versions of a stored model.",
    ),
    "predict": (
        "predict",
        "predict_cmd",
        "Write a model's predictions (label, decision value) for every row as parquet or CSV/TSV, streamed.",
    ),
    "report": (
        "report",
        "report_cmd",
        "Draw the plots of a saved run trace (omkl run or omkl submit --trace-out), a retrain's report.json, "
        "or a store model.",
    ),
    "reproduce": ("reproduce", "reproduce", "Reproduce a paper's experiment tables."),
    "retrain": (
        "retrain",
        "retrain_cmd",
        "Continue the champion on a new window (or refit a batch model), gate it, publish it.",
    ),
    "run": ("run", "run", "Run an online algorithm test-then-train over a stream and report mistakes, SVs and speed."),
    "schedule": (
        "schedule",
        "schedule",
        "Run retraining on a schedule: a crontab line, or one scheduled window (what it runs).",
    ),
    "serve": (
        "serve",
        "serve",
        "Serve a stored (or saved) model over HTTP (POST /v1/predict, /v1/learn; GET /v1/model, /healthz, "
        "/readyz, /metrics).",
    ),
    "study": ("study", "study", "Measured studies behind the package's defaults."),
    "submit": (
        "submit",
        "submit",
        "Run an online job on a Dask cluster (kernel shards + coordinator) and write the model; "
        "`omkl submit ALGO --help` lists the algorithm's parameters.",
    ),
    "warmup": (
        "warmup",
        "warmup",
        "Compile (or load) every kernel into numba's cache, once per installation and version.",
    ),
}


class LazyCommands(CommandGroup):
    """The root group: :data:`COMMANDS`, each imported when it is called for (and any command added
    with ``add_command``, as to any click group)."""

    def list_commands(self, ctx):
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx, name):
        if name in self.commands or name not in COMMANDS:
            return super().get_command(ctx, name)
        module, attribute, _ = COMMANDS[name]
        with imports_interruptible():  # (seconds of numpy, numba, dask...: a Ctrl-C is the interrupted line)
            return getattr(importlib.import_module(f"{__package__}.commands.{module}"), attribute)

    def format_commands(self, ctx, formatter):
        """The list of commands, from their first sentences (their modules not imported)."""
        commands = {name: click.Command(name, help=summary) for name, (_, _, summary) in COMMANDS.items()}
        commands.update((name, command) for name, command in self.commands.items() if not command.hidden)
        limit = formatter.width - 6 - max(map(len, commands))
        with formatter.section("Commands"):
            formatter.write_dl([(name, commands[name].get_short_help_str(limit)) for name in sorted(commands)])


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(package_name="omkl-dist")
def main():
    """omkl-dist: online multiple kernel learning on Dask."""
    saved = warnings.formatwarning
    warnings.formatwarning = _warning_line
    click.get_current_context().call_on_close(lambda: setattr(warnings, "formatwarning", saved))


def _warning_line(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line's other lines read, ``warning: ...``: the place in the package (or
    in click) that raised it, and its source line, say nothing to someone at a shell."""
    return f"warning: {message}\n"


if __name__ == "__main__":  # (``python -m omkl_dist.pipelines.cli``: the warm-up, cron's retraining, ...)
    from .entry import collect_once_at_exit

    collect_once_at_exit()
    main()
