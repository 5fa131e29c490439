"""``omkl schedule``: retraining on a schedule (a crontab line, one window)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..cli_base import (
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
    type=click.Path(path_type=Path),
    help="Folder for the ingested windows, the lock and the logs.",
)
@click.option("--at", "at", default="30 2 * * *", show_default=True, help="The cron schedule (5 fields).")
@click.option(
    "--days-back",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="The window is the day this many days before the run (1: yesterday's data).",
)
@click.option("--retrain-args", default="", help="Further retrain options, e.g. '--gate 0.005 --when drift'.")
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


@schedule.command("ingest")
@click.option("--source", required=True, help="The window's file or ingested dataset; {date} is replaced by --date.")
@click.option("--work", required=True, type=click.Path(path_type=Path), help="Folder for the ingested windows.")
@click.option("--date", "day", required=True, help="The window's day, YYYY-MM-DD (the scheduler's logical date).")
def schedule_ingest(source, work, day):
    """Ingest one day's window (once); the last line printed is the dataset's path."""
    from ..schedule import ingest_window

    click.echo(str(ingest_window(source, work, day)))


@schedule.command("window")
@STORE_OPTION
@click.option("--model", "name", required=True)
@click.option("--source", required=True, help="The window's file or ingested dataset; {date} is replaced by --date.")
@click.option("--work", required=True, type=click.Path(path_type=Path), help="Folder for the ingested windows.")
@click.option("--date", "day", required=True, help="The window's day, YYYY-MM-DD (the scheduler's logical date).")
@click.option("--retrain-args", default="", help="Further retrain options.")
def schedule_window(store, name, source, work, day, retrain_args):
    """Ingest one day's window (if it is a file) and retrain on it; prints one JSON line."""
    from ..schedule import run_window

    summary, code = run_window(store=store, name=name, source=source, work=work, day=day, retrain_args=retrain_args)
    click.echo(json.dumps(summary, default=str))
    if code:
        raise SystemExit(code)
