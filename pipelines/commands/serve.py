"""``omkl serve``: a stored model over HTTP, following an alias or learning from the labels it is sent."""

from __future__ import annotations

import click

from ..cli_base import LOCAL_PATH, PATH_OR_URL, STORE_PATH, FiniteFloat
from .store_options import open_store


@click.command("serve")
@click.option(
    "--store",
    envvar="OMKL_STORE",
    show_envvar=True,
    type=STORE_PATH,
    default=None,
    help="The model store's folder (with --model).",
)
@click.option("--model", "name", default=None, help="The model's name in the store.")
@click.option(
    "--model-dir",
    type=PATH_OR_URL,
    default=None,
    help="Or: a saved model folder (omkl run or fit --model-out, omkl submit --out), served as it is: predict "
    "only, no version.",
)
@click.option(
    "--follow",
    "alias",
    default=None,
    help="Predict only, with the version ALIAS points at (e.g. champion); reload when it moves "
    "(omkl models promote, a scheduled retrain).",
)
@click.option(
    "--learn",
    is_flag=True,
    help="Predict and learn: /v1/learn's rows go through a write-ahead log into the model, published as "
    "new versions of the model every --publish-rows rows or --publish-seconds seconds.",
)
@click.option("--ref", default="champion", show_default=True, help="--learn: the version to start from on first start.")
@click.option(
    "--wal-dir",
    type=LOCAL_PATH,
    default=None,
    help="--learn: the write-ahead log's folder (default: beside the model in the store).",
)
@click.option("--publish-rows", default=10_000, show_default=True, type=click.IntRange(min=1), help="--learn.")
@click.option(
    "--publish-seconds", default=60.0, show_default=True, type=FiniteFloat(min=0, min_open=True), help="--learn."
)
@click.option(
    "--publish-alias",
    default=None,
    help="--learn: point this alias at every version published (e.g. for another server's --follow); never "
    "the champion, which only a gate (omkl retrain) or omkl models promote moves.",
)
@click.option(
    "--keep-published",
    default=None,
    type=click.IntRange(min=1),
    help="--learn: after each publish, delete this line's versions but its newest N (never one an alias "
    "points at, never another line's). Default: keep every version.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="0: a free port.")
@click.option(
    "--token-file",
    type=LOCAL_PATH,
    default=None,
    help="A file holding a bearer token every request must carry (Authorization: Bearer TOKEN).",
)
@click.option(
    "--tls-dir",
    type=LOCAL_PATH,
    default=None,
    help="Serve HTTPS with the certificates of `omkl cluster certs --out DIR` (clients present theirs: mutual TLS).",
)
@click.option(
    "--max-body-bytes", default=32 * 2**20, show_default=True, type=click.IntRange(min=1), help="Per request."
)
@click.option("--max-rows", default=100_000, show_default=True, type=click.IntRange(min=1), help="Per request.")
@click.option(
    "--poll-seconds",
    default=1.0,
    show_default=True,
    type=FiniteFloat(min=0, min_open=True),
    help="--follow: how often the alias is read.",
)
def serve(
    store,
    name,
    model_dir,
    alias,
    learn,
    ref,
    wal_dir,
    publish_rows,
    publish_seconds,
    publish_alias,
    keep_published,
    host,
    port,
    token_file,
    tls_dir,
    max_body_bytes,
    max_rows,
    poll_seconds,
):
    """Serve a stored (or saved) model over HTTP (POST /v1/predict, /v1/learn; GET /v1/model, /healthz, /readyz,
    /metrics)."""
    if (model_dir is None) == (name is None):
        raise click.UsageError("give --model (with --store) and --follow or --learn, or --model-dir")
    if model_dir is not None and (alias is not None or learn):
        raise click.UsageError(
            "--model-dir serves a saved folder as it is (predict only); to follow an alias or learn, import it "
            "into a store (omkl models import) and serve --model NAME"
        )
    if model_dir is None and store is None:
        raise click.UsageError("--model needs --store (or OMKL_STORE)")
    if model_dir is None and (alias is None) == (not learn):
        raise click.UsageError("give --follow ALIAS (predict only) or --learn (predict and learn)")
    if not learn and (publish_alias is not None or keep_published is not None):
        raise click.UsageError("--publish-alias and --keep-published go with --learn (a follower publishes nothing)")
    try:
        from omkl_dist.serving.app import Limits, create_app
        from omkl_dist.serving.follow import AliasFollower, SavedModel
        from omkl_dist.serving.security import check_exposure, read_token
        from omkl_dist.serving.server import run
    except ImportError as exc:
        raise click.ClickException(
            f"omkl serve needs the serve extra ({exc}); install it with: pip install 'omkl-dist[serve]'"
        ) from None

    token = None if token_file is None else read_token(token_file)
    check_exposure(host, token=token, tls_dir=tls_dir)
    if model_dir is not None:
        source, what, name = SavedModel(model_dir), "a saved model, predict only", str(model_dir)
    elif learn:
        from omkl_dist.serving.learning import LearningService

        source = LearningService.open(
            open_store(store, name),
            ref=ref,
            wal_dir=wal_dir,
            publish_rows=publish_rows,
            publish_seconds=publish_seconds,
            alias=publish_alias,
            keep_published=keep_published,
        )
        what = "learning"
    else:
        source = AliasFollower(open_store(store, name), alias, poll_seconds=poll_seconds)
        what = f"following {alias}"
    app = create_app(source, token=token, limits=Limits(max_body_bytes=max_body_bytes, max_rows=max_rows))
    version = source.snapshot().version

    def listening(url: str) -> None:
        served = name if version is None else f"{name} v{version}"
        click.echo(f"omkl serve: {served} ({what}) listening on {url}", err=False)

    run(app, host=host, port=port, tls_dir=tls_dir, on_listening=listening)
