"""``omkl models``: list, inspect, promote, roll back, clean up and verify a stored model's versions."""

from __future__ import annotations

import json

import click

from omkl_dist.storage.errors import DataError

from ..cli_base import (
    PATH_OR_URL,
    CommandGroup,
)
from .mlflow_options import mlflow_options, mlflow_target
from .store_options import LOCK_TIMEOUT_OPTION, STORE_OPTION, open_store, store_change


@click.group(cls=CommandGroup)
def models():
    """List, inspect, promote, roll back, clean up and verify the versions of a stored model."""


@models.command("list")
@STORE_OPTION
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
@mlflow_options
def models_list(store, name, as_json, mlflow, mlflow_uri, experiment):
    """The models in the store, or NAME's versions with their aliases, windows and gate metrics (with
    --mlflow, also each version's registered MLflow version: "-" where it is not registered yet)."""
    target = mlflow_target(mlflow, mlflow_uri, experiment)
    if name is None:
        names = sorted(p.name for p in store.iterdir() if (p / "versions").is_dir()) if store.is_dir() else []
        click.echo(json.dumps(names) if as_json else ("\n".join(names) or f"no models in {store}"))
        return
    s = open_store(store, name)
    aliases = s.aliases()
    mirrored = None if target is None else _mlflow_versions(target, name)
    rows = []
    for version in s.versions():
        lineage = s.lineage(version)
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
                **({} if mirrored is None else {"mlflow_version": mirrored.get(version)}),
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
        registered = "" if mirrored is None else f"mlflow {r['mlflow_version'] or '-':<5} "
        click.echo(
            f"v{r['version']:<4} {registered}{','.join(r['aliases']) or '-':<20} parent {str(r['parent']):<5} "
            f"{r['algo'] or '?':<10} rows {r['rows'] or '-'}  held-out {rate}{vs}  {r['created'] or ''}"
        )


def _mlflow_versions(target, name: str) -> dict:
    """Store version -> MLflow version (a listing is read-only: MLflow down is an error here)."""
    from omkl_dist.mlflow.commands import registered_versions
    from omkl_dist.mlflow.connection import MlflowUnavailable

    try:
        return registered_versions(target, name)
    except MlflowUnavailable as exc:
        raise click.ClickException(f"{exc}; list without --mlflow to see the store alone") from None


def _mirror(target, store, name: str, lock_timeout: float) -> None:
    """After a store change with --mlflow: MLflow's registry made to match (a note when it cannot be)."""
    if target is None:
        return
    from omkl_dist.mlflow.commands import after_store_change

    block, note = after_store_change(target, open_store(store, name, lock_timeout))
    if note is not None:
        click.echo(f"note: {note}", err=True)
    elif block.get("registered"):
        click.echo(f"MLflow: registered {block['registered']} (store version: MLflow version)")


def _part(job: dict, key: str) -> dict:
    """A part of a version's job (an object, or empty when it has none)."""
    part = job.get(key)
    return part if isinstance(part, dict) else {}


@models.command("show")
@STORE_OPTION
@click.argument("name")
@click.argument("ref", default="champion")
def models_show(store, name, ref):
    """A version's provenance (label map, feature names, the job that made it and its lineage: parent, window, gate,
    metrics) as JSON (REF: an alias, default champion, or a number)."""
    s = open_store(store, name)
    version = s.resolve(ref)
    info = s.info(version)
    click.echo(
        json.dumps(
            {
                "version": version,
                "path": str(s.path(version)),
                "algorithm": info.get("algorithm"),
                "provenance": info.get("provenance"),
            },
            indent=1,
        )
    )


