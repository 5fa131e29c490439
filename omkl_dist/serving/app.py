"""The ASGI app: predict, learn, the model, health, readiness and metrics over HTTP (Starlette).

``create_app(source)`` serves a source of snapshots: an :class:`~omkl_dist.serving.follow.AliasFollower`
(predict-only, following a store alias), a :class:`~omkl_dist.serving.follow.SavedModel` (predict-only,
a model folder as it is) or a :class:`~omkl_dist.serving.learning.LearningService`
(predicts from its snapshot and learns through its write-ahead log). A team can mount the app in its
own service; ``omkl serve`` runs it under uvicorn. The app owns the source: it starts a follower's
poller on startup and closes the source on shutdown.

Predictions read the source's current snapshot, an immutable model: requests never wait for
learning and never see a half-updated model. The rows of concurrent predict requests are scored
together in a worker thread (:mod:`.batching`); a learn call (which waits for the log's fsync)
runs in a worker thread too, so the event loop only parses, checks and answers.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .batching import PredictionBatcher, answer
from .encoding import decoded
from .errors import BadRequest
from .follow import AliasFollower, SavedModel
from .metrics import CONTENT_TYPE, RequestMetrics
from .rows import ARROW, CSV, JSON, Batch, json_batch, media_type, parse_json
from .tables import arrow_batch, csv_batch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """What one request may carry: its body's bytes and its rows."""

    max_body_bytes: int = 32 * 2**20
    max_rows: int = 100_000

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


#: a body up to this size is parsed and checked on the event loop (a thread hop costs more)
INLINE_BYTES = 64 * 2**10

Handler = Callable[[Request], Awaitable[tuple[Response, int]]]


