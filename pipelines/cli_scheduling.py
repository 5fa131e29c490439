"""The ``omkl`` commands of scheduled retraining: ``models``, ``retrain``, ``predict``, ``report`` and
``schedule`` (see :mod:`.retrain`, :mod:`.predict`, :mod:`.report`, :mod:`.schedule`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import click

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.outputs import OutputBusy, Terminated

from .cli_base import (
    EXIT_BAD_INPUT,
    EXIT_BUSY,
    EXIT_INTERRUPTED,
    FEATURES_OPTION,
    LABEL_COLUMN_OPTION,
    POSITIVE_CLASS_OPTION,
    CommandGroup,
    FiniteFloat,
    job_settings,
    settings_options,
)

_STORE = click.option(
    "--store",
    envvar="OMKL_STORE",
    required=True,
    show_envvar=True,
    type=click.Path(path_type=Path),
    help="The model store's folder.",
)


_LOCK_TIMEOUT = click.option(
    "--lock-timeout",
    default=30.0,
    show_default=True,
    type=FiniteFloat(min=0),
    help="Seconds to wait for the store's lock before exiting 75.",
)


@contextlib.contextmanager
def _store_change():
    """A store change made whole or not at all: a signal that arrives once it is made is reported
    (the change stands and the command says so), one before it stops the command (exit 130)."""
    from omkl_dist.storage.model_store import signal_arrived, signals_held

    with signals_held(deliver=False):
        yield
        if signal_arrived() is not None:
            name = signal.Signals(signal_arrived()).name
            click.echo(f"note: {name} arrived after the change was made; it is complete", err=True)


def _parse_params(pairs) -> dict:
    """``--param key=value`` (repeatable); a value is read as JSON when it parses (numbers, true, lists)."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--param")
        try:
            params[key.strip()] = json.loads(value)
        except ValueError:
            params[key.strip()] = value
    return params


def _store(store: Path, name: str, lock_timeout: float = 30.0):
    from omkl_dist.storage.model_store import ModelStore

    return ModelStore(store, name, lock_timeout=lock_timeout)


# ------------------------------------------------------------------------------------------------ models
@click.group(cls=CommandGroup)
def models():
    """List, inspect, promote, roll back, clean up and verify the versions of a stored model."""


@models.command("list")
@_STORE
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def models_list(store, name, as_json):
    """The models in the store, or NAME's versions with their aliases, windows and gate metrics."""
    if name is None:
        names = sorted(p.name for p in store.iterdir() if (p / "versions").is_dir()) if store.is_dir() else []
        click.echo(json.dumps(names) if as_json else ("\n".join(names) or f"no models in {store}"))
        return
    s = _store(store, name)
    aliases = s.aliases()
    rows = []
    for version in s.versions():
        lineage = s.info(version).get("lineage") or {}
        gate = _part(lineage, "gate")
        rows.append(
            {
                "version": version,
                "aliases": sorted(a for a, v in aliases.items() if v == version),
                "parent": lineage.get("parent"),
                "algo": lineage.get("algo"),
                "rows": _part(lineage, "window").get("rows"),
                "holdout_mistake_rate": gate.get("challenger"),
                "champion_mistake_rate": gate.get("champion"),
                "created": lineage.get("created"),
            }
        )
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        click.echo(f"model {name!r} has no versions in {store}")
    for r in rows:
        rate = "" if r["holdout_mistake_rate"] is None else f"{100 * r['holdout_mistake_rate']:.2f} %"
        vs = "" if r["champion_mistake_rate"] is None else f" (champion {100 * r['champion_mistake_rate']:.2f} %)"
        click.echo(
            f"v{r['version']:<4} {','.join(r['aliases']) or '-':<20} parent {str(r['parent']):<5} "
            f"{r['algo'] or '?':<10} rows {r['rows']}  held-out {rate}{vs}  {r['created'] or ''}"
        )


def _part(lineage: dict, key: str) -> dict:
    """A part of a version's lineage (an object, or empty when it has none)."""
    part = lineage.get(key)
    return part if isinstance(part, dict) else {}


@models.command("show")
@_STORE
@click.argument("name")
@click.argument("ref", default="champion")
def models_show(store, name, ref):
    """A version's lineage and metrics as JSON (REF: an alias, default champion, or a number)."""
    s = _store(store, name)
    version = s.resolve(ref)
    info = s.info(version)
    click.echo(
        json.dumps(
            {
                "version": version,
                "path": str(s.path(version)),
                "algorithm": info.get("algorithm"),
                "lineage": info.get("lineage"),
            },
            indent=1,
        )
    )


