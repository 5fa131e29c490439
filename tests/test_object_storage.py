"""Datasets, models and checkpoints at S3 URLs, against a real S3-compatible server (moto in server
mode) bound to 127.0.0.1 and stopped at the end: ``omkl data synth --out s3://...``, streams read
back from S3 equal the local copy's, models saved to and loaded from S3, an output that exists is
refused without ``overwrite``, ``omkl run omkc --data s3://... --model-out s3://...``, and a cluster job
whose workers read the stream from S3 and write their checkpoints and the final model there ends
in the model ``omkl run`` learns, bit for bit.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

BUCKET = "omkl-test"
OMKL = [sys.executable, "-m", "omkl_dist.pipelines.cli"]

pytest.importorskip("s3fs", reason="the object-storage tests need s3fs (pip install '.[test]')")
pytest.importorskip("moto", reason="the object-storage tests need moto[server] (pip install '.[test]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 with one bucket; this process and its children find it through
    the AWS_* variables (as workers on other machines would find a real endpoint)."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        import fsspec

        deadline = time.monotonic() + 30
        while True:
            try:
                fs = fsspec.filesystem("s3", skip_instance_cache=True)
                fs.mkdir(BUCKET)
                break
            except Exception:  # noqa: BLE001 - the server is still starting
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield {"fs": fs, "url": f"s3://{BUCKET}", "env": env}
    finally:
        server.terminate()
        server.wait(timeout=30)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def omkl(*args, check=True, timeout=300, cwd=None):
    proc = subprocess.run([*OMKL, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"omkl {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def _read_all(directory, **kw):
    from omkl_dist.storage import open_stream

    blocks = list(open_stream(directory, block_size=700, shuffle=True, seed=3, **kw))
    return np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])


def test_datasets_and_models_at_s3_urls(s3, tmp_path):
    from omkl_dist import SPA
    from omkl_dist.persistence import load_model, save_model
    from omkl_dist.storage.synth import synthesize

    url = f"{s3['url']}/data/synth"
    omkl("data", "synth", "--rows", 3000, "--features", 6, "--seed", 4, "--chunk-rows", 1000, "--out", url)
    synthesize(tmp_path / "synth", rows=3000, features=6, seed=4, chunk_rows=1000)
    names = sorted(p.rsplit("/", 1)[-1] for p in s3["fs"].ls(f"{BUCKET}/data/synth"))
    assert names == ["features.zarr", "labels.parquet", "meta.json"]
    X, y = _read_all(url)
    X_local, y_local = _read_all(tmp_path / "synth")
    np.testing.assert_array_equal(X, X_local)
    np.testing.assert_array_equal(y, y_local)
    # an existing dataset is refused without overwrite, replaced with it
    with pytest.raises(FileExistsError, match="already exists"):
        synthesize(url, rows=500, features=6)
    synthesize(url, rows=1500, features=6, seed=4, chunk_rows=1000, overwrite=True)
    assert _read_all(url)[0].shape == (1500, 6)

    model = SPA(kernels="gaussian:1,2", random_state=0).fit(X[:1500], y[:1500])
    save_model(model, f"{s3['url']}/models/spa")
    loaded = load_model(f"{s3['url']}/models/spa")
    np.testing.assert_array_equal(loaded.decision_function(X[1500:]), model.decision_function(X[1500:]))
    with pytest.raises(FileExistsError, match="already exists"):
        save_model(model, f"{s3['url']}/models/spa")
    with pytest.raises(Exception, match="not an ingested dataset"):
        _read_all(f"{s3['url']}/models/spa")


@pytest.mark.slow  # (a run of `omkl` commands end to end: make test, not test-fast)
def test_commands_take_urls_and_write_predictions_to_s3(s3, tmp_path):
    """A model and a dataset at URLs for predict, serve's folder, models import and data info (click's
    Path type made `s3://b/m` the local path `s3:/b/m`: 'not a saved model', and predictions written
    into a local folder named `s3:`); predictions uploaded as one object, parquet or CSV, replaced only
    with --overwrite and only if ours; no credentials: one line saying so, not a traceback."""
    import pandas as pd

    data, model = f"{s3['url']}/p/data", f"{s3['url']}/p/model"
    omkl("data", "synth", "--rows", 2000, "--features", 4, "--seed", 2, "--out", data)
    omkl("run", "spa", "--data", data, "--model-out", model, "--quiet")
    assert "rows:      2,000" in omkl("data", "info", data).stdout
    for name in ("scores.parquet", "scores.csv.gz"):
        omkl("predict", "--model-dir", model, "--data", data, "--out", f"{s3['url']}/p/{name}", cwd=tmp_path)
    assert not (tmp_path / "s3:").exists()
    got = pd.read_parquet(f"{s3['url']}/p/scores.parquet")
    assert len(got) == 2000 and got.equals(
        pd.read_csv(f"{s3['url']}/p/scores.csv.gz", dtype={"label": str}).astype(got.dtypes)
    )
    again = omkl("predict", "--model-dir", model, "--data", data, "--out", f"{s3['url']}/p/scores.parquet", check=False)
    assert again.returncode == 2 and "--overwrite" in again.stderr
    s3["fs"].pipe(f"{BUCKET}/p/theirs.csv", b"a,b\n1,2\n")
    theirs = omkl(
        "predict",
        "--model-dir",
        model,
        "--data",
        data,
        "--out",
        f"{s3['url']}/p/theirs.csv",
        "--overwrite",
        check=False,
    )
    assert theirs.returncode == 2 and "not a predictions file" in theirs.stderr
    assert s3["fs"].cat(f"{BUCKET}/p/theirs.csv") == b"a,b\n1,2\n"
    inside = omkl("predict", "--model-dir", model, "--data", data, "--out", f"{data}/p.parquet", check=False)
    assert inside.returncode == 2 and "lies inside the data" in inside.stderr
    imported = omkl("models", "import", "--store", tmp_path / "store", "m", model).stdout
    assert json.loads(imported.strip().splitlines()[-1])["version"] == 1
    keyless = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    keyless.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"))
    denied = subprocess.run([*OMKL, "data", "info", data], capture_output=True, text=True, env=keyless, timeout=120)
    assert denied.returncode == 2 and "Traceback" not in denied.stderr
    assert "object storage: Unable to locate credentials" in denied.stderr and "AWS_ACCESS_KEY_ID" in denied.stderr


@pytest.mark.slow  # (a run of `omkl` commands end to end: make test, not test-fast)
def test_data_files_at_urls_are_read_as_local_files(s3, tmp_path, monkeypatch):
    """A day's CSV file and a folder of parquet files at URLs (it took any URL for an ingested dataset:
    'is an ingested dataset', 'not an ingested dataset directory') are read as the same bytes in a
    local file are: ingest records the URL as the source; retrain's next day read by the champion's
    column names; predict writes what it writes of the local file. Nothing at a URL is named as such;
    no copy is left behind."""
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # (where the children save their copies)
    rng = np.random.default_rng(0)
    for day, columns in (
        ("day1", ["sample_id", "a", "b", "c", "churned"]),
        ("day2", ["churned", "c", "sample_id", "a", "b"]),
    ):
        X = rng.normal(size=(900, 3))
        frame = pd.DataFrame(X, columns=["a", "b", "c"])
        frame["sample_id"] = [f"{day}-{i:05d}" for i in range(900)]
        frame["churned"] = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
        frame[columns].to_csv(f"{day}.csv", index=False)
        s3["fs"].put(f"{day}.csv", f"{BUCKET}/days/{day}.csv")
    url = f"{s3['url']}/days"
    options = ("--features", "-sample_id", "--label-column", "churned")
    reading = {"features": "-sample_id", "label_column": "churned"}
    omkl("data", "ingest", "day1.csv", *options, "--out", "local")
    omkl("data", "ingest", f"{url}/day1.csv", *options, "--out", "remote")
    local, remote = (json.loads((tmp_path / d / "meta.json").read_text()) for d in ("local", "remote"))
    assert remote["source"] == remote["source_name"] == f"{url}/day1.csv"
    assert remote["checksums"] == local["checksums"] and remote["sha256"] == local["sha256"]
    from omkl_dist.storage import ingest, read_dataset  # the library reads them so too

    assert ingest(f"{url}/day1.csv", tmp_path / "library", **reading)["checksums"] == local["checksums"]
    day2, day2_local = (read_dataset(p, **reading) for p in (f"{url}/day2.csv", "day2.csv"))
    np.testing.assert_array_equal(day2.X, day2_local.X)
    assert day2.feature_names == day2_local.feature_names == ["c", "a", "b"]
    from omkl_dist.defaults import resolve_settings
    from omkl_dist.job import DataWindow, Job
    from omkl_dist.runner import LocalRunner

    def learnt(data):  # (a job's data read so too: LocalRunner over the file at its URL)
        job = Job.build("spa", {}, data=DataWindow(data), seed=1, block_size=128, settings=resolve_settings())
        return LocalRunner(labels=reading).fit(job, data).model.to_state()[0]

    remote_arrays, local_arrays = learnt(f"{url}/day1.csv"), learnt("day1.csv")
    assert all(np.array_equal(remote_arrays[k], local_arrays[k]) for k in local_arrays)

    for day in ("day1", "day2"):  # the next day's columns in another order, by the champion's names
        first = ("--algo", "spa", *options) if day == "day1" else ()
        for store, data in (("local-store", f"{day}.csv"), ("url-store", f"{url}/{day}.csv")):
            omkl("retrain", "--store", store, "--model", "m", "--data", data, *first)
    versions = [
        json.loads(omkl("models", "list", "--store", s, "m", "--json").stdout) for s in ("local-store", "url-store")
    ]
    kept = ("version", "aliases", "rows", "holdout_mistake_rate", "champion_mistake_rate")
    assert [[{k: v[k] for k in kept} for v in vs] for vs in versions] == [
        [{k: v[k] for k in kept} for v in versions[0]]
    ] * 2
    assert len(versions[0]) == 2
    model = ("--store", "url-store", "--model", "m")
    omkl("predict", *model, "--data", "day2.csv", "--out", "local.csv")
    assert omkl("predict", *model, "--data", f"{url}/day2.csv", "--out", "-").stdout == Path("local.csv").read_text()

    for part in range(3):  # a folder of parquet files, as a Spark job writes them
        pd.read_csv("day1.csv").iloc[300 * part : 300 * (part + 1)].to_parquet(f"part-{part}.parquet", index=False)
        s3["fs"].put(f"part-{part}.parquet", f"{BUCKET}/parts/part-{part}.parquet")
    omkl("data", "ingest", f"{s3['url']}/parts", *options, "--out", "parts")
    assert json.loads(Path("parts/meta.json").read_text())["n_rows"] == 900
    missing = omkl("run", "spa", "--data", f"{url}/day3.csv", check=False)
    assert missing.returncode == 2 and f"nothing at {url}/day3.csv" in missing.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_file_for_a_job_is_ingested_into_a_folder_at_a_url(s3, tmp_path):
    """`omkl submit --data day.csv --out s3://.../model` ingests the file into `s3://.../model.data` first
    (`ingested_source`): it took the URL for a dataset already there and refused the job ("not an ingested
    dataset directory"). A second job on the same file finds it there and ingests nothing."""
    from omkl_dist.pipelines.datasource import ingested_source
    from omkl_dist.storage import open_stream

    (tmp_path / "day.csv").write_text(
        "a,b,label\n" + "".join(f"{i},{i % 7},{'yes' if i % 3 else 'no'}\n" for i in range(300))
    )
    under = f"{s3['url']}/jobs/model.data"
    target = ingested_source(str(tmp_path / "day.csv"), under=under, labels={"label_column": "label"})
    assert str(target).startswith(f"{under}/day.csv-") and open_stream(target).n_rows == 300
    stamp = s3["fs"].info(f"{str(target)[len('s3://') :]}/meta.json")["LastModified"]
    assert ingested_source(str(tmp_path / "day.csv"), under=under, labels={"label_column": "label"}) == target
    assert s3["fs"].info(f"{str(target)[len('s3://') :]}/meta.json")["LastModified"] == stamp


@pytest.mark.slow  # (a run of `omkl` commands end to end: make test, not test-fast)
def test_scheduled_windows_at_urls(s3, tmp_path):
    """`omkl schedule arrived|window --source s3://.../{date}.csv` (cron's and the DAG's steps): each
    night's file at its URL retrains the model; a day not delivered is named by its URL (the source was
    taken for a local path, s3:/..., and every day 'had not arrived')."""
    import pandas as pd

    rng = np.random.default_rng(1)
    for day in ("2026-11-29", "2026-11-30"):
        X = rng.normal(size=(600, 3))
        frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=np.where(X[:, 0] > X[:, 2], "up", "down"))
        s3["fs"].pipe(f"{BUCKET}/exports/{day}.csv", frame.to_csv(index=False).encode())
    source, store = f"{s3['url']}/exports/{{date}}.csv", tmp_path / "store"
    arrived = omkl("schedule", "arrived", "--source", source, "--date", "2026-11-29").stdout.strip()
    assert arrived == f"{s3['url']}/exports/2026-11-29.csv"
    for day, first in (("2026-11-29", "--algo spa"), ("2026-11-30", "")):
        run = ("schedule", "window", "--store", store, "--model", "m", "--source", source, "--date", day)
        summary = json.loads(omkl(*run, *(["--retrain-args", first] if first else [])).stdout.splitlines()[-1])
        assert summary["data"] == f"{s3['url']}/exports/{day}.csv" and summary["status"] == "promoted"
    assert [v["version"] for v in json.loads(omkl("models", "list", "--store", store, "m", "--json").stdout)] == [1, 2]
    late = omkl("schedule", "arrived", "--source", source, "--date", "2026-12-01", check=False)
    assert (
        late.returncode == 2 and f"{s3['url']}/exports/2026-12-01.csv: the day's window has not arrived" in late.stderr
    )


