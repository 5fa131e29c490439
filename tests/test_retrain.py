"""`omkl retrain` and the model store end to end: versions with lineage, exact continuation of the
champion, the gate, drift, idempotent reruns, batch refits, and the faults (bad windows, a damaged
champion, a locked store, SIGKILL mid-write, eight retrains at once)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest

from omkl_dist.algorithms.registry import make_estimator
from omkl_dist.defaults import JOB_PARAMS
from omkl_dist.persistence import load_model
from omkl_dist.pipelines.datasource import ingested_source
from omkl_dist.pipelines.retrain import retrain
from omkl_dist.storage import ingest, open_stream
from omkl_dist.storage.model_store import LOCK, ModelStore
from omkl_dist.storage.synth import iter_blocks, synthesize

from omkl_cli import OMKL, last_json, omkl, omkl_here

# end to end through the `omkl` command (in a child process where the process is the subject): the full suite only
pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"


def csv_window(path, *, rows, first_row, noisy_head=0, labels=("-1", "1"), features=4, seed=0):
    """A window of the synth stream as a CSV file (the head's labels replaced by coin flips)."""
    X, y = map(
        np.concatenate, zip(*iter_blocks(rows=rows, features=features, seed=seed, noise=0.01, first_row=first_row))
    )
    y = y.copy()
    y[:noisy_head] = np.where(np.random.default_rng(first_row).random(noisy_head) < 0.5, -1, 1)
    names = np.where(y > 0, labels[1], labels[0])
    with open(path, "w") as fh:
        for name, row in zip(names, X):
            fh.write(name + "," + ",".join(f"{v:.17g}" for v in row) + "\n")
    return path


WINDOW = 20_000  # rows per nightly window: several chunks and SPA rounds each, 20 % held out


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    out = tmp_path_factory.mktemp("s") / "stream"
    synthesize(out, rows=2 * WINDOW, features=4, seed=0, noise=0.01, chunk_rows=4096)
    return out


def test_two_windows_of_a_stream_give_two_versions_with_lineage(stream, tmp_path):
    store, later = tmp_path / "store", f"{WINDOW}:{2 * WINDOW}"
    first = last_json(
        omkl(
            "retrain",
            "--store",
            store,
            "--model",
            "spa",
            "--data",
            stream,
            "--rows",
            f"0:{WINDOW}",
            "--algo",
            "spa",
            "--block-size",
            1024,
            "--quiet",
        )
    )
    assert (first["status"], first["version"], first["champion"]) == ("promoted", 1, 1)
    second = last_json(
        omkl_here("retrain", "--store", store, "--model", "spa", "--data", stream, "--rows", later, "--quiet")
    )
    assert second["status"] in ("promoted", "kept") and second["version"] == 2 and second["parent"] == 1
    gate = second["gate"]
    assert (gate["challenger"] <= gate["champion"]) == (second["status"] == "promoted")
    assert second["champion"] == (2 if second["status"] == "promoted" else 1)
    lineage = ModelStore(store, "spa").lineage(2)
    assert lineage["parent"] == 1 and lineage["algo"] == "spa" and lineage["block_size"] == 1024
    assert lineage["window"]["rows"] == [WINDOW, 2 * WINDOW]
    assert lineage["window"]["train_rows"] == [WINDOW, WINDOW + WINDOW * 4 // 5]
    assert len(lineage["window"]["sha256"]) == 64 and lineage["packages"]["numpy"] == np.__version__
    assert lineage["code"]["omkl-dist"] and lineage["metrics"]["holdout_mistake_rate"] == gate["challenger"]
    assert lineage["metrics"]["train"]["n"] == WINDOW * 4 // 5 and lineage["gate"]["decision"] == gate["decision"]
    assert lineage["drift"]["checked_rows"] == WINDOW
    # the report: report.json and the plots, real PNG images
    report = tmp_path / "store" / "spa" / "reports" / "v2"
    assert json.loads((report / "report.json").read_text())["summary"]["version"] == 2
    for name in ("mistakes.png", "support.png", "weights.png", "speed.png", "history.png"):
        assert (report / name).read_bytes()[:8] == PNG, name
    # a rerun of the same window returns the same version and trains nothing
    again = last_json(
        omkl_here("retrain", "--store", store, "--model", "spa", "--data", stream, "--rows", later, "--quiet")
    )
    assert (again["status"], again["version"]) == ("exists", 2)
    assert ModelStore(store, "spa").versions() == [1, 2]
    listing = omkl_here("models", "list", "--store", store, "spa").stdout
    assert "v1" in listing and "v2" in listing and "champion" in listing
    assert "2 version(s) verified" in omkl_here("models", "verify", "--store", store, "spa").stdout


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "stream"
    synthesize(out, rows=6_000, features=4, seed=2, noise=0.02, chunk_rows=1000)
    return out


@pytest.mark.parametrize(
    "algo, params",
    [("omkc", {"update": "S", "combination": "S"}), ("spa", {}), ("om2", {}), ("oks", {}), ("bpas", {"budget": 40})],
)
def test_a_retrain_continues_the_champions_exact_state(small, tmp_path, algo, params):
    store = tmp_path / "store"
    retrain(store, "m", small, rows="0:3000", algo=algo, params=params, block_size=64, seed=4)
    retrain(store, "m", small, rows="3000:6000", block_size=999, seed=999)  # (the champion's own settings rule)
    # the same model by partial_fit in one process: head of window 1, then head of window 2
    reference = load_model(ModelStore(store, "m").path(1)).estimator
    X, y = next(iter(open_stream(small, block_size=2400, start=3000, stop=5400)))
    reference.partial_fit(X, y)  # (one call: the segments of any feed cut at multiples of feed_rows())
    saved = load_model(ModelStore(store, "m").path(2))
    ours = saved.estimator
    got, want = ours.to_state(), reference.to_state()
    assert sorted(got[0]) == sorted(want[0])
    for name in got[0]:
        np.testing.assert_array_equal(got[0][name], want[0][name], err_msg=name)
    assert got[1]["engine"] == want[1]["engine"]
    assert saved.job["seed"] == 4 and saved.job["block_size"] == 64
    # the first version: a fresh model over window 1's head, fed whole rounds
    fresh = make_estimator(algo, block_size=64, random_state=4, **{**JOB_PARAMS.get(algo, {}), **params})
    if algo == "oks":
        fresh.set_params(horizon=2400)
    for X, y in open_stream(small, block_size=fresh.feed_rows(), stop=2400):
        fresh.partial_fit(X, y, classes=[-1, 1])
    first = load_model(ModelStore(store, "m").path(1)).estimator
    for name, value in first.to_state()[0].items():
        np.testing.assert_array_equal(value, fresh.to_state()[0][name], err_msg=name)


def test_gate_keeps_the_champion_and_drift_is_signalled(tmp_path):
    store = tmp_path / "store"
    clean = ingest(csv_window(tmp_path / "d1.csv", rows=4000, first_row=0), tmp_path / "d1")
    assert clean["label_map"] == [["-1", -1], ["1", 1]]
    retrain(store, "m", tmp_path / "d1", algo="perceptron-u", block_size=64)
    # day 2: the head's labels are coin flips (a broken feed), the tail is clean
    ingest(csv_window(tmp_path / "d2.csv", rows=4000, first_row=4000, noisy_head=3200), tmp_path / "d2")
    day2 = retrain(store, "m", tmp_path / "d2", when="drift")
    assert day2["drift"]["alarms"] and day2["drift"]["alarms"][0] < 3200  # signalled in the noisy head
    assert day2["status"] == "kept" and day2["champion"] == 1 and day2["version"] == 2
    assert day2["gate"]["challenger"] > day2["gate"]["champion"]
    assert "kept the champion" in day2["gate"]["decision"]
    doc = json.loads((store / "m" / "reports" / "v2" / "report.json").read_text())
    assert doc["alarms"] == day2["drift"]["alarms"] and set(doc["curves"]) == {"champion", "challenger"}
    # day 3: clean data, no drift: --when drift trains nothing
    ingest(csv_window(tmp_path / "d3.csv", rows=4000, first_row=8000), tmp_path / "d3")
    day3 = retrain(store, "m", tmp_path / "d3", when="drift")
    assert day3["status"] == "skipped" and day3["drift"]["alarms"] == []
    assert ModelStore(store, "m").versions() == [1, 2]
    assert ModelStore(store, "m").aliases() == {"champion": 1}


def test_batch_models_are_refitted_per_window(tmp_path):
    ingest(csv_window(tmp_path / "a.csv", rows=300, first_row=0), tmp_path / "a")
    ingest(csv_window(tmp_path / "b.csv", rows=300, first_row=300), tmp_path / "b")
    store = tmp_path / "store"
    first = retrain(
        store, "mk", tmp_path / "a", algo="simplemkl", params={"kernels": "poly:1,2;gaussian:1"}, scaling="standard"
    )
    second = retrain(store, "mk", tmp_path / "b", params={"C": 10.0})
    assert first["status"] == "promoted" and second["version"] == 2
    saved = load_model(ModelStore(store, "mk").path(2))
    assert type(saved.estimator).__name__ == "SimpleMKL" and saved.estimator.C == 10.0
    assert ModelStore(store, "mk").lineage(2)["scaling"] == saved.scaler.method == "standard"
    assert second["train"]["n"] == 240 and 0.0 <= second["gate"]["challenger"] <= 0.5


def test_bad_windows_and_a_damaged_champion_publish_nothing(tmp_path):
    store = tmp_path / "store"
    ingest(csv_window(tmp_path / "a.csv", rows=1000, first_row=0), tmp_path / "a")
    omkl_here("retrain", "--store", store, "--model", "m", "--data", tmp_path / "a", "--algo", "perceptron", "--quiet")
    ingest(csv_window(tmp_path / "w5.csv", rows=500, first_row=0, features=5), tmp_path / "w5")
    ingest(csv_window(tmp_path / "ab.csv", rows=500, first_row=0, labels=("no", "yes")), tmp_path / "ab")
    cases = [
        ([tmp_path / "w5"], "the window has 5 features, the champion (version 1) 4: nothing was published"),
        ([tmp_path / "ab"], "the window's label 'no'"),
        ([tmp_path / "a.csv", "--label-column", "9"], "label column 9 is outside the file's 5 columns"),
        ([tmp_path / "a", "--rows", "10:5"], "--rows 10:5"),
        ([tmp_path / "a", "--algo", "spa"], "the champion is a perceptron model"),
        ([tmp_path / "a", "--drift-threshold", "0"], "threshold must be a finite number > 0"),
    ]
    for data, message in cases:
        proc = omkl_here("retrain", "--store", store, "--model", "m", "--data", *data, "--quiet", check=False)
        assert proc.returncode == 2 and message in proc.stderr, (data, proc.stderr)
        assert last_json(proc)["status"] == "error"
    notafile = tmp_path / "file"
    notafile.write_text("")
    proc = omkl_here("retrain", "--store", notafile, "--model", "m", "--data", tmp_path / "a", check=False)
    assert proc.returncode == 2 and "is a file, not a folder" in proc.stderr
    assert ModelStore(store, "m").versions() == [1]
    # the champion edited by hand: refused, named, nothing published
    meta_path = ModelStore(store, "m").path(1) / "model.json"
    edited = re.sub(r'"kernel": "[^"]*"', '"kernel": "gaussian:1"', meta_path.read_text(), count=1)
    assert edited != meta_path.read_text()
    meta_path.write_text(edited)
    ingest(csv_window(tmp_path / "b.csv", rows=1000, first_row=1000), tmp_path / "b")
    proc = omkl_here("retrain", "--store", store, "--model", "m", "--data", tmp_path / "b", "--quiet", check=False)
    assert proc.returncode == 2 and "versions/1" in proc.stderr and "edited or damaged" in proc.stderr
    assert ModelStore(store, "m").versions() == [1]
    assert omkl_here("models", "verify", "--store", store, "m", check=False).returncode == 2


def test_a_locked_store_exits_75_with_a_json_line(tmp_path):
    ingest(csv_window(tmp_path / "a.csv", rows=1000, first_row=0), tmp_path / "a")
    store = ModelStore(tmp_path / "store", "m")
    store.dir.mkdir(parents=True)
    fd = os.open(store.dir / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = omkl(
            "retrain",
            "--store",
            store.root,
            "--model",
            "m",
            "--data",
            tmp_path / "a",
            "--algo",
            "perceptron",
            "--lock-timeout",
            "0.3",
            "--quiet",
            check=False,
        )
    finally:
        os.close(fd)
    assert proc.returncode == 75 and "try again later" in proc.stderr
    assert last_json(proc)["status"] == "busy" and store.versions() == []
    assert not any((store.dir / "staging").iterdir())  # its staged version was removed


def test_sigkill_while_writing_leaves_no_half_version(tmp_path):
    ingest(csv_window(tmp_path / "a.csv", rows=6000, first_row=0), tmp_path / "a")
    store = ModelStore(tmp_path / "store", "m")
    staging = store.dir / "staging"
    proc = subprocess.Popen(
        [
            *OMKL,
            "retrain",
            "--store",
            str(store.root),
            "--model",
            "m",
            "--data",
            str(tmp_path / "a"),
            "--algo",
            "omkc",
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (staging.is_dir() and any(staging.iterdir())) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)  # while the version is being written into staging/
    proc.wait()
    assert any(staging.iterdir()), "the retrain ended before it was killed mid-write"
    assert store.versions() == [] and store.verify()["problems"] == []
    again = last_json(
        omkl_here(
            "retrain", "--store", store.root, "--model", "m", "--data", tmp_path / "a", "--algo", "omkc", "--quiet"
        )
    )
    assert again["status"] == "promoted" and store.versions() == [1]
    assert not any(staging.iterdir())  # the dead writer's folder was swept
    assert store.verify()["problems"] == []


def test_eight_retrains_at_once_on_one_store(tmp_path):
    ingest(csv_window(tmp_path / "a.csv", rows=8000, first_row=0), tmp_path / "a")
    root = tmp_path / "store"
    procs = [
        subprocess.Popen(
            [
                *OMKL,
                "retrain",
                "--store",
                str(root),
                "--model",
                "m",
                "--data",
                str(tmp_path / "a"),
                "--partition",
                f"{i}/8",
                "--algo",
                "perceptron-u",
                "--lock-timeout",
                "5",
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    outcomes = [(p.wait(timeout=300), p.stdout.read()) for p in procs]
    for code, out in outcomes:
        assert code in (0, 75), out
    published = [json.loads(out.strip().splitlines()[-1]) for code, out in outcomes if code == 0]
    store = ModelStore(root, "m")
    assert len(published) >= 1 and store.versions() == list(range(1, len(published) + 1))
    assert sorted(s["version"] for s in published) == store.versions()
    assert sum(s["status"] == "promoted" for s in published) == 1  # only the first one found no champion
    events = store.events()
    assert [e["version"] for e in events if e["event"] == "publish"] == store.versions()
    assert [e["event"] for e in events].count("promote") == 1
    assert store.verify()["problems"] == []
    windows = {tuple(store.lineage(v)["window"]["rows"]) for v in store.versions()}
    assert len(windows) == len(published)  # each run published its own window


def test_a_labelled_file_is_a_window_ingested_once_into_the_store(tmp_path):
    """`--data day.csv --label-column last`: the file is ingested into STORE/NAME/windows/day.csv-<digest>
    (label options part of the digest) and a rerun on the same file reuses it and finds its version."""
    day = tmp_path / "day.csv"
    X, y = map(np.concatenate, zip(*iter_blocks(rows=3000, features=4, seed=0, noise=0.01)))
    day.write_text(
        "".join(",".join(f"{v:.17g}" for v in row) + ("," + ("yes" if t > 0 else "no")) + "\n" for row, t in zip(X, y))
    )
    store = tmp_path / "store"
    args = (
        "retrain",
        "--store",
        store,
        "--model",
        "m",
        "--data",
        day,
        "--label-column",
        "last",
        "--positive-class",
        "yes",
        "--quiet",
    )
    first = last_json(omkl_here(*args, "--algo", "spa"))
    windows = sorted((store / "m" / "windows").iterdir())
    assert first["status"] == "promoted" and len(windows) == 1 and first["window"]["source"] == str(windows[0])
    assert load_model(ModelStore(store, "m").path(1)).label_map == [["no", -1], ["yes", 1]]
    assert windows[0].name.startswith("day.csv-")  # the report's and trace's name for the window
    again = last_json(omkl_here(*args))
    assert again["status"] == "exists" and sorted((store / "m" / "windows").iterdir()) == windows
    words_last = omkl_here("retrain", "--store", store, "--model", "m", "--data", day, "--quiet", check=False)
    assert words_last.returncode == 2 and "--label-column last" in words_last.stderr
    on_ingested = omkl_here(
        "retrain",
        "--store",
        store,
        "--model",
        "m",
        "--data",
        windows[0],
        "--label-column",
        "last",
        "--quiet",
        check=False,
    )
    assert on_ingested.returncode == 2 and "chosen at ingest" in on_ingested.stderr
    # a window ingested by an earlier version, in a folder named by the digest alone, is still found
    legacy = windows[0].with_name(windows[0].name.removeprefix("day.csv-"))
    windows[0].rename(legacy)
    found = ingested_source(
        day, under=store / "m" / "windows", labels={"label_column": "last", "positive_class": "yes"}
    )
    assert found == legacy and sorted((store / "m" / "windows").iterdir()) == [legacy]