@models.command("import")
@_STORE
@click.argument("name")
@click.argument("model_dir", type=click.Path(path_type=Path))
@click.option("--no-promote", is_flag=True, help="Publish it without making it the champion.")
@_LOCK_TIMEOUT
def models_import(store, name, model_dir, no_promote, lock_timeout):
    """Publish a saved model (omkl run --model-out, omkl submit --out) as a version of NAME."""
    from .retrain import import_model

    with _store_change():
        done = import_model(store, name, model_dir, promote=not no_promote, lock_timeout=lock_timeout)
        click.echo(json.dumps(done))


@models.command("promote")
@_STORE
@click.argument("name")
@click.argument("ref")
@click.option("--alias", default="champion", show_default=True, help="The alias to point at the version.")
@_LOCK_TIMEOUT
def models_promote(store, name, ref, alias, lock_timeout):
    """Point ALIAS (default champion) at version REF."""
    with _store_change():
        done = _store(store, name, lock_timeout).promote(ref, alias)
        was = f"v{done['previous']}" if done["previous"] else "unset"
        click.echo(f"{alias} -> v{done['version']} (was {was})")


@models.command("rollback")
@_STORE
@click.argument("name")
@_LOCK_TIMEOUT
def models_rollback(store, name, lock_timeout):
    """Make the previous champion (as the event log records) the champion again."""
    with _store_change():
        done = _store(store, name, lock_timeout).rollback()
        click.echo(f"champion -> v{done['to']} (rolled back from v{done['from']})")


@models.command("gc")
@_STORE
@click.argument("name")
@click.option(
    "--keep",
    required=True,
    type=click.IntRange(min=0),
    help="Keep the newest N versions (and every version an alias points at).",
)
@_LOCK_TIMEOUT
def models_gc(store, name, keep, lock_timeout):
    """Delete old versions; never one an alias points at."""
    with _store_change():
        removed = _store(store, name, lock_timeout).gc(keep)
        click.echo(f"deleted {len(removed)} version(s){': ' + ', '.join(map(str, removed)) if removed else ''}")


@models.command("verify")
@_STORE
@click.argument("name")
def models_verify(store, name):
    """Re-check every version's arrays against their sha256, the aliases and the event log."""
    s = _store(store, name)
    result = s.verify()
    for version, state in result["versions"].items():
        click.echo(f"v{version}: {state if state == 'ok' else 'DAMAGED'}")
    if result["problems"]:
        for problem in result["problems"]:
            click.echo(f"problem: {problem}", err=True)
        raise DataError(
            f"{len(result['problems'])} problem(s) in model {name!r}",
            path=s.dir,
            fix="restore the damaged versions from a backup, or delete them and retrain",
        )
    click.echo(f"model {name!r}: {len(result['versions'])} version(s) verified, aliases and event log consistent")


