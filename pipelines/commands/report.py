"""``omkl report``: draw a run's, a retrain's or a stored model's plots."""

from __future__ import annotations

import json

import click

from omkl_dist.storage.errors import DataError

from ..cli_base import LOCAL_PATH, PATH_OR_URL, STORE_PATH
from .store_options import open_store


@click.command("report")
@click.argument("source", required=False, type=LOCAL_PATH)
@click.option("--store", envvar="OMKL_STORE", type=STORE_PATH, default=None, show_envvar=True)
@click.option("--model", "name", default=None, help="With --store: the model whose version history to draw.")
@click.option("--version", "ref", default=None, help="With --store/--model: redraw this version's retrain report.")
@click.option("--out", required=True, type=PATH_OR_URL, help="Folder for report.json and the PNGs.")
@click.option("--no-plots", is_flag=True, help="Write report.json only (no matplotlib needed).")
def report_cmd(source, store, name, ref, out, no_plots):
    """Draw the plots of a saved run trace (omkl run or omkl submit --trace-out), a retrain's report.json,
    or a store model."""
    from ..report import load_document, version_history, write_report

    if (source is None) == (name is None):
        raise click.UsageError("give a SOURCE file, or --store and --model")
    if source is not None:
        document = load_document(source)
    else:
        if store is None:
            raise click.UsageError("--model needs --store (or OMKL_STORE)")
        s = open_store(store, name)
        if ref is not None:
            version = s.resolve(ref)
            saved = s.dir / "reports" / f"v{version}" / "report.json"
            if not saved.is_file():
                raise DataError(
                    f"version {version} has no saved report",
                    path=saved,
                    fix="versions made by omkl retrain have one; draw the history without --version",
                )
            document = load_document(saved)
        else:
            document = {
                "kind": "retrain",
                "summary": {"model": name},
                "window": [0, 0],
                "split": None,
                "alarms": [],
                "curves": {},
                "history": version_history(s),
            }
        document["history"] = version_history(s)
    folder = write_report(document, out, plots=not no_plots, option="--out", inputs=[("report source", source)])
    plots = json.loads((folder / "report.json").read_text())["plots"]
    click.echo(f"wrote {folder / 'report.json'} and {len(plots)} plot(s): {', '.join(plots) or 'none (no data)'}")
