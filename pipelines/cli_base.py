"""What every ``omkl`` command shares: bad input as one line and a documented exit status."""

from __future__ import annotations

import math
import os
import select
import signal
import sys
import unicodedata
from pathlib import Path

import click

from omkl_dist.defaults import BLOCK_SIZE, RACE_ROWS, SCALE_ROWS, SEED

from .data_source import named
from .entry import INTERRUPTED

EXIT_BAD_INPUT, EXIT_BUSY, EXIT_INTERRUPTED = 2, 75, 130  # 75: EX_TEMPFAIL, "try again later"


class PathOrURL(click.ParamType):
    """A local path (a :class:`~pathlib.Path`) or an fsspec URL kept as its string: click's own
    ``Path`` type made ``s3://bucket/m`` the local path ``s3:/bucket/m`` (a model not found, a
    predictions file written into a folder named ``s3:``)."""

    name = "path"

    def convert(self, value, param, ctx):
        from omkl_dist.storage.location import is_url

        return value if is_url(value) or not isinstance(value, str) else Path(value)


PATH_OR_URL = PathOrURL()


class LocalPath(click.Path):
    """A path on this machine (a :class:`~pathlib.Path`); a URL is refused, saying ``why``: click's
    own ``Path`` type made ``s3://bucket/store`` the local path ``s3:/bucket/store``, so a model
    store, a write-ahead log or a report went into a folder named ``s3:`` and the command said it
    was done."""

    def __init__(self, why: str = "this option takes a file or folder on this machine", **kwargs):
        super().__init__(path_type=Path, **kwargs)
        self.why = why

    def convert(self, value, param, ctx):
        from omkl_dist.storage.location import is_url

        if isinstance(value, str) and is_url(value):
            self.fail(f"{value} is a URL; {self.why}", param, ctx)
        return super().convert(value, param, ctx)


LOCAL_PATH = LocalPath()
STORE_PATH = LocalPath(
    "a model store is a folder on this machine or a mounted network filesystem: it locks and renames its "
    "files, which object storage cannot. A saved model (--model-out) may be at a URL; `omkl models import "
    "--store DIR NAME URL` publishes it into a store"
)

# how a data file's columns are read (ingest, run, fit, predict, and submit/retrain of a file)
LABEL_COLUMN_OPTION = click.option(
    "--label-column",
    default=None,
    help="The label column -- first, last, a 0-based index or a column name. Default, for CSV/TSV/text and "
    "parquet alike: the first column named target, label, class or y (any case), else the first column.",
)
FEATURES_OPTION = click.option(
    "--features",
    default=None,
    help="CSV/TSV with a header, parquet: comma-separated feature columns (default: every column but the label); "
    "the others are not read. Or the columns to leave out, each with a minus: --features -customer_id,-region "
    "(every other column but the label is a feature).",
)
CATEGORICAL_OPTION = click.option(
    "--categorical",
    type=click.Choice(["one-hot", "ordinal", "none"]),
    default=None,
    help="CSV/TSV with a header, parquet: encode text feature columns -- one-hot (a 0/1 column per category; one "
    "not seen in training: all zeros) or ordinal (the category's sorted index; not seen: -1). Default: a text "
    "column is an error naming it. The model keeps the encoding for raw rows.",
)
IMPUTE_OPTION = click.option(
    "--impute",
    type=click.Choice(["mean", "median", "most_frequent", "none"]),
    default=None,
    help="CSV/TSV with a header, parquet: fill missing feature values (empty, NA, null) with the column's mean, "
    "median or most frequent value over the file (a text column: its most frequent category). Default: a missing "
    "value is an error naming its column. The model keeps the fill values for raw rows.",
)
ZERO_BASED_OPTION = click.option(
    "--zero-based",
    is_flag=True,
    help="LIBSVM: feature indices start at 0 (as scikit-learn's dump_svmlight_file writes them); default: at 1.",
)


def reading_options(
    label_column=None, positive_class=None, features=None, categorical=None, impute=None, zero_based=False
):
    """How a command reads a data file's columns (the keywords of ``read_dataset`` and ``ingest``);
    None: not given, as ``--categorical none``, ``--impute none`` (an ingested dataset refuses given
    ones: it took them at ingest)."""
    return {
        "label_column": label_column,
        "positive_class": positive_class,
        "features": features,
        "categorical": None if categorical == "none" else categorical,
        "impute": None if impute == "none" else impute,
        "zero_based": zero_based or None,
    }