# ------------------------------------------------------------------------------------------------ retrain
@click.command("retrain")
@_STORE
@click.option("--model", "name", required=True, help="The model's name in the store.")
@click.option(
    "--data",
    required=True,
    help="The window: an ingested dataset (a folder or URL), or a data file ingested into "
    "STORE/NAME/windows/<content digest> first (reused when the same file comes again).",
)
@click.option("--rows", default=None, help="Only these rows of it, START:STOP (default: all).")
@click.option("--partition", default=None, help="Only the I-th of N equal parts of it, I/N (0-based).")
@click.option(
    "--algo",
    default=None,
    help="First version: the algorithm (online: omkc, spa, oks, ...; batch: mkboost, "
    "simplemkl, lpmkl). Later versions keep the champion's.",
)
@click.option(
    "--param",
    "param_pairs",
    multiple=True,
    help="KEY=VALUE, repeatable: the algorithm's parameters (first version; batch refits may change them).",
)
@click.option("--block-size", default=256, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@settings_options  # (a first version's; every later version keeps the champion's scaler and kernels)
@click.option(
    "--holdout",
    default=0.2,
    show_default=True,
    type=FiniteFloat(),
    help="Share of the window (its tail) held out to gate the challenger against the champion.",
)
@click.option(
    "--gate",
    default=0.0,
    show_default=True,
    type=FiniteFloat(),
    help="Promote if the challenger's held-out mistake rate <= the champion's + this tolerance.",
)
@click.option(
    "--when",
    type=click.Choice(["always", "drift"]),
    default="always",
    show_default=True,
    help="drift: retrain only if a Page-Hinkley test signals drift in the champion's mistakes.",
)
@click.option(
    "--drift-threshold",
    default=50.0,
    show_default=True,
    type=FiniteFloat(),
    help="Page-Hinkley lambda: the accumulated excess of mistakes that signals drift (smaller: sooner, "
    "more false alarms).",
)
@click.option(
    "--drift-delta",
    default=0.005,
    show_default=True,
    type=FiniteFloat(),
    help="Page-Hinkley delta: a rise of the mistake rate tolerated as no drift.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Dask scheduler address: learn on the cluster (online models; MKBoost's per-kernel SVMs).",
)
@click.option(
    "--report-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write report.json and the plots (default STORE/NAME/reports/vN).",
)
@click.option("--no-plots", is_flag=True, help="Write report.json only (no matplotlib needed).")
@_LOCK_TIMEOUT
@LABEL_COLUMN_OPTION
@POSITIVE_CLASS_OPTION
@FEATURES_OPTION
@click.option("--quiet", is_flag=True, help="No progress bar.")
def retrain_cmd(
    store,
    name,
    data,
    rows,
    partition,
    algo,
    param_pairs,
    block_size,
    seed,
    holdout,
    gate,
    when,
    drift_threshold,
    drift_delta,
    scheduler,
    report_dir,
    no_plots,
    lock_timeout,
    label_column,
    positive_class,
    features,
    quiet,
    **kwargs,
):
    """Continue the champion on a new window (or refit a batch model), gate it, publish it.

    The last line printed is one JSON object; its "status" says what happened: promoted, kept (the
    gate kept the champion), skipped (--when drift and no drift) or exists (this very retrain was
    done before), or interrupted (Ctrl-C or SIGTERM before the version was published: nothing was).
    A signal once the version is published lets the run finish; its "notes" say so, as they say
    what was skipped (plots without matplotlib). Exit status: 0 done, 2 bad input, 75 store locked
    (try later), 130/143 interrupted, 1 anything else.
    """
    from omkl_dist.evaluation.drift import PageHinkley

    from .retrain import retrain

    try:
        params = _parse_params(param_pairs)
        settings = job_settings(kwargs, kernels_given=bool(params.get("kernels") or params.get("kernel")))
        retrain(
            store,
            name,
            data,
            rows=rows,
            partition=partition,
            algo=algo,
            params=params,
            block_size=block_size,
            seed=seed,
            settings=settings,
            holdout=holdout,
            gate=gate,
            when=when,
            scheduler=scheduler,
            report_dir=report_dir,
            plots=not no_plots,
            lock_timeout=lock_timeout,
            show_progress=not quiet,
            drift=PageHinkley(delta=drift_delta, threshold=drift_threshold),
            labels={"label_column": label_column, "positive_class": positive_class, "features": features},
            emit=lambda summary: click.echo(json.dumps(summary, default=str)),
        )
    except (KeyboardInterrupt, Terminated) as exc:  # before its version was published: nothing was
        code = EXIT_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else exc.code
        click.echo(json.dumps({"status": "interrupted", "exit": code, "model": name, "published": False}))
        raise
    except OutputBusy as exc:  # one JSON line per run, also when it could not run (the scheduler's log)
        click.echo(json.dumps({"status": "busy", "exit": EXIT_BUSY, "model": name, "error": str(exc)}))
        raise
    except Exception as exc:
        code = EXIT_BAD_INPUT if isinstance(exc, (DataError, ValueError, OSError, RuntimeError)) else 1
        click.echo(json.dumps({"status": "error", "exit": code, "model": name, "error": f"{exc}"}))
        raise


# ------------------------------------------------------------------------------------------------ predict
@click.command("predict")
@click.option(
    "--store",
    envvar="OMKL_STORE",
    type=click.Path(path_type=Path),
    default=None,
    show_envvar=True,
    help="The model store (with --model).",
)
@click.option("--model", "name", default=None, help="The model's name in the store.")
@click.option("--version", "ref", default="champion", show_default=True, help="An alias or a version number.")
@click.option(
    "--model-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Or: a saved model folder (omkl run --model-out, omkl submit --out).",
)
@click.option("--data", required=True, help="An ingested dataset, a data file or a registry name.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="The parquet file to write.")
@click.option(
    "--block-rows",
    default=16_384,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows predicted and written at a time (bounds the memory).",
)
@click.option("--scheduler", default=None, help="Dask scheduler address: predict the blocks on the cluster.")
@click.option("--overwrite", is_flag=True, help="Replace an existing predictions file.")
@click.option(
    "--label-column",
    default=None,
    help="A CSV/TSV/text file: its label column -- first, last, a 0-based index or a header name.",
)
@click.option("--json", "as_json", is_flag=True)
def predict_cmd(store, name, ref, model_dir, data, out, block_rows, scheduler, overwrite, label_column, as_json):
    """Write a model's predictions (label, decision value) for every row as parquet, streamed."""
    from .predict import predict

    if (model_dir is None) == (name is None):
        raise click.UsageError("give --model (with --store) or --model-dir")
    if model_dir is None:
        if store is None:
            raise click.UsageError("--model needs --store (or OMKL_STORE)")
        s = _store(store, name)
        version = s.resolve(ref)
        model_dir, made_by = s.path(version), {"store": str(s.root), "model": name, "version": version}
    else:
        made_by = {"model_dir": str(model_dir), "version": None}
    result = predict(
        model_dir,
        data,
        out,
        made_by=made_by,
        block_rows=block_rows,
        scheduler=scheduler,
        overwrite=overwrite,
        label_column=label_column,
    )
    if as_json:
        click.echo(json.dumps(result))
        return
    who = f"{name} v{made_by['version']}" if name else str(model_dir)
    accuracy = "" if result["accuracy"] is None else f", accuracy on the data's labels {100 * result['accuracy']:.2f} %"
    click.echo(
        f"{result['rows']:,} predictions of {who} -> {result['out']} in {result['seconds']:.1f} s "
        f"({result['rows_per_second']:,.0f} rows/s{accuracy})"
    )


# ------------------------------------------------------------------------------------------------ report
@click.command("report")
@click.argument("source", required=False, type=click.Path(path_type=Path))
@click.option("--store", envvar="OMKL_STORE", type=click.Path(path_type=Path), default=None, show_envvar=True)
@click.option("--model", "name", default=None, help="With --store: the model whose version history to draw.")
@click.option("--version", "ref", default=None, help="With --store/--model: redraw this version's retrain report.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Folder for report.json and the PNGs.")
def report_cmd(source, store, name, ref, out):
    """Draw the plots of a saved run trace (omkl run --trace-out), a retrain's report.json, or a store model."""
    from .report import load_document, version_history, write_report

    if (source is None) == (name is None):
        raise click.UsageError("give a SOURCE file, or --store and --model")
    if source is not None:
        document = load_document(source)
    else:
        if store is None:
            raise click.UsageError("--model needs --store (or OMKL_STORE)")
        s = _store(store, name)
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
    folder = write_report(document, out, option="--out", inputs=[("report source", source)])
    plots = json.loads((folder / "report.json").read_text())["plots"]
    click.echo(f"wrote {folder / 'report.json'} and {len(plots)} plot(s): {', '.join(plots) or 'none (no data)'}")


# ------------------------------------------------------------------------------------------------ schedule
@click.group("schedule", cls=CommandGroup)
def schedule():
    """Run retraining on a schedule: a crontab line, or one scheduled window (what it runs)."""


@schedule.command("cron")
@_STORE
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
    from .schedule import cron_line

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
    from .schedule import ingest_window

    click.echo(str(ingest_window(source, work, day)))


@schedule.command("window")
@_STORE
@click.option("--model", "name", required=True)
@click.option("--source", required=True, help="The window's file or ingested dataset; {date} is replaced by --date.")
@click.option("--work", required=True, type=click.Path(path_type=Path), help="Folder for the ingested windows.")
@click.option("--date", "day", required=True, help="The window's day, YYYY-MM-DD (the scheduler's logical date).")
@click.option("--retrain-args", default="", help="Further retrain options.")
def schedule_window(store, name, source, work, day, retrain_args):
    """Ingest one day's window (if it is a file) and retrain on it; prints one JSON line."""
    from .schedule import run_window

    summary, code = run_window(store=store, name=name, source=source, work=work, day=day, retrain_args=retrain_args)
    click.echo(json.dumps(summary, default=str))
    if code:
        raise SystemExit(code)


def register(main: click.Group) -> None:
    """Add these commands to the ``omkl`` group."""
    for command in (models, retrain_cmd, predict_cmd, report_cmd, schedule):
        main.add_command(command)
