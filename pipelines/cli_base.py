"""What every ``omkl`` command shares: bad input as one line and a documented exit status."""

from __future__ import annotations

import click

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.outputs import OutputBusy

EXIT_BAD_INPUT, EXIT_BUSY, EXIT_INTERRUPTED = 2, 75, 130  # 75: EX_TEMPFAIL, "try again later"

# how a data file's columns are read (ingest, run, fit, and submit/retrain of a file)
LABEL_COLUMN_OPTION = click.option(
    "--label-column",
    default=None,
    help="CSV/TSV/text: the label column -- first, last, a 0-based index or a header "
    "name (default: a header column named target, else the first).",
)
FEATURES_OPTION = click.option(
    "--features", default=None, help="Parquet: comma-separated feature columns (default: every column but the label)."
)


def given_kernel_spec(ctx, param, value):
    """A ``--kernels``/``--kernel`` value: absent means the algorithm's default, so a given but empty
    one (``--kernels ''``, as a script's unset variable gives) is an error, not the default."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "is empty; leave the option out for the default pool, or give one such as 'omkc16' or 'gaussian:0.5,1'"
        )
    return value


def settings_options(command):
    """``--scaling``, ``--normalize-kernels/--raw-kernels`` and ``--paper-settings``: what a job
    does with its features and kernels when not told is the study's choice (docs/defaults.md)."""
    options = [
        click.option(
            "--scaling",
            type=click.Choice(["none", "minmax", "standard"]),
            default=None,
            help="Feature scaling fitted on the stream's first rows (--scale-rows). Default: the study's "
            "choice (docs/defaults.md); none with --paper-settings.",
        ),
        click.option(
            "--normalize-kernels/--raw-kernels",
            "normalize_kernels",
            default=None,
            help="Normalise every kernel, k(x,z)/sqrt(k(x,x)k(z,z)), or not. Default: the study's choice for "
            "the default pool (docs/defaults.md); a --kernels pool as written (+norm suffixes).",
        ),
        click.option(
            "--paper-settings",
            is_flag=True,
            help="The papers' settings: raw features and unnormalised kernels (what omkl reproduce uses).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def job_settings(kwargs: dict, *, kernels_given: bool, scale_rows=None):
    """The :class:`omkl_dist.defaults.Settings` of a command's options (taken out of ``kwargs``)."""
    from omkl_dist.defaults import resolve_settings

    return resolve_settings(
        scaling=kwargs.pop("scaling"),
        normalize_kernels=kwargs.pop("normalize_kernels"),
        paper=kwargs.pop("paper_settings"),
        scale_rows=scale_rows,
        kernels_given=kernels_given,
    )


POSITIVE_CLASS_OPTION = click.option(
    "--positive-class", default=None, help="Binary data: the original label that becomes +1 (default: the larger one)."
)


class CommandGroup(click.Group):
    """Turn known bad-input errors into a one-line message and exit status 2 (75 when an output is
    being written by another process, 130 on Ctrl-C)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:  # --help, --version (a RuntimeError subclass)
            raise
        except OutputBusy as exc:
            click.echo(f"busy: {exc}", err=True)
            ctx.exit(EXIT_BUSY)
        except KeyboardInterrupt:
            click.echo("interrupted: nothing half-written was kept", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except MemoryError:
            click.echo("error: out of memory; use a smaller input, budget or block size", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except (DataError, ValueError, OverflowError, OSError, ConnectionError, TimeoutError, RuntimeError) as exc:
            # OSError covers FileExistsError, FileNotFoundError, PermissionError, a full disk
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
