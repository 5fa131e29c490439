"""The ``omkl`` command line: the root group and its sub-commands (one module each in ``commands/``).

Every sub-command is a thin layer over the library: parse options, call one function, print.
Bad input surfaces as a one-line ``error: ...`` (exit 2) naming the problem and the fix, never a
traceback.
"""

from __future__ import annotations

import warnings

import click

from .cli_base import CommandGroup
from .commands import (
    cluster,
    data,
    fit,
    models,
    predict,
    report,
    reproduce,
    retrain,
    run,
    schedule,
    serve,
    study,
    submit,
    warmup,
)


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
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


for _command in (
    data.data,
    run.run,
    cluster.cluster,
    submit.submit,
    fit.fit_cmd,
    reproduce.reproduce,
    study.study,
    models.models,
    retrain.retrain_cmd,
    predict.predict_cmd,
    serve.serve,
    report.report_cmd,
    schedule.schedule,
    warmup.warmup,
):
    main.add_command(_command)

if __name__ == "__main__":
    main()
