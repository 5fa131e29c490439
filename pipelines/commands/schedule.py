"""``omkl schedule``: retraining on a schedule (a crontab line, one window)."""

from __future__ import annotations

import json
import os

import click

from ..cli_base import (
    LOCAL_PATH,
    CommandGroup,
)
from .store_options import STORE_OPTION


@click.group("schedule", cls=CommandGroup)
def schedule():
    """Run retraining on a schedule: a crontab line, or one scheduled window (what it runs)."""


@schedule.command("cron")
@STORE_OPTION
@click.option("--model", "name", required=True)
@click.option(
    "--source",
    required=True,
    help="Where each day's window arrives, with {date} for the day (YYYY-MM-DD): a data file or an "
    "ingested dataset, e.g. /data/incoming/{date}.csv.",
)
@click.option(
    "--work",
    required=True,
    type=LOCAL_PATH,
    help="Folder for the lock and the logs (runs.jsonl, runs.err).",
)
@click.option("--at", "at", default="30 2 * * *", show_default=True, help="The cron schedule (5 fields).")
@click.option(
    "--days-back",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="The window is the day this many days before the run (1: yesterday's data).",
)
@click.option(
    "--retrain-args",
    default="",
    help="Further retrain options, e.g. '--gate 0.005 --when drift'; a file's reading options too "
    "('--label-column outcome --categorical one-hot').",
)
def schedule_cron(store, name, source, work, at, days_back, retrain_args):
    """Print a crontab line: flock against overlaps, one JSON line per run appended to WORK/runs.jsonl."""
    from ..schedule import cron_line

    click.echo(
        cron_line(
            store=store,
            name=name,
            source=source,
            work=work,
            at=at,
            days_back=days_back,
            retrain_args=retrain_args,
            omkl=os.environ.get("OMKL_BIN"),
        )
    )


# (--work: where these commands ingested a file before a retrain ingested it into the store itself;
# accepted and unused, so crontab lines and DAG copies written for them go on running)
_OLD_WORK = click.option("--work", hidden=True, default=None, type=LOCAL_PATH, help="Unused (older crontab lines).")


@schedule.command("arrived")
@click.option("--source", required=True, help="The window's file or ingested dataset; {date} is replaced by --date.")
@click.option("--date", "day", required=True, help="The window's day, YYYY-MM-DD (the scheduler's logical date).")
@_OLD_WORK
def schedule_arrived(source, day, work):
    """Check that one day's window has arrived; the last line printed is its path (omkl retrain's --data,
    which ingests a file into the store once, with the retrain's reading options)."""
    from ..schedule import day_window

    click.echo(day_window(source, day))


# the DAG's first task before it was `arrived` (a copy of the older DAG file calls it)
schedule.add_command(
    click.Command(
        "ingest",
        callback=schedule_arrived.callback,
        params=schedule_arrived.params,
        help=schedule_arrived.help,
        hidden=True,
    )
)


@schedule.command("window")
@STORE_OPTION
@click.option("--model", "name", required=True)
@click.option("--source", required=True, help="The window's file or ingested dataset; {date} is replaced by --date.")
@click.option("--date", "day", required=True, help="The window's day, YYYY-MM-DD (the scheduler's logical date).")
@click.option("--retrain-args", default="", help="Further retrain options (a file's reading options too).")
@_OLD_WORK
def schedule_window(store, name, source, day, retrain_args, work):
    """Retrain on one day's window (a file is ingested into the store once); prints one JSON line."""
    from ..schedule import run_window

    summary, code = run_window(store=store, name=name, source=source, day=day, retrain_args=retrain_args)
    click.echo(json.dumps(summary, default=str))
    if code:
        raise SystemExit(code)