def create_app(source: Any, *, token: str | None = None, limits: Limits | None = None) -> Starlette:
    """The app serving ``source`` (an AliasFollower, a SavedModel or a LearningService).

    Parameters
    ----------
    source : AliasFollower, SavedModel or LearningService
        Where snapshots come from (``snapshot()``); a LearningService also learns (``learn``).
    token : str, optional
        A bearer token every request but ``/healthz`` and ``/readyz`` must carry
        (``Authorization: Bearer TOKEN``), compared in constant time.
    limits : Limits, optional
        The body size and row limits (defaults: 32 MiB, 100,000 rows).
    """
    limits = limits or Limits()
    following = isinstance(source, (AliasFollower, SavedModel))  # predict only
    metrics = RequestMetrics()
    batcher = PredictionBatcher(limits.max_rows)
    expected = None if token is None else token.encode()
    if expected is not None and not expected.strip():
        raise ValueError("the bearer token is empty")

    def authorize(request: Request, where: str) -> None:
        if expected is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected):
            raise BadRequest(
                401,
                "the request has no valid bearer token",
                where=where,
                fix="send 'Authorization: Bearer TOKEN' with the token in the server's --token-file",
            )

    def endpoint(name: str, handler: Handler, *, auth: bool = True) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            started, rows = time.perf_counter(), 0
            where = f"{request.method} {request.url.path}"
            try:
                if auth:
                    authorize(request, where)
                response, rows = await handler(request)
            except BadRequest as exc:
                response = JSONResponse({"error": exc.message}, status_code=exc.status)
                if exc.status == 401:
                    response.headers["WWW-Authenticate"] = "Bearer"
            except Exception as exc:  # an answer, not a dropped connection; the traceback goes to the log
                log.exception("omkl serve: %s failed", where)
                response = JSONResponse({"error": f"{where}: internal error ({type(exc).__name__}: {exc})"}, 500)
            metrics.observe(name, response.status_code, time.perf_counter() - started, rows)
            return response

        return run

    async def read_batch(request: Request, snapshot: Any, *, learn: bool) -> Batch:
        """The request's rows (and labels), checked against ``snapshot``'s model; a big body is
        parsed in a worker thread (the event loop keeps answering)."""
        where = f"{request.method} {request.url.path}"
        kind = media_type(request.headers.get("content-type"), where)
        raw = await _body(request, limits.max_body_bytes, where)
        encoding = request.headers.get("content-encoding")
        label_column = request.query_params.get("label_column")  # (None: the model's, else 'label')

        def check() -> Batch:
            body = decoded(raw, encoding, limits.max_body_bytes, where)
            model, options = snapshot.model, {"learn": learn, "max_rows": limits.max_rows, "where": where}
            if kind == JSON:
                return json_batch(parse_json(body, where), model, **options)
            if kind == ARROW:
                return arrow_batch(body, model, label_column=label_column, **options)
            return csv_batch(body, "," if kind == CSV else "\t", model, label_column=label_column, **options)

        # (a compressed body may decompress to the limit: off the event loop, as a large one)
        return check() if len(raw) <= INLINE_BYTES and encoding is None else await run_in_threadpool(check)

    async def predict(request: Request) -> tuple[Response, int]:
        snapshot = source.snapshot()  # the one snapshot this request is checked against and answered by
        batch = await read_batch(request, snapshot, learn=False)
        if isinstance(batch.X, np.ndarray):
            result = await batcher.predict(snapshot, batch.X)
        else:  # raw columns for a column encoder: alone
            result = await run_in_threadpool(answer, snapshot, batch.X)
        return JSONResponse(_with_carried(result, batch)), batch.n_rows

    async def learn(request: Request) -> tuple[Response, int]:
        where = f"{request.method} {request.url.path}"
        if following:
            raise BadRequest(
                409,
                f"this service only predicts ({source.serves})",
                where=where,
                fix="send labels to a service started with `omkl serve --learn`",
            )
        batch = await read_batch(request, source.snapshot(), learn=True)
        try:
            ack = await run_in_threadpool(source.learn, batch.X, batch.y)
        except ValueError as exc:  # refused by the learner before anything was logged
            raise BadRequest(
                422, str(exc), where=where, fix="correct the rows and labels and send them again"
            ) from None
        except RuntimeError as exc:  # closing or failed: nothing of this request was acknowledged
            raise BadRequest(
                503, str(exc), where=where, fix="send the rows again once the service is back (omkl serve --learn)"
            ) from None
        answer = {
            "version": ack.version,
            "first_row": ack.first_row,
            "rows": batch.n_rows,
            "durable": True,
            "labels": np.asarray(ack.predictions).tolist(),
            "decision_values": np.asarray(ack.scores).tolist(),
        }
        return JSONResponse(_with_carried(answer, batch)), batch.n_rows

    async def model_info(request: Request) -> tuple[Response, int]:
        snapshot = source.snapshot()
        model = snapshot.model
        return JSONResponse(
            {
                **_mode(source, following),
                "version": snapshot.version,
                "rows_learnt": snapshot.rows_learnt,
                "algorithm": type(model.estimator).__name__,
                "classes": model.classes_.tolist(),
                "n_features": model.n_features_in_,
                "feature_names": model.raw_names,
                "label_name": model.label_name,
                "limits": {"max_body_bytes": limits.max_body_bytes, "max_rows": limits.max_rows},
            }
        ), 0

    async def healthz(request: Request) -> tuple[Response, int]:
        return JSONResponse({"status": "ok"}), 0

    async def readyz(request: Request) -> tuple[Response, int]:
        snapshot = source.snapshot()
        return JSONResponse({"status": "ready", "version": snapshot.version}), 0

    async def metrics_text(request: Request) -> tuple[Response, int]:
        return PlainTextResponse(metrics.render(_gauges(source, following)), media_type=CONTENT_TYPE), 0

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if following:
            source.start()
        try:
            yield
        finally:
            await run_in_threadpool(source.close)

    routes = [
        Route("/v1/predict", endpoint("predict", predict), methods=["POST"]),
        Route("/v1/learn", endpoint("learn", learn), methods=["POST"]),
        Route("/v1/model", endpoint("model", model_info), methods=["GET"]),
        Route("/healthz", endpoint("healthz", healthz, auth=False), methods=["GET"]),
        Route("/readyz", endpoint("readyz", readyz, auth=False), methods=["GET"]),
        Route("/metrics", endpoint("metrics", metrics_text), methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _with_carried(answer: dict[str, Any], batch: Batch) -> dict[str, Any]:
    """The answer, and the request's keys or columns that are no feature (ids...) as they came, row for row."""
    return answer if batch.carried is None else {**answer, "carried": batch.carried}


async def _body(request: Request, limit: int, where: str) -> bytes:
    """The body as sent, refused (413) as soon as it passes ``limit`` bytes (declared or streamed)."""
    too_large = BadRequest(
        413,
        f"the body is larger than this service takes ({limit:,} bytes)",
        where=where,
        fix="send fewer rows per request (or start omkl serve with a larger --max-body-bytes)",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _mode(source: Any, following: bool) -> dict[str, Any]:
    if following:
        return source.describe()
    stats = source.stats()
    return {"mode": "learn", **{key: stats[key] for key in ("line_rows", "published", "mistake_rate")}}


def _gauges(source: Any, following: bool) -> dict[str, tuple[str, float | None]]:
    """The model's gauges: from its estimator (a followed model's own training run), overlaid in
    learn mode by the learning service's running statistics."""
    snapshot = source.snapshot()
    estimator = snapshot.model.estimator
    seen, mistakes = getattr(estimator, "n_samples_seen_", None), getattr(estimator, "mistakes_", None)
    support = getattr(estimator, "n_support_", None)
    values: dict[str, float | None] = {
        "version": snapshot.version,
        "rows_learnt": snapshot.rows_learnt,
        "mistake_rate": None if not seen or mistakes is None else mistakes / seen,
        "support_vectors": None if support is None else float(np.sum(support)),
    }
    learning: dict[str, tuple[str, float | None]] = {}
    if not following:
        stats = source.stats()
        values.update({key: stats[key] for key in values if stats.get(key) is not None})
        learning = {
            "omkl_line_rows": ("Rows in this learning line's write-ahead log since it started.", stats["line_rows"]),
            "omkl_wal_bytes": ("Bytes of the write-ahead log on disk.", stats["log_bytes"]),
            "omkl_wal_fsyncs": ("fsync calls of the write-ahead log (one per group commit).", stats["fsyncs"]),
            "omkl_wal_fsync_seconds": ("Seconds spent in the log's fsync calls.", stats["fsync_seconds"]),
        }
    return {
        **learning,
        "omkl_model_version": ("The store version the served model derives from.", values["version"]),
        "omkl_rows_learnt": ("Rows learnt on top of that version by this service.", values["rows_learnt"]),
        "omkl_mistake_rate": ("The running (test-then-train) mistake rate.", values["mistake_rate"]),
        "omkl_support_vectors": ("Support vectors held by the model, over its kernels.", values["support_vectors"]),
    }