@models.command("import")
@STORE_OPTION
@click.argument("name")
@click.argument("model_dir", type=PATH_OR_URL)
@click.option("--no-promote", is_flag=True, help="Publish it without making it the champion.")
@LOCK_TIMEOUT_OPTION
@mlflow_options
def models_import(store, name, model_dir, no_promote, lock_timeout, mlflow, mlflow_uri, experiment):
    """Publish a saved model (omkl run or fit --model-out, omkl submit --out) as a version of NAME."""
    from ..retrain import import_model

    target = mlflow_target(mlflow, mlflow_uri, experiment)
    with store_change():
        done = import_model(store, name, model_dir, promote=not no_promote, lock_timeout=lock_timeout)
        click.echo(json.dumps(done))
    _mirror(target, store, name, lock_timeout)


@models.command("promote")
@STORE_OPTION
@click.argument("name")
@click.argument("ref")
@click.option("--alias", default="champion", show_default=True, help="The alias to point at the version.")
@LOCK_TIMEOUT_OPTION
@mlflow_options
def models_promote(store, name, ref, alias, lock_timeout, mlflow, mlflow_uri, experiment):
    """Point ALIAS (default champion) at version REF (with --mlflow, in MLflow's registry too)."""
    target = mlflow_target(mlflow, mlflow_uri, experiment)
    with store_change():
        done = open_store(store, name, lock_timeout).promote(ref, alias)
        was = f"v{done['previous']}" if done["previous"] else "unset"
        click.echo(f"{alias} -> v{done['version']} (was {was})")
    _mirror(target, store, name, lock_timeout)


@models.command("rollback")
@STORE_OPTION
@click.argument("name")
@LOCK_TIMEOUT_OPTION
@mlflow_options
def models_rollback(store, name, lock_timeout, mlflow, mlflow_uri, experiment):
    """Make the previous champion (as the event log records) the champion again (with --mlflow, in
    MLflow's registry too)."""
    target = mlflow_target(mlflow, mlflow_uri, experiment)
    with store_change():
        done = open_store(store, name, lock_timeout).rollback()
        click.echo(f"champion -> v{done['to']} (rolled back from v{done['from']})")
    _mirror(target, store, name, lock_timeout)


@models.command("sync")
@STORE_OPTION
@click.argument("name")
@click.option("--mlflow-uri", default=None, help="The MLflow tracking server (default: MLFLOW_TRACKING_URI).")
@click.option("--experiment", default=None, help="The MLflow experiment of the runs (default omkl-dist).")
def models_sync(store, name, mlflow_uri, experiment):
    """Make MLflow's registry match the store: register every version MLflow lacks (published while it
    was down, or without --mlflow; each in a run of its own) and point every alias as the store does.
    Idempotent: a second sync changes nothing. Prints one JSON object."""
    from omkl_dist.mlflow.connection import MlflowUnavailable, talking
    from omkl_dist.mlflow.registry import sync

    target = mlflow_target(True, mlflow_uri, experiment)
    s = open_store(store, name)
    if not s.versions():
        raise DataError(f"model {name!r} has no versions to sync", path=s.dir, fix="publish one with omkl retrain")
    try:
        with talking(target) as client:
            done = sync(client, s, target.experiment)
    except MlflowUnavailable as exc:
        raise click.ClickException(f"{exc}; nothing was changed in the store, run the sync again later") from None
    click.echo(json.dumps({"model": name, "uri": target.uri, **done}))


@models.command("gc")
@STORE_OPTION
@click.argument("name")
@click.option(
    "--keep",
    required=True,
    type=click.IntRange(min=0),
    help="Keep the newest N versions (and every version an alias points at).",
)
@LOCK_TIMEOUT_OPTION
def models_gc(store, name, keep, lock_timeout):
    """Delete old versions; never one an alias points at."""
    with store_change():
        removed = open_store(store, name, lock_timeout).gc(keep)
        click.echo(f"deleted {len(removed)} version(s){': ' + ', '.join(map(str, removed)) if removed else ''}")


@models.command("verify")
@STORE_OPTION
@click.argument("name")
def models_verify(store, name):
    """Re-check every version's arrays against their sha256, the aliases and the event log."""
    s = open_store(store, name)
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