@pytest.mark.cluster
def test_cluster_job_reads_and_writes_s3(s3, tmp_path):
    """Dask workers open the S3 stream themselves; checkpoints and the final model (``omkl submit``'s
    own code path, :func:`fit_on_cluster` + ``save_model``) go to S3; the model is the one ``omkl run``
    learns from the same S3 dataset in-process, bit for bit. (The workers are an in-process
    ``LocalCluster``, so they share this process's endpoint variables; workers on other machines
    take theirs from their own environment.)"""
    from distributed import Client, LocalCluster

    from omkl_dist.distributed import fit_on_cluster
    from omkl_dist.job import make_stream_estimator
    from omkl_dist.persistence import save_model
    from omkl_dist.storage.models import read_state
    from omkl_dist.storage.synth import synthesize

    url = f"{s3['url']}/data/job"
    synthesize(url, rows=4000, features=5, seed=9, chunk_rows=1000)
    params = {"update": "S", "combination": "S", "kernels": "gaussian:0.5,1,2;poly:2"}
    omkl(
        "run",
        "omkc",
        "--update",
        "S",
        "--combination",
        "S",
        "--kernels",
        params["kernels"],
        "--block-size",
        256,
        "--seed",
        2,
        "--scaling",
        "minmax",
        "--quiet",
        "--data",
        url,
        "--model-out",
        f"{s3['url']}/models/local",
    )
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
        ) as cluster,
        Client(cluster) as client,
    ):
        fit = fit_on_cluster(
            client,
            make_stream_estimator("omkc", params, n_rows=4000, block_size=256, seed=2),
            url,
            scaling="minmax",
            seed=2,
            checkpoint_every=3,
            checkpoint_dir=f"{s3['url']}/models/remote.checkpoints",
        )
    save_model(fit.as_model(), f"{s3['url']}/models/remote")
    assert fit.model.n_samples_seen_ == 4000 and fit.accounting.workers == 2
    checkpoints = [p.rsplit("/", 1)[-1] for p in s3["fs"].ls(f"{BUCKET}/models/remote.checkpoints")]
    assert "job.json" in checkpoints and any(name.startswith("ckpt-") for name in checkpoints)
    remote_arrays, remote_meta = read_state(f"{s3['url']}/models/remote")
    local_arrays, local_meta = read_state(f"{s3['url']}/models/local")
    assert sorted(remote_arrays) == sorted(local_arrays) and remote_meta["engine"] == local_meta["engine"]
    for name, value in local_arrays.items():
        np.testing.assert_array_equal(remote_arrays[name], value, err_msg=name)
