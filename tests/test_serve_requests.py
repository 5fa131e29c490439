"""The app's request checks, in this process (httpx over the ASGI transport): every bad request gets
its 4xx and a one-line message naming the problem, where and the fix, and nothing reaches the model."""

from __future__ import annotations

import gzip
import io
import json
import zlib

import numpy as np
import pytest

from omkl_dist import OMKC
from omkl_dist.model import Model
from omkl_dist.preprocessing import ColumnEncoder
from omkl_dist.serving.app import Limits, create_app
from omkl_dist.serving.errors import BadRequest
from omkl_dist.serving.follow import AliasFollower
from omkl_dist.serving.rows import json_batch
from omkl_dist.storage.model_store import ModelStore

from omkl_cli import omkl_here
from serving_helpers import FEATURES, call, publish, rows

ARROW = "application/vnd.apache.arrow.stream"
FORM = "application/x-www-form-urlencoded"
TSV = "text/tab-separated-values"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = ModelStore(tmp_path_factory.mktemp("serve") / "store", "churn")
    publish(s, 1)
    return s


@pytest.fixture()
def follower(store):
    return AliasFollower(store, "champion")


def _arrow(columns: dict) -> bytes:
    import pyarrow as pa

    table = pa.table(columns)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _state(model) -> tuple:
    arrays, meta = model.estimator.to_state()
    return {k: v.copy() for k, v in arrays.items()}, json.dumps(meta, sort_keys=True, default=str)


JSON_HEADERS = {"content-type": "application/json"}
GZIP_JSON = {**JSON_HEADERS, "content-encoding": "gzip"}
BAD_REQUESTS = [
    # (name, request kwargs, status, words of the message)
    ("wrong width", {"json": {"rows": [[1.0, 2.0]]}}, 422, ["row 0", "2 values", "takes 3", "Fix:"]),
    ("other names", {"json": {"rows": [{"a": 1, "b": 2, "d": 3}]}}, 422, ["missing ['c']; not the model's ['d']"]),
    ("a name missing", {"json": {"rows": [{"a": 1, "b": 2}]}}, 422, ["features (missing ['c']). Fix:"]),
    ("text value", {"json": {"rows": [[1, "x", 3]]}}, 422, ["column b", '"x" is not a number']),
    ("null value", {"json": {"rows": [[1, None, 3]]}}, 422, ["column b", "null is not a number"]),
    ("true is no number", {"json": {"rows": [[1, True, 3]]}}, 422, ["true is not a number"]),
    ("NaN", {"content": b'{"rows": [[1, NaN, 3]]}', "headers": JSON_HEADERS}, 400, ["NaN is not a number"]),
    ("infinity", {"content": b'{"rows": [[1, 2, 1e999]]}', "headers": JSON_HEADERS}, 422, ["column c", "finite"]),
    ("huge integer", {"json": {"rows": [[1, 2, 10**400]]}}, 422, ["column c", "inf is not a finite number"]),
    ("bad JSON", {"content": b'{"rows": [[1, 2', "headers": JSON_HEADERS}, 400, ["not valid JSON"]),
    ("not an object", {"json": [[1, 2, 3]]}, 400, ["JSON list, not an object"]),
    ("no rows", {"json": {"row": [[1, 2, 3]]}}, 400, ["no 'rows' list"]),
    ("empty rows", {"json": {"rows": []}}, 400, ["'rows' is empty"]),
    ("a row neither list nor object", {"json": {"rows": [3]}}, 422, ["row 0", "JSON int"]),
    # (curl -d without -H sends a form)
    ("wrong content type", {"content": b"1,2,3", "headers": {"content-type": FORM}}, 415, [repr(FORM), "text/csv"]),
    ("CSV without rows", {"content": b"a,b,c\n", "headers": {"content-type": "text/csv"}}, 400, ["header row and no"]),
    ("CSV ragged", {"content": b"a,b,c\n1,2\n", "headers": {"content-type": "text/csv"}}, 400, ["could not be read"]),
    ("CSV text", {"content": b"a,b,c\n1,x,3\n", "headers": {"content-type": "text/csv"}}, 422, ["'b'", "not numbers"]),
    (
        "CSV missing",
        {"content": b"a,b,c\n1,,3\n", "headers": {"content-type": "text/csv"}},
        422,
        ["row 0, column b: a missing value", "--impute"],
    ),
    ("CSV names", {"content": b"a,b,id\n1,2,3\n", "headers": {"content-type": "text/csv"}}, 422, ["missing ['c']"]),
    ("TSV twice", {"content": b"a\tb\tc\tc\n1\t2\t3\t4\n", "headers": {"content-type": TSV}}, 400, ["twice"]),
    ("too many rows", {"json": {"rows": [[1, 2, 3]] * 11}}, 413, ["11 rows", "--max-rows"]),
    ("body too large", {"json": {"rows": [[1.5, 2.5, 3.5]] * 10, "pad": "x" * 5000}}, 413, ["--max-body-bytes"]),
    ("not an Arrow stream", {"content": b"not arrow", "headers": {"content-type": ARROW}}, 400, ["not an Arrow IPC"]),
    ("not gzip", {"content": b'{"rows": [[1, 2, 3]]}', "headers": GZIP_JSON}, 400, ["not gzip data", "Content-Enc"]),
    ("brotli", {"content": b"x", "headers": {**JSON_HEADERS, "content-encoding": "br"}}, 415, ["'br'", "gzip"]),
    ("a gzip bomb", {"content": gzip.compress(bytes(10**6)), "headers": GZIP_JSON}, 413, ["decompresses to more"]),
    (  # (it was a 500 when the compressed bytes broke the csv module's reading of the header)
        "gzip sent as text",
        {"content": gzip.compress(b"a,b,c\n1,2,3\n" * 50), "headers": {"content-type": "text/csv"}},
        400,
        ["gzip-compressed", "Content-Encoding: gzip"],
    ),
    ("binary CSV", {"content": b"a,b\rc,d\n1,2\n", "headers": {"content-type": "text/csv"}}, 400, ["not a header row"]),
]


