"""The model store mirrored into MLflow's model registry: each store version a registered model
version of the same name, the store's aliases (``champion``, ...) set on them.

The store is the source of truth and MLflow a mirror: a registered version carries the store
version it was made from and that version's ``model.json`` hash as tags (``omkl.store_version``,
``omkl.meta_sha256``), which is how :func:`sync` knows what is registered already -- MLflow numbers
its versions itself, and a store version that was published while MLflow was down gets a later
MLflow number. :func:`sync` registers what is missing (oldest first) and points every alias as the
store does; run twice, it changes nothing the second time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .pyfunc import save_pyfunc
from .tracking import TAG, RunRecord, log_run

STORE_VERSION, META_SHA256 = f"{TAG}store_version", f"{TAG}meta_sha256"
ARTIFACT = "model"  # where a run keeps the registered MLflow model


def registered(client, name: str) -> dict[int, Any]:
    """The MLflow model versions of ``name`` made from store versions, by store version."""
    from mlflow.exceptions import MlflowException

    found: dict[int, Any] = {}
    token = None
    while True:
        try:
            page = client.search_model_versions(f"name = '{name}'", page_token=token)
        except MlflowException as exc:
            if getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST":
                return found
            raise
        for mv in page:
            tag = (mv.tags or {}).get(STORE_VERSION)
            if tag is not None and tag.isdigit():
                found.setdefault(int(tag), mv)  # (the first of duplicates a race may have made)
        token = page.token
        if not token:
            return found


def register(client, store, version: int, run_id: str, known: dict[int, Any] | None = None) -> Any:
    """Register store ``version`` of ``store`` (a :class:`~omkl_dist.storage.model_store.ModelStore`)
    from run ``run_id`` (its copy of the saved model goes into the run's artifacts); a version
    registered before is returned as it is."""
    known = registered(client, store.name) if known is None else known
    sha = store.info(version)["meta_sha256"]
    if version in known:
        _check_same(store, version, known[version], sha)
        return known[version]
    with tempfile.TemporaryDirectory(prefix="omkl-mlflow-") as tmp:
        local = save_pyfunc(store.path(version), Path(tmp) / ARTIFACT)
        client.log_artifacts(run_id, str(local), ARTIFACT)
    _ensure_registered_model(client, store.name)
    run = client.get_run(run_id)
    mv = client.create_model_version(
        store.name,
        source=f"{run.info.artifact_uri}/{ARTIFACT}",
        run_id=run_id,
        tags={STORE_VERSION: str(version), META_SHA256: sha, f"{TAG}store": str(store.root)},
        description=f"omkl-dist model store {store.root}, model {store.name!r}, version {version}",
    )
    known[version] = mv
    return mv


def _check_same(store, version: int, mv, sha: str) -> None:
    if (mv.tags or {}).get(META_SHA256) != sha:
        raise ValueError(
            f"MLflow's model {store.name!r} version {mv.version} was registered from store version {version} of "
            f"another model (its model.json hash differs from {store.path(version)}'s): two stores publish under "
            "one MLflow name; give each store's model its own name"
        )


def _ensure_registered_model(client, name: str) -> None:
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(name)
    except MlflowException:
        try:
            client.create_registered_model(name, description="published by omkl-dist's model store")
        except MlflowException:  # made meanwhile by another writer
            client.get_registered_model(name)


def mirror_aliases(client, store, known: dict[int, Any]) -> dict[str, str]:
    """Point each of the store's aliases at its version's MLflow version; returns alias -> MLflow version."""
    done = {}
    for alias, version in sorted(store.aliases().items()):
        if version in known:
            client.set_registered_model_alias(store.name, alias, str(known[version].version))
            done[alias] = str(known[version].version)
    return done


def sync(client, store, experiment: str) -> dict[str, Any]:
    """Register every store version MLflow lacks (each in a run of its own, tagged with its lineage)
    and mirror the aliases. Returns ``{"registered": {store version: MLflow version} (new ones),
    "versions": {...} (all), "aliases": {alias: MLflow version}}``."""
    known = registered(client, store.name)
    new = {}
    for version in store.versions():
        if version in known:
            _check_same(store, version, known[version], store.info(version)["meta_sha256"])
            continue
        run_id = log_run(client, experiment, version_record(store, version))
        new[version] = str(register(client, store, version, run_id, known).version)
    return {
        "registered": new,
        "versions": {v: str(mv.version) for v, mv in sorted(known.items())},
        "aliases": mirror_aliases(client, store, known),
    }


def version_record(store, version: int) -> RunRecord:
    """The run that registers a store version after the fact (by ``omkl models sync``): its lineage."""
    lineage = store.lineage(version)
    gate, code = lineage.get("gate") or {}, lineage.get("code") or {}
    window = lineage.get("window") or {}
    return RunRecord(
        name=f"{store.name} v{version} (sync)",
        params={
            **(lineage.get("params") or {}),
            **{k: lineage.get(k) for k in ("algo", "seed", "block_size", "scaling", "holdout")},
        },
        metrics={"holdout_mistake_rate": gate.get("challenger"), "store_version": version},
        tags={
            f"{TAG}model": store.name,
            f"{TAG}store": str(store.root),
            f"{TAG}store_version": version,
            f"{TAG}parent_version": lineage.get("parent") if lineage.get("parent") is not None else "none",
            f"{TAG}window_digest": window.get("sha256"),
            f"{TAG}window_key": lineage.get("window_key"),
            f"{TAG}code_version": code.get("omkl-dist"),
            f"{TAG}synced": "true",
            "mlflow.note.content": gate.get("decision"),
        },
    )
