"""``omkl models``: list, inspect, promote, roll back, clean up and verify a stored model's versions."""

from __future__ import annotations

import json
from pathlib import Path

import click

from omkl_dist.storage.errors import DataError

from ..cli_base import (
    CommandGroup,
)
from .store_options import LOCK_TIMEOUT_OPTION, STORE_OPTION, open_store, store_change


@click.group(cls=CommandGroup)
def models():
    """List, inspect, promote, roll back, clean up and verify the versions of a stored model."""


@models.command("list")
@STORE_OPTION
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def models_list(store, name, as_json):
    """The models in the store, or NAME's versions with their aliases, windows and gate metrics."""
    if name is None:
        names = sorted(p.name for p in store.iterdir() if (p / "versions").is_dir()) if store.is_dir() else []
        click.echo(json.dumps(names) if as_json else ("\n".join(names) or f"no models in {store}"))
        return
    s = open_store(store, name)
    aliases = s.aliases()
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
@click.argument("model_dir", type=click.Path(path_type=Path))
@click.option("--no-promote", is_flag=True, help="Publish it without making it the champion.")
@LOCK_TIMEOUT_OPTION
def models_import(store, name, model_dir, no_promote, lock_timeout):
    """Publish a saved model (omkl run --model-out, omkl submit --out) as a version of NAME."""
    from ..retrain import import_model

    with store_change():
        done = import_model(store, name, model_dir, promote=not no_promote, lock_timeout=lock_timeout)
        click.echo(json.dumps(done))


@models.command("promote")
@STORE_OPTION
@click.argument("name")
@click.argument("ref")
@click.option("--alias", default="champion", show_default=True, help="The alias to point at the version.")
@LOCK_TIMEOUT_OPTION
def models_promote(store, name, ref, alias, lock_timeout):
    """Point ALIAS (default champion) at version REF."""
    with store_change():
        done = open_store(store, name, lock_timeout).promote(ref, alias)
        was = f"v{done['previous']}" if done["previous"] else "unset"
        click.echo(f"{alias} -> v{done['version']} (was {was})")


@models.command("rollback")
@STORE_OPTION
@click.argument("name")
@LOCK_TIMEOUT_OPTION
def models_rollback(store, name, lock_timeout):
    """Make the previous champion (as the event log records) the champion again."""
    with store_change():
        done = open_store(store, name, lock_timeout).rollback()
        click.echo(f"champion -> v{done['to']} (rolled back from v{done['from']})")


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