@pytest.mark.parametrize("kind, request_kwargs, status, words", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_every_bad_request_gets_its_4xx_and_one_line_and_the_model_is_unchanged(
    follower, kind, request_kwargs, status, words
):
    served = follower.snapshot()
    arrays, meta = _state(served.model)
    app = create_app(follower, limits=Limits(max_body_bytes=4096, max_rows=10))
    response = call(app, "POST", "/v1/predict", **request_kwargs)
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "\n" not in message and message.startswith("POST /v1/predict")
    for word in words:
        assert word in message
    assert follower.snapshot() is served
    after_arrays, after_meta = _state(served.model)
    assert after_meta == meta and all(np.array_equal(arrays[k], after_arrays[k]) for k in arrays)


def test_a_compressed_body_is_answered_as_the_plain_one(follower):
    """Content-Encoding gzip or deflate (zlib's or a raw stream): the body decompressed, then read."""
    X, _ = rows(6, 5)
    app = create_app(follower)
    body = _csv(X)
    plain = call(app, "POST", "/v1/predict", content=body, headers={"content-type": "text/csv"}).json()
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    for encoding, packed in (
        ("gzip", gzip.compress(body)),
        ("deflate", zlib.compress(body)),
        ("deflate", raw.compress(body) + raw.flush()),
    ):
        headers = {"content-type": "text/csv", "content-encoding": encoding}
        response = call(app, "POST", "/v1/predict", content=packed, headers=headers)
        assert response.status_code == 200 and response.json() == plain, response.text


def test_a_streamed_body_beyond_the_limit_is_refused_without_its_length(follower):
    app = create_app(follower, limits=Limits(max_body_bytes=100))

    async def chunks():
        for _ in range(10):
            yield b'{"rows": [[1, 2, 3]]}   '  # (no Content-Length: a chunked body)

    response = call(app, "POST", "/v1/predict", content=chunks(), headers=JSON_HEADERS)
    assert response.status_code == 413 and "100 bytes" in response.json()["error"]


def test_json_lists_objects_and_arrow_give_the_stored_models_answer(follower):
    model = follower.snapshot().model
    X, _ = rows(3, 4)
    app = create_app(follower)
    by_list = call(app, "POST", "/v1/predict", json={"rows": X.tolist()}).json()
    assert by_list == {
        "version": 1,
        "classes": ["stay", "churn"],
        "labels": model.predict(X).tolist(),
        "decision_values": model.decision_function(X).tolist(),
    }
    shuffled = [{n: row[FEATURES.index(n)] for n in reversed(FEATURES)} for row in X.tolist()]
    assert call(app, "POST", "/v1/predict", json={"rows": shuffled}).json() == by_list
    body = _arrow({n: X[:, j] for j, n in reversed(list(enumerate(FEATURES)))})
    assert call(app, "POST", "/v1/predict", content=body, headers={"content-type": ARROW}).json() == by_list
    wrong = call(app, "POST", "/v1/predict", content=_arrow({"a": X[:, 0]}), headers={"content-type": ARROW})
    assert wrong.status_code == 422 and "missing ['b', 'c']" in wrong.json()["error"]
    text = call(
        app,
        "POST",
        "/v1/predict",
        content=_arrow({"a": ["1"], "b": [1.0], "c": [2.0]}),
        headers={"content-type": ARROW},
    )
    assert text.status_code == 422 and "column 'a' holds" in text.json()["error"]
    nulls = _arrow({"a": [1.0, None], "b": [1.0, 2.0], "c": [2.0, 3.0]})
    missing = call(app, "POST", "/v1/predict", content=nulls, headers={"content-type": ARROW})
    assert missing.status_code == 422 and "row 1, column a" in missing.json()["error"]


def test_learning_in_follow_mode_is_refused_and_the_model_described(follower):
    app = create_app(follower)
    refused = call(app, "POST", "/v1/learn", json={"rows": [[1, 2, 3]], "labels": ["stay"]})
    assert refused.status_code == 409 and "follows alias 'champion'" in refused.json()["error"]
    assert "omkl serve --learn" in refused.json()["error"]
    info = call(app, "GET", "/v1/model").json()
    assert info["mode"] == "follow" and info["version"] == 1 and info["classes"] == ["stay", "churn"]
    assert info["feature_names"] == FEATURES and info["n_features"] == 3 and info["algorithm"] == "OMKC"
    assert call(app, "GET", "/metrics").text.count('omkl_requests_total{endpoint="learn",status="409"} 1') == 1


def test_labels_are_checked_against_the_models_classes(follower):
    model = follower.snapshot().model
    rows_ = [[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]

    def batch(labels):
        return json_batch({"rows": rows_, "labels": labels}, model, learn=True, max_rows=10, where="POST /v1/learn")

    assert batch(["churn", "stay"]).y.tolist() == ["churn", "stay"]
    for labels, status, words in [
        (["churn", "maybe"], 422, ["row 1", '"maybe" is not one of', "['stay', 'churn']"]),
        (["churn", True], 422, ["row 1", "true"]),
        (["churn"], 400, ["1 labels for 2 rows"]),
        (None, 400, ["no 'labels' list"]),
    ]:
        with pytest.raises(BadRequest) as refused:
            batch(labels)
        assert refused.value.status == status and all(w in refused.value.message for w in words)


def test_a_model_with_a_column_encoder_takes_raw_columns_by_name(tmp_path):
    import pandas as pd

    X, y = rows(4, 40)
    table = pd.DataFrame({"size": X[:, 0], "colour": np.where(X[:, 1] > 0, "red", "blue")})
    table.loc[3, "size"] = np.nan
    encoder = ColumnEncoder(categorical="one-hot", impute="mean").fit(table)
    estimator = OMKC().fit(encoder.transform(table), np.where(y == "churn", 1, -1))
    store = ModelStore(tmp_path / "store", "raw")
    staged = store.staging_dir()
    from omkl_dist.persistence import save_model

    model = Model(
        estimator, columns=encoder, feature_names=encoder.feature_names_out_, label_map=[["no", -1], ["yes", 1]]
    )
    save_model(model, staged / "model")
    store.publish(staged / "model", reason="test", promote=True, expect_champion=None)
    app = create_app(AliasFollower(store, "champion"))
    raw = [{"size": 0.5, "colour": "red"}, {"size": None, "colour": "blue"}, {"colour": "green", "size": 1}]
    answer = call(app, "POST", "/v1/predict", json={"rows": raw}).json()
    expected = pd.DataFrame(raw, columns=["size", "colour"])
    assert answer["labels"] == model.predict(expected).tolist()
    assert answer["decision_values"] == model.decision_function(expected).tolist()
    assert call(app, "GET", "/v1/model").json()["feature_names"] == ["size", "colour"]
    # each value of its column's kind: a list, a number or true for a category was an unknown category
    # (all zeros) and true a size of 1, answered with 200
    for row, problem in [
        ({"size": "big", "colour": "red"}, 'column size: "big" is not a number'),
        ({"size": True, "colour": "red"}, "column size: true is not a number"),
        ({"size": 1.0, "colour": ["red"]}, 'column colour: ["red"] is not text'),
        ({"size": 1.0, "colour": 3}, "column colour: 3 is not text. Fix: send column 'colour' as text"),
    ]:
        bad = call(app, "POST", "/v1/predict", json={"rows": [raw[0], row]})
        assert bad.status_code == 422 and f"row 1, {problem}" in bad.json()["error"], bad.json()
    arrow = [  # an Arrow body's columns likewise (an int64 colour was scored as an unknown category)
        ({"size": [1.0], "colour": [3]}, "column 'colour' holds int64 values, not text"),
        ({"size": [True], "colour": ["red"]}, "column 'size' holds bool values, not numbers"),
    ]
    for columns, problem in arrow:
        bad = call(app, "POST", "/v1/predict", content=_arrow(columns), headers={"content-type": ARROW})
        assert bad.status_code == 422 and problem in bad.json()["error"], bad.json()
    fine = call(
        app, "POST", "/v1/predict", content=_arrow({"size": [0.5], "colour": ["red"]}), headers={"content-type": ARROW}
    )
    assert fine.json()["decision_values"] == pytest.approx(answer["decision_values"][:1])  # (a lone row's rounding)
    with pytest.raises(ValueError, match=r"column 'colour' holds list \"\['red'\]\" in row 1, not text"):
        encoder.transform(pd.DataFrame({"size": [1.0], "colour": [["red"]]}))


def test_serving_beyond_loopback_needs_a_token_or_tls_and_a_token_file_holds_a_real_token(store, tmp_path):
    args = ["serve", "--store", store.root, "--model", "churn", "--follow", "champion"]
    refused = omkl_here(*args, "--host", "0.0.0.0", check=False)
    assert refused.returncode == 2 and "without a token or TLS" in refused.stderr and "--token-file" in refused.stderr
    (tmp_path / "short").write_text("abc\n")
    short = omkl_here(*args, "--token-file", tmp_path / "short", check=False)
    assert short.returncode == 2 and "at least 16 characters" in short.stderr
    both = omkl_here("serve", "--store", store.root, "--model", "churn", check=False)
    assert both.returncode == 2 and "--follow ALIAS" in both.stderr
    missing = omkl_here(*args[:-1], "staging", check=False)
    assert missing.returncode == 2 and "no alias 'staging'" in missing.stderr


def test_nothing_in_the_service_unpickles():
    import ast
    from pathlib import Path

    import omkl_dist.serving

    for path in Path(omkl_dist.serving.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            module = node.module if isinstance(node, ast.ImportFrom) else None
            assert not {"pickle", "marshal", "shelve", "dill", "cloudpickle"} & {*names, module}, path


def test_concurrent_predictions_are_batched_per_snapshot_and_answered_by_it():
    import asyncio

    import anyio

    from omkl_dist.serving.batching import PredictionBatcher, answer
    from omkl_dist.serving.learning import Snapshot

    X3, y3 = rows(1, 60)
    X4 = np.random.default_rng(2).normal(size=(60, 4))
    narrow = Snapshot(Model(OMKC().fit(X3, y3)), 1, 0)
    wide = Snapshot(Model(OMKC().fit(X4, np.where(X4[:, 3] > 0, "b", "a"))), 2, 0)
    batcher = PredictionBatcher(max_rows=5)
    requests = [(narrow, X3[:2]), (narrow, X3[2:4]), (wide, X4[:3]), (narrow, X3[4:8]), (wide, X4[3:4])]

    async def together():
        return await asyncio.gather(*(batcher.predict(s, X) for s, X in requests))

    answers = anyio.run(together)
    assert batcher.calls == 4  # [narrow, narrow] [wide] [narrow] [wide]: never two snapshots in one call
    # each answer is its own snapshot's, on the rows it was scored with (a decision value can differ
    # in its last bit with the rows beside it: the estimators' combination is a BLAS product)
    both = answer(narrow, X3[:4])
    firsts = [
        {**both, "labels": both["labels"][a:b], "decision_values": both["decision_values"][a:b]}
        for a, b in ((0, 2), (2, 4))
    ]
    expected = [*firsts, answer(wide, X4[:3]), answer(narrow, X3[4:8]), answer(wide, X4[3:4])]
    assert answers == expected


def test_an_arrow_body_to_learn_carries_its_labels_in_the_models_own_column():
    """A model trained on a table's 'churn' column learns from an Arrow stream of that table as it
    is ('churn' among the columns); 'label' still works, and ?label_column= names another."""
    from omkl_dist.serving.tables import arrow_batch

    X, y = rows(5, 4)
    model = Model(OMKC(random_state=0).fit(X, np.where(y == "churn", 1, -1)), label_map=[["stay", -1], ["churn", 1]],
                  feature_names=FEATURES, label_name="churn")  # fmt: skip
    features = {n: X[:, j] for j, n in enumerate(FEATURES)}
    for columns, given in (({"churn": y}, None), ({"label": y}, None), ({"outcome": y}, "outcome")):
        batch = arrow_batch(_arrow({**features, **columns}), model, learn=True, label_column=given, max_rows=10,
                            where="POST /v1/learn")  # fmt: skip
        assert np.array_equal(batch.X, X) and batch.y.tolist() == y.tolist()
    with pytest.raises(BadRequest, match="no labels' column 'label' \\(nor 'churn', the model's\\)"):
        arrow_batch(_arrow(features), model, learn=True, label_column=None, max_rows=10, where="POST /v1/learn")


def _csv(X, extra: dict | None = None, delimiter: str = ",", order=FEATURES) -> bytes:
    extra = extra or {}
    header = [*extra, *order]
    lines = [delimiter.join(header)]
    for i, row in enumerate(X.tolist()):
        lines.append(
            delimiter.join([*(str(v[i]) for v in extra.values()), *(repr(row[FEATURES.index(n)]) for n in order)])
        )
    return ("\n".join(lines) + "\n").encode()


def test_csv_and_tsv_bodies_give_the_json_answer_and_carry_the_ids_back(follower):
    """A CSV (or TSV) body with a header -- columns by name, in any order, ids beside them -- is answered
    as the JSON rows are; the columns that are no feature come back as the text they hold, as do a
    JSON object row's other keys and an Arrow stream's other columns."""
    X, _ = rows(6, 5)
    app = create_app(follower)
    plain = call(app, "POST", "/v1/predict", json={"rows": X.tolist()}).json()
    ids = [f"{i:05d}" for i in range(5)]  # ("00003" is not the number 3)
    body = _csv(X, {"customer_id": ids, "region": ["north"] * 5}, order=list(reversed(FEATURES)))
    by_csv = call(app, "POST", "/v1/predict", content=body, headers={"content-type": "text/csv; charset=utf-8"})
    assert by_csv.status_code == 200, by_csv.text
    assert by_csv.json() == {**plain, "carried": {"customer_id": ids, "region": ["north"] * 5}}
    tsv = call(app, "POST", "/v1/predict", content=_csv(X, delimiter="\t"), headers={"content-type": TSV})
    assert tsv.json() == plain
    objects = [{"id": i, **dict(zip(FEATURES, row))} for i, row in enumerate(X.tolist())]
    objects[1].pop("id")
    by_objects = call(app, "POST", "/v1/predict", json={"rows": objects}).json()
    assert by_objects == {**plain, "carried": {"id": [0, None, 2, 3, 4]}}
    arrow = _arrow({"id": ids, **{n: X[:, j] for j, n in enumerate(FEATURES)}, "score": [1.5, float("nan"), 0, 1, 2]})
    by_arrow = call(app, "POST", "/v1/predict", content=arrow, headers={"content-type": ARROW}).json()
    assert by_arrow == {**plain, "carried": {"id": ids, "score": [1.5, None, 0.0, 1.0, 2.0]}}


def test_a_csv_body_to_learn_takes_the_models_label_column_and_a_text_column_as_text(tmp_path):
    """Learning from CSV: the labels from the model's own column; a model that encodes a text column
    reads its categories as text (a zip code "02134" is no number) and imputes an empty cell."""
    import pandas as pd

    from omkl_dist.serving.tables import csv_batch

    X, y = rows(5, 4)
    model = Model(OMKC(random_state=0).fit(X, np.where(y == "churn", 1, -1)), label_map=[["stay", -1], ["churn", 1]],
                  feature_names=FEATURES, label_name="churn")  # fmt: skip
    batch = csv_batch(_csv(X, {"churn": y}), ",", model, learn=True, label_column=None, max_rows=10, where="learn")
    assert np.array_equal(batch.X, X) and batch.y.tolist() == y.tolist() and batch.carried is None
    frame = pd.DataFrame({"size": [0.5, 1.5, 2.5, 3.5], "zip": ["02134", "10001", "02134", "94103"]})
    encoder = ColumnEncoder(categorical="one-hot", impute="most_frequent").fit(frame)
    labels = np.array([-1, 1, -1, 1])
    encoded = Model(OMKC(random_state=0).fit(encoder.transform(frame), labels), columns=encoder)
    body = b"id,size,zip\n7,0.5,02134\n8,,94103\n9,1.5,\n"
    batch = csv_batch(body, ",", encoded, learn=False, label_column=None, max_rows=10, where="predict")
    assert batch.X["zip"].tolist() == ["02134", "94103", None] and batch.carried == {"id": ["7", "8", "9"]}
    expected = encoded.decision_function(pd.DataFrame({"size": [0.5, None, 1.5], "zip": ["02134", "94103", None]}))
    np.testing.assert_array_equal(encoded.decision_function(batch.X), expected)


def test_a_csv_body_with_spaced_names_or_for_a_model_without_names():
    """Names padded with spaces (`id, a, b, c`) match as the CLI's reader matches them, the ids kept as
    text; a model that learnt from unnamed columns takes a CSV body's columns in their order."""
    from omkl_dist.serving.tables import csv_batch

    X, y = rows(5, 4)
    named = Model(OMKC(random_state=0).fit(X, np.where(y == "churn", 1, -1)), feature_names=FEATURES)
    spaced = b"id, a , b, c\n" + b"".join(b"007, %r, %r, %r\n" % tuple(row) for row in X.tolist())
    batch = csv_batch(spaced, ",", named, learn=False, label_column=None, max_rows=10, where="predict")
    assert np.array_equal(batch.X, X) and batch.carried == {"id": ["007"] * 4}
    unnamed = Model(OMKC(random_state=0).fit(X, np.where(y == "churn", 1, -1)))
    plain = b"x1,x2,x3\n" + b"".join(b"%r,%r,%r\n" % tuple(row) for row in X.tolist())
    batch = csv_batch(plain, ",", unnamed, learn=False, label_column=None, max_rows=10, where="predict")
    assert np.array_equal(batch.X, X) and batch.carried is None