# the online jobs' block size and seed (run, submit, retrain): one default for every command and the API
BLOCK_SIZE_OPTION = click.option(
    "--block-size",
    default=BLOCK_SIZE,
    type=click.IntRange(min=1),
    help="Rows per block: the online learners score a block against the support vectors at once and "
    "then learn row by row; the model depends on it (the same seed and block size give the same bits).",
)
SEED_OPTION = click.option(
    "--seed",
    default=SEED,
    type=click.IntRange(min=0),
    help="The job's seed: its estimator's random_state and the order of the rows where they are shuffled.",
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
            type=click.Choice(["auto", "none", "minmax", "standard"]),
            default=None,
            help=f"Feature scaling fitted on the stream's first {SCALE_ROWS:,} rows. Default: standard "
            "(docs/defaults.md), none where every feature value of those rows is 0 or 1, and with "
            "--paper-settings. auto: each scaling, with normalised and raw kernels, "
            f"learns the stream's first {RACE_ROWS:,} rows and the one with the fewest mistakes is used.",
        ),
        click.option(
            "--normalize-kernels/--raw-kernels",
            "normalize_kernels",
            default=None,
            help="Normalise every kernel, k(x,z)/sqrt(k(x,x)k(z,z)), or not. Default: normalised for the default "
            "pool (with --scaling auto: raced too); a --kernels pool as written (+norm suffixes).",
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


class FiniteFloat(click.FloatRange):
    """A number option that must be finite: click's ``float`` and ``FloatRange`` let ``nan`` and
    ``inf`` through (nan fails no comparison), and a nan timeout or tolerance silently never fires."""

    name = "finite float"

    def _describe_range(self) -> str:
        """The help's range, e.g. ``0<x<1``; nothing for an unbounded number (click would print ``x<=None``)."""
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


POSITIVE_CLASS_OPTION = click.option(
    "--positive-class", default=None, help="Binary data: the original label that becomes +1 (default: the larger one)."
)

SCHEDULER_TIMEOUT_OPTION = click.option(
    "--timeout",
    default=10.0,
    show_default=True,
    type=FiniteFloat(min=0, min_open=True),
    help="Seconds to wait for the scheduler.",
)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def one_line(message: object) -> str:
    """``message`` as one line of text: control characters, line and paragraph separators and bidi
    overrides -- which a file name, a header or an option value may carry -- are shown escaped
    (a newline as ``\\n``), so an error is always exactly one line that no input can forge more of.
    Backslashes are kept as they are, so escaping twice changes nothing."""
    return "".join(_escaped(char) for char in named(str(message)))


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    if unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in _BIDI_CONTROLS:
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    return char


def _in_one_line(exc: click.ClickException) -> None:
    """Make a click error's message :func:`one_line` -- but the help a group without its command
    shows (click >= 8.2 raises it as a usage error): our own text, in its lines (it was one line of
    ``\\n``)."""
    if not isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        exc.message = one_line(exc.message)


class CommandGroup(click.Group):
    """Turn known bad-input errors into a one-line message and exit status 2 (75 when an output is
    being written by another process, 130 on Ctrl-C). Every message is printed through
    :func:`one_line`, click's own usage errors included."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.ClickException as exc:  # this group's own options: click prints it, in one line
            _in_one_line(exc)
            raise
        except KeyboardInterrupt:  # in the parsing or an eager option (--version reads the installation)
            click.echo(INTERRUPTED, err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:  # --help, --version (a RuntimeError subclass)
            raise
        except click.ClickException as exc:  # a sub-command's usage error: click prints it, in one line
            _in_one_line(exc)
            raise
        except KeyboardInterrupt:
            click.echo(INTERRUPTED, err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError as exc:
            if not _stdout_reader_gone():  # another pipe (a socket, a subprocess): an error like any
                click.echo(f"error: {one_line(exc)}", err=True)
                ctx.exit(EXIT_BAD_INPUT)
            # `omkl ... | head`: the reader left. End like a Unix tool killed by SIGPIPE, quietly;
            # stdout goes to /dev/null so that Python's own flush at exit does not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(128 + signal.SIGPIPE)
        except MemoryError:
            click.echo("error: out of memory; use a smaller input, budget or block size", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except Exception as exc:
            # (imported here, not on import: `omkl --help` then does not load the storage layer)
            from omkl_dist.storage.outputs import OutputBusy

            if isinstance(exc, OutputBusy):
                click.echo(f"busy: {one_line(exc)}", err=True)
                ctx.exit(EXIT_BUSY)
            # a DataError is a ValueError; OSError covers FileExistsError, FileNotFoundError,
            # PermissionError, a full disk
            if isinstance(exc, (ValueError, OverflowError, OSError, ConnectionError, TimeoutError, RuntimeError)):
                click.echo(f"error: {one_line(exc)}", err=True)
                ctx.exit(EXIT_BAD_INPUT)
            if not type(exc).__module__.startswith(_OBJECT_STORE_CLIENTS):
                raise
            click.echo(
                f"error: object storage: {one_line(exc)}. Fix: give the credentials and endpoint the way its "
                "filesystem reads them (S3: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, or ~/.aws)",
                err=True,
            )
            ctx.exit(EXIT_BAD_INPUT)


# the packages object storage's errors come from (a URL's credentials, endpoint or bucket)
_OBJECT_STORE_CLIENTS = ("botocore", "aiobotocore", "s3fs", "gcsfs", "google.auth", "adlfs", "azure")


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reading end was closed (poll reports POLLERR)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's buffer)
        return False
    poller = select.poll()
    poller.register(fd, 0)
    return any(events & select.POLLERR for _, events in poller.poll(0))
