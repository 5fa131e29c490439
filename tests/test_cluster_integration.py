"""The distributed engine on real processes: `omkl cluster up` (a `dask scheduler` and two
`dask worker` processes), `omkl submit`, checkpoints, a worker killed with SIGKILL mid-job, the
client killed mid-job and resumed, and the bad-input cases. Every job's model is compared bit for
bit with the in-process engine's (same seed and block size; block-sync mode for the stochastic
OMKC variants, which sample with the block-start weights on a cluster)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from omkl_dist import load_model
from omkl_dist.cluster.local import connect, read_state
from omkl_dist.cluster.processes import group_members
from omkl_dist.cluster.profiler import profiler_hangs
from omkl_dist.defaults import BLOCK_SIZE
from omkl_dist.engine.local import ROUND_GROWTH, Rounds
from omkl_dist.storage.models import read_state as read_model
from omkl_dist.storage.outputs import process_alive
from omkl_dist.storage.synth import synthesize

from omkl_cli import OMKL, last_json, omkl, omkl_here

pytestmark = pytest.mark.cluster
ROWS = 40_000  # SPA's rounds grow from 1 to 4 blocks of 1,024 (25 rounds here: a kill lands mid-job)
JOB = ["--block-size", "1024", "--seed", "3", "--quiet", "--json"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("cluster")
    out = omkl("cluster", "up", "--run-dir", run_dir, "--workers", 2, "--threads", 1, "--warm", "spa")
    assert "scheduler  tcp://127.0.0.1:" in out.stdout and "dashboard  http://127.0.0.1:" in out.stdout
    # SPA's kernels were compiled (or found in the cache) while the processes started, and it says so
    assert re.search(
        r"^(compiling kernels for spa, once per installation|kernels for spa loaded from numba's cache): "
        r"\d+\.\d s$",
        out.stdout,
        re.M,
    ), out.stdout
    state = read_state(run_dir)
    try:
        yield state
    finally:
        omkl("cluster", "down", "--run-dir", run_dir)
        pids = state["pids"]["workers"] + [state["pids"]["scheduler"]]
        assert not any(process_alive(p) or group_members(p) for p in pids), "a cluster process outlived `cluster down`"
        assert not (Path(run_dir) / "cluster.json").exists()
        again = omkl("cluster", "down", "--run-dir", run_dir)  # stopping twice is no error
        assert "no cluster is running" in again.stdout


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "stream"
    synthesize(out, rows=ROWS, features=18, seed=5, noise=0.05, chunk_rows=8192)
    return out


@pytest.fixture(scope="module")
def local_model(stream, tmp_path_factory):
    """The in-process engine's model for the same job (SPA samples with the current weights on a
    cluster too: one shard runs its whole recurrence)."""
    out = tmp_path_factory.mktemp("local") / "model"
    omkl_here(
        "run",
        "spa",
        "--data",
        stream,
        "--block-size",
        1024,
        "--seed",
        3,
        "--quiet",
        "--model-out",
        out,
        "--trace-out",
        out.parent / "trace.json",
    )
    return read_model(out)


def assert_same_model(path, reference):
    arrays, meta = read_model(path)
    ref_arrays, ref_meta = reference
    assert sorted(arrays) == sorted(ref_arrays)
    for name in arrays:
        np.testing.assert_array_equal(arrays[name], ref_arrays[name], err_msg=name)
    assert meta["engine"] == ref_meta["engine"]


def _submit(cluster, stream, out, *extra, check=True):
    return omkl(
        "submit",
        "spa",
        "--scheduler",
        cluster["scheduler_address"],
        "--data",
        stream,
        "--out",
        out,
        *JOB,
        *extra,
        check=check,
    )


def test_status_lists_two_real_worker_processes(cluster):
    info = json.loads(omkl("cluster", "status", "--run-dir", cluster["run_dir"], "--json").stdout)
    assert info["reachable"] and len(info["workers"]) == 2
    assert all(info["processes"].values())
    with connect(cluster["scheduler_address"]) as client:
        pids = client.run(os.getpid)
        profiling = client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks)
    assert len(set(pids.values()) | {os.getpid()}) == 3  # two worker processes besides this one
    # Dask's profiler can hang a worker on Python 3.11 (cluster/profiler.py): off there
    assert set(profiling.values()) == {not profiler_hangs()}


def test_submit_equals_local_engine_bit_for_bit(cluster, stream, local_model, tmp_path):
    out, trace_out = tmp_path / "model", tmp_path / "trace.json"
    report = json.loads(_submit(cluster, stream, out, "--trace-out", trace_out).stdout.strip().splitlines()[-1])
    assert report["n"] == ROWS and report["workers"] == 2 and report["shards"] == 2
    rounds, g, n = Rounds(1024, 16384, 16384, ROUND_GROWTH), 0, 0  # SPA's rounds: whole blocks, growing
    while g < ROWS:
        g, n = g + rounds.length(g, ROWS - g), n + 1
    assert report["rounds"] == n < ROWS // 1024 and not report["worker_failures"]
    assert_same_model(out, local_model)
    assert not Path(str(out) + ".checkpoints").exists()  # removed after a good end
    # the trace `omkl run` writes, with the speed at each round's end: `omkl report` draws it
    trace = json.loads(trace_out.read_text())["trace"]
    assert trace["timed_from"] == 0 and trace["block_ends"][-1] == ROWS == trace["n_seen"][-1]
    speed = [trace[key] for key in ("block_ends", "seconds", "instances_per_second")]  # (a value at each round's end)
    assert [len(series) for series in speed] == [n] * 3
    drawn = omkl_here("report", trace_out, "--out", tmp_path / "report").stdout
    assert "mistakes.png, support.png, weights.png, speed.png" in drawn


def _wait_for_checkpoint(directory, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if list(Path(directory).glob("ckpt-*/model.json")):
            return
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        time.sleep(0.05)
    raise AssertionError("no checkpoint appeared")


def _start_submit(cluster, stream, out, *extra):
    return subprocess.Popen(
        [
            *OMKL,
            "submit",
            "spa",
            "--scheduler",
            cluster["scheduler_address"],
            "--data",
            str(stream),
            "--out",
            str(out),
            *JOB,
            *map(str, extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_a_worker(cluster, which="shard"):
    """SIGKILL a worker process: the one hosting the coordinator (and a shard) -- the job's first
    worker by address -- or the other one, hosting only a shard."""
    with connect(cluster["scheduler_address"]) as client:
        pids = client.run(os.getpid)
    address = sorted(pids)[0 if which == "coordinator" else -1]
    os.kill(pids[address], signal.SIGKILL)
    return pids[address]


@pytest.mark.parametrize("which", ["shard", "coordinator"])
def test_worker_killed_mid_job_recovers_to_the_same_model(cluster, stream, local_model, tmp_path, which):
    out = tmp_path / "model"
    proc = _start_submit(cluster, stream, out, "--checkpoint-every", 2, "--keep-checkpoints")
    _wait_for_checkpoint(str(out) + ".checkpoints", proc)
    _kill_a_worker(cluster, which)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    report = json.loads(stdout.strip().splitlines()[-1])
    assert len(report["worker_failures"]) >= 1
    assert_same_model(out, local_model)
    with connect(cluster["scheduler_address"]) as client:  # the nanny brought the worker back
        client.wait_for_workers(2, timeout=60)


def test_client_killed_then_resume_gives_the_same_model(cluster, stream, local_model, tmp_path):
    out = tmp_path / "model"
    proc = _start_submit(cluster, stream, out, "--checkpoint-every", 2)
    _wait_for_checkpoint(str(out) + ".checkpoints", proc)
    proc.kill()
    proc.communicate()
    assert not out.exists()
    again = _submit(cluster, stream, out, "--checkpoint-every", 2, "--resume", "--trace-out", tmp_path / "trace.json")
    report = json.loads(again.stdout.splitlines()[-1])
    assert report["resumed_from"] > 0
    assert_same_model(out, local_model)
    trace = json.loads((tmp_path / "trace.json").read_text())["trace"]  # its speed: the rounds after the checkpoint
    assert trace["timed_from"] == report["resumed_from"] and trace["block_ends"][-1] == ROWS


def test_resume_refuses_the_checkpoints_of_another_job(cluster, stream, tmp_path):
    out = tmp_path / "model"
    proc = _start_submit(cluster, stream, out, "--checkpoint-every", 2)
    _wait_for_checkpoint(str(out) + ".checkpoints", proc)
    proc.kill()
    proc.communicate()
    res = omkl(
        "submit",
        "omkc",
        "--scheduler",
        cluster["scheduler_address"],
        "--data",
        stream,
        "--out",
        out,
        "--block-size",
        1024,
        "--seed",
        3,
        "--quiet",
        "--resume",
        check=False,
    )
    assert res.returncode == 2
    assert "belong to another job" in res.stderr
    assert "algorithm: checkpoint has 'spa', this command 'omkc'" in res.stderr


def test_worker_dying_beyond_the_retries_gives_up_and_keeps_the_checkpoint(cluster, stream, tmp_path):
    out = tmp_path / "model"
    proc = _start_submit(cluster, stream, out, "--checkpoint-every", 2, "--max-retries", 0)
    _wait_for_checkpoint(str(out) + ".checkpoints", proc)
    _kill_a_worker(cluster)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2
    assert "gave up after 1 worker failures" in stderr and "--resume" in stderr
    ckpts = sorted(Path(str(out) + ".checkpoints").glob("ckpt-*"))
    assert ckpts and read_model(ckpts[-1])[1]["engine"]["n_seen"] > 0
    with connect(cluster["scheduler_address"]) as client:
        client.wait_for_workers(2, timeout=60)


def test_submit_without_a_scheduler_goes_to_the_cluster_omkl_cluster_up_started(cluster, stream, tmp_path):
    """`omkl cluster up` then `omkl submit ALGO` from the same folder: the job finds the cluster in
    runs/cluster; without one there, one clear error before any work."""
    here = tmp_path / "project"
    (here / "runs").mkdir(parents=True)
    args = ("submit", "spa", "--data", stream, "--out", here / "model", *JOB)
    res = omkl(*args, check=False, cwd=here)
    assert res.returncode == 2 and "no --scheduler given, and no cluster was started in runs/cluster" in res.stderr
    assert "omkl cluster up" in res.stderr and sorted(p.name for p in here.iterdir()) == ["runs"]
    (here / "runs" / "cluster").symlink_to(cluster["run_dir"])
    report = json.loads(omkl(*args, cwd=here).stdout.strip().splitlines()[-1])
    assert report["workers"] == 2 and report["n"] == ROWS and (here / "model" / "model.json").is_file()


def test_unreachable_scheduler_is_a_clear_error_not_a_hang(stream, tmp_path):
    res = omkl(
        "submit",
        "spa",
        "--scheduler",
        "tcp://127.0.0.1:9",
        "--timeout",
        2,
        "--data",
        stream,
        "--out",
        tmp_path / "m",
        *JOB,
        check=False,
        timeout=60,
    )
    assert res.returncode == 2
    assert "no Dask scheduler answered at tcp://127.0.0.1:9" in res.stderr and "omkl cluster up" in res.stderr


def test_bad_data_and_bad_output_are_clear_errors(cluster, stream, tmp_path):
    res = _submit(cluster, tmp_path / "nothing-here", tmp_path / "m", check=False)
    assert res.returncode == 2 and "nothing-here" in res.stderr
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = _submit(cluster, stream, blocker / "model", check=False)
    assert res.returncode == 2 and "is a file, not a folder" in res.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("meta.json", "labels.parquet"):  # the features are missing: workers cannot read them
        (broken / name).write_bytes((Path(stream) / name).read_bytes())
    res = _submit(cluster, broken, tmp_path / "m2", check=False)
    assert res.returncode == 2 and "broken" in res.stderr
    assert not (tmp_path / "m2").exists()


def test_every_cluster_process_listens_on_loopback_only(cluster):
    """The scheduler, the nannies and the workers (with their HTTP servers) bind 127.0.0.1 only."""
    import psutil

    groups = set(cluster["pids"]["workers"] + [cluster["pids"]["scheduler"]])
    listening = {}
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) in groups:
                listening[proc.pid] = [
                    c.laddr for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
                ]
        except (psutil.Error, ProcessLookupError):
            continue
    addresses = [addr for found in listening.values() for addr in found]
    assert len(listening) >= 5 and len(addresses) >= 7, listening  # scheduler + 2 x (nanny, worker)
    assert all(addr.ip in ("127.0.0.1", "::1") for addr in addresses), listening


def test_tls_cluster_accepts_only_certified_clients(stream, tmp_path):
    certs, run_dir = tmp_path / "certs", tmp_path / "tls-cluster"
    omkl("cluster", "certs", "--out", certs)
    assert (certs / "node-key.pem").stat().st_mode & 0o077 == 0  # the key is private
    omkl("cluster", "up", "--run-dir", run_dir, "--workers", 1, "--tls-dir", certs)
    try:
        address = read_state(run_dir)["scheduler_address"]
        assert address.startswith("tls://127.0.0.1:")
        with pytest.raises(ConnectionError, match="uses TLS"):
            connect(address, timeout=3).close()  # no certificate: refused before trying
        omkl("cluster", "certs", "--out", tmp_path / "other")
        with pytest.raises(ConnectionError, match="no Dask scheduler answered"):
            connect(address, tls_dir=tmp_path / "other", timeout=3).close()  # another CA: the handshake fails
        report = json.loads(
            omkl(
                "submit",
                "spa",
                "--scheduler",
                address,
                "--tls-dir",
                certs,
                "--data",
                stream,
                "--out",
                tmp_path / "model",
                "--limit",
                3000,
                *JOB,
            ).stdout.splitlines()[-1]
        )
        assert report["n"] == 3000 and report["workers"] == 1
    finally:
        omkl("cluster", "down", "--run-dir", run_dir)


def test_mkboost_on_the_real_cluster_equals_the_local_fit(cluster, data_dir):
    args = ["fit", "--algo", "mkboost", "--variant", "S2", "--data", "ionosphere", "--trials", 6, "--seed", 1, "--json"]
    local = json.loads(omkl_here(*args).stdout.splitlines()[-1])
    remote = json.loads(omkl(*args, "--scheduler", cluster["scheduler_address"]).stdout.splitlines()[-1])
    for key in ("accuracy", "kernel_counts", "alphas", "trial_kernels"):
        assert remote[key] == local[key], key


# (every algorithm and option: test_cluster_every_algorithm.py, test_distributed_engine.py in-process)
@pytest.mark.parametrize(
    ("algo", "extra", "local_extra"),
    [("bpas", ["--budget", 40], []), ("omkc", ["--update", "S", "--combination", "S"], [])],
)  # sequential sampling, as in-process
def test_other_algorithms_on_the_cluster_equal_local(cluster, stream, tmp_path, algo, extra, local_extra):
    common = [*extra, "--data", stream, "--block-size", 512, "--seed", 2, "--limit", 6000, "--quiet"]
    omkl_here(
        "run", algo, *common, *local_extra, "--model-out", tmp_path / "local", "--trace-out", tmp_path / "trace.json"
    )
    omkl("submit", algo, "--scheduler", cluster["scheduler_address"], *common, "--out", tmp_path / "remote")
    assert_same_model(tmp_path / "remote", read_model(tmp_path / "local"))
    if "--block-sync" not in extra and "S" in extra:  # the sequential algorithm, not the block-sync one
        sync = tmp_path / "sync"
        omkl_here("run", algo, *common, "--block-sync", "--model-out", sync, "--trace-out", tmp_path / "trace2.json")
        assert read_model(sync)[1]["engine"]["n_mistakes"] != read_model(tmp_path / "local")[1]["engine"]["n_mistakes"]


def test_budget_calls_of_several_blocks_on_the_cluster_equal_local(cluster, stream, tmp_path):
    """BPAS in blocks of 1,024: a call per block over a job's first 8,192 rows, then four blocks per call
    (``kernel_split_feed``); `omkl submit` learns the calibration in the same batches, and a retrain
    on the cluster continues the champion with the same calls (counted from its window's first row)."""
    common = ["--budget", 40, "--data", stream, "--block-size", 1024, "--seed", 2, "--limit", 30_000, "--quiet"]
    omkl_here("run", "bpas", *common, "--model-out", tmp_path / "local")
    omkl("submit", "bpas", "--scheduler", cluster["scheduler_address"], *common, "--out", tmp_path / "remote")
    reference = read_model(tmp_path / "local")
    assert_same_model(tmp_path / "remote", reference)
    assert read_model(tmp_path / "remote")[1]["calibration"] == reference[1]["calibration"]
    here, there = tmp_path / "here", tmp_path / "there"
    job = ("--algo", "bpas", "--param", "budget=40", "--block-size", 1024, "--seed", 2, "--quiet", "--no-plots")
    omkl_here("retrain", "--store", here, "--model", "b", "--data", stream, "--rows", "0:10000", *job)
    shutil.copytree(here, there)
    window = ("--data", stream, "--rows", "10000:30000", "--quiet", "--no-plots")
    omkl_here("retrain", "--store", here, "--model", "b", *window)
    omkl("retrain", "--store", there, "--model", "b", *window, "--scheduler", cluster["scheduler_address"])
    version = read_model(here / "b" / "versions" / "2")
    assert_same_model(there / "b" / "versions" / "2", version)
    assert read_model(there / "b" / "versions" / "2")[1]["calibration"] == version[1]["calibration"]


def test_run_and_submit_with_the_default_settings_learn_the_same_model(cluster, tmp_path):
    """One set of defaults (block size, scaling, kernels, seed) for `omkl run` and `omkl submit`:
    the same job given no --block-size, --seed or settings learns the same model, bit for bit, and
    both models record the same job."""
    data = tmp_path / "small"
    synthesize(data, rows=600, features=4, seed=8, noise=0.05, chunk_rows=256)
    omkl_here(
        "run", "spa", "--data", data, "--quiet", "--model-out", tmp_path / "local", "--trace-out", tmp_path / "t.json"
    )
    address = cluster["scheduler_address"]
    omkl("submit", "spa", "--scheduler", address, "--data", data, "--quiet", "--out", tmp_path / "remote")
    local = read_model(tmp_path / "local")
    assert_same_model(tmp_path / "remote", local)
    jobs = [read_model(tmp_path / name)[1]["provenance"]["job"] for name in ("local", "remote")]
    assert jobs[0]["block_size"] == BLOCK_SIZE and jobs[0]["settings"]["origin"] == "defaults"
    del jobs[0]["engine"], jobs[1]["engine"]  # (how a cluster runs it: not what it learns)
    assert jobs[0] == jobs[1]


def test_run_and_submit_of_a_file_past_one_chunk_learn_it_in_one_order(cluster, tmp_path):
    """A data file longer than a storage chunk (submit ingests it in 65,536-row chunks), sorted by
    label: `omkl run` on the file and `omkl submit` of it learn its rows in the same order -- the
    same model, bit for bit --, shuffled across both chunks at once (no note on the reports)."""
    rng = np.random.default_rng(5)
    n = 70_000
    X = rng.standard_normal((n, 2))
    y = np.sort(np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, 1, -1))  # sorted: the labels in two runs
    data = tmp_path / "sorted.txt"
    data.write_text("".join(f"{label} {a:.6f} {b:.6f}\n" for label, (a, b) in zip(y, X)))
    common = ["--budget", 20, "--kernels", "gaussian:1,4", "--data", data, "--quiet", "--json"]
    here = omkl_here("run", "rbp", *common, "--model-out", tmp_path / "local", "--trace-out", tmp_path / "t.json")
    there = omkl("submit", "rbp", "--scheduler", cluster["scheduler_address"], *common, "--out", tmp_path / "remote")
    assert_same_model(tmp_path / "remote", read_model(tmp_path / "local"))
    for proc in (here, there):
        assert "advice" not in json.loads(proc.stdout.splitlines()[-1])


def test_stochastic_omkc_survives_a_killed_worker_and_a_resume(cluster, stream, tmp_path):
    """OMKC (S,S)'s row-split rounds (the first shard runs the recurrence): a killed coordinator
    worker and a killed client resumed later both end in the sequential in-process model."""
    job = [
        "--update",
        "S",
        "--combination",
        "S",
        "--block-size",
        256,
        "--seed",
        4,
        "--limit",
        6_000,  # 24 blocks in 8 rounds: a checkpoint every 3 rounds, then a kill, lands mid-job
        "--quiet",
        "--json",
    ]
    omkl_here(
        "run", "omkc", *job, "--data", stream, "--model-out", tmp_path / "local", "--trace-out", tmp_path / "trace.json"
    )
    job = [str(a) for a in job]
    local = read_model(tmp_path / "local")

    def start(out, *extra):
        return subprocess.Popen(
            [
                *OMKL,
                "submit",
                "omkc",
                "--scheduler",
                cluster["scheduler_address"],
                "--data",
                str(stream),
                "--out",
                str(out),
                *job,
                "--checkpoint-every",
                "3",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    proc = start(tmp_path / "killed", "--keep-checkpoints")
    _wait_for_checkpoint(str(tmp_path / "killed") + ".checkpoints", proc)
    _kill_a_worker(cluster, "coordinator")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert len(json.loads(stdout.strip().splitlines()[-1])["worker_failures"]) >= 1
    assert_same_model(tmp_path / "killed", local)
    with connect(cluster["scheduler_address"]) as client:
        client.wait_for_workers(2, timeout=60)
    proc = start(tmp_path / "resumed")
    _wait_for_checkpoint(str(tmp_path / "resumed") + ".checkpoints", proc)
    proc.kill()
    proc.communicate()
    resumed = start(tmp_path / "resumed", "--resume")
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr[-3000:]
    assert json.loads(stdout.strip().splitlines()[-1])["resumed_from"] > 0
    assert_same_model(tmp_path / "resumed", local)


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    """A 26-class problem (3,000 rows, 16 features, like UCI letter) ingested from a parquet-style table."""
    import pyarrow as pa
    from sklearn.datasets import make_classification

    from omkl_dist.storage import ingest

    X, y = make_classification(
        n_samples=3000,
        n_features=16,
        n_informative=12,
        n_redundant=0,
        n_classes=26,
        n_clusters_per_class=1,
        class_sep=2.0,
        random_state=0,
    )
    table = pa.table({**{f"f{j}": X[:, j] for j in range(16)}, "target": [chr(ord("a") + c) for c in y]})
    out = tmp_path_factory.mktemp("data") / "letters"
    ingest(table, out, chunk_rows=1000)
    return out


# (every algorithm, multi-class included, also runs on an in-process cluster with a lost worker:
# test_cluster_every_algorithm.py, test_distributed_engine.py; here the real processes, one of each
# round kind: OM-2 and multi-class OMKC split rows, BPAS kernels)
@pytest.mark.parametrize("algo", [["om2"], ["omkc"], ["bpas", "--budget", 100]], ids=["om2", "omkc-DD", "bpas"])
def test_multiclass_models_on_the_cluster_equal_local(cluster, letters, tmp_path, algo):
    """26 classes: the cluster's model (row-split rounds, the first shard running the in-process
    multi-class recurrence; the budget baselines' kernels on their shards, the coordinator replaying
    the multi-class combiner) is the in-process one, bit for bit."""
    common = [*algo[1:], "--data", letters, "--block-size", 256, "--seed", 1, "--scaling", "standard", "--quiet"]
    report = json.loads(
        omkl_here(
            "run", algo[0], *common, "--json", "--model-out", tmp_path / "local", "--trace-out", tmp_path / "trace.json"
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    omkl("submit", algo[0], "--scheduler", cluster["scheduler_address"], *common, "--out", tmp_path / "remote")
    assert_same_model(tmp_path / "remote", read_model(tmp_path / "local"))
    arrays, meta = read_model(tmp_path / "local")
    assert meta["engine"]["n_classes"] == 26 and len(meta["classes"]) == 26
    assert len(report["class_counts"]) == 26 and report["mistake_rate"] < 0.6


def test_retrain_on_the_cluster_continues_the_champion_as_in_process(cluster, stream, tmp_path):
    """`omkl retrain --scheduler`: the champion's exact state continued by shards on the workers
    (the stream read from the window's first row, rows counted over the model's life) gives the
    in-process retrain's version bit for bit; `omkl predict --scheduler` the same predictions."""
    import shutil

    import pyarrow.parquet as pq

    here, there = tmp_path / "here", tmp_path / "there"
    omkl_here(
        "retrain",
        "--store",
        here,
        "--model",
        "m",
        "--data",
        stream,
        "--rows",
        "0:16000",
        "--algo",
        "spa",
        "--block-size",
        1024,
        "--seed",
        3,
        "--quiet",
    )
    shutil.copytree(here, there)
    window = ("--data", stream, "--rows", "16000:40000", "--quiet", "--no-plots")
    local = json.loads(omkl_here("retrain", "--store", here, "--model", "m", *window).stdout.splitlines()[-1])
    remote = json.loads(
        omkl(
            "retrain", "--store", there, "--model", "m", *window, "--scheduler", cluster["scheduler_address"]
        ).stdout.splitlines()[-1]
    )
    assert remote["where"].startswith("dask ") and local["where"] == "in-process"
    assert (local["version"], remote["version"]) == (2, 2) and local["gate"] == remote["gate"]
    assert remote["train"]["mistakes"] == local["train"]["mistakes"]
    assert_same_model(there / "m" / "versions" / "2", read_model(here / "m" / "versions" / "2"))
    outputs = []
    for extra in ((), ("--scheduler", cluster["scheduler_address"])):
        out = tmp_path / f"pred{len(extra)}.parquet"
        command = omkl if extra else omkl_here
        command(
            "predict", "--store", here, "--model", "m", "--data", stream, "--out", out, "--block-rows", 30_000, *extra
        )
        outputs.append(pq.read_table(out))
    assert outputs[0].equals(outputs[1]) and outputs[0].num_rows == ROWS
    # a batch model's refit: MKBoost's per-kernel SVMs as tasks on the workers, the same model
    boosted = []
    mkboost = ("--algo", "mkboost", "--param", "n_trials=3", "--param", "kernels=poly:1;gaussian:1")
    for store, extra in (
        (tmp_path / "mk-here", ()),
        (tmp_path / "mk-there", ("--scheduler", cluster["scheduler_address"])),
    ):
        out = (omkl if extra else omkl_here)(
            "retrain",
            "--store",
            store,
            "--model",
            "mk",
            "--data",
            stream,
            "--rows",
            "0:400",
            *mkboost,
            "--quiet",
            "--no-plots",
            *extra,
        ).stdout
        boosted.append(json.loads(out.splitlines()[-1]))
    assert boosted[1]["where"].startswith("dask ") and boosted[0]["gate"] == boosted[1]["gate"]
    (there_arrays, _), (here_arrays, _) = (
        read_model(tmp_path / side / "mk" / "versions" / "1") for side in ("mk-there", "mk-here")
    )
    assert sorted(there_arrays) == sorted(here_arrays)
    for name, value in here_arrays.items():
        np.testing.assert_array_equal(there_arrays[name], value, err_msg=name)


def test_submit_of_a_labelled_file_ingests_it_once_where_the_workers_read_it(cluster, tmp_path):
    """`submit --data file.csv --label-column last`: the file is ingested under OUT.data (named by
    its content and label options; a rerun reuses it) and the cluster's model is `omkl run`'s on it."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4000, 5))
    words = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=4000) > 0, "yes", "no")
    table = tmp_path / "table.csv"
    header = "a,b,c,d,e,outcome\n"  # (named: the model records its label column)
    table.write_text(header + "".join(",".join(f"{v:.17g}" for v in row) + f",{w}\n" for row, w in zip(X, words)))
    out = tmp_path / "remote"
    common = ["--update", "S", "--combination", "S", "--block-size", 256, "--seed", 1, "--quiet"]
    submit = [
        "submit",
        "omkc",
        "--scheduler",
        cluster["scheduler_address"],
        "--data",
        table,
        "--label-column",
        "last",
        "--positive-class",
        "yes",
        "--out",
        out,
        *common,
    ]
    report = json.loads(omkl(*submit, "--json").stdout.strip().splitlines()[-1])
    (ingested,) = (tmp_path / "remote.data").iterdir()
    assert json.loads((ingested / "meta.json").read_text())["label_map"] == [["no", -1], ["yes", 1]]
    # the report (and the plots' titles) name the file, as omkl run's do; the dataset is the folder
    assert report["data"] == str(table) and report["dataset"] == ingested.name
    omkl_here(
        "run",
        "omkc",
        "--data",
        ingested,
        *common,
        "--model-out",
        tmp_path / "local",
        "--trace-out",
        tmp_path / "t.json",
    )
    assert_same_model(out, read_model(tmp_path / "local"))
    assert load_model(out).label_name == load_model(tmp_path / "local").label_name == "outcome"
    again = omkl(*submit, "--overwrite")
    assert " on table.csv (4000 instances" in again.stdout  # (the console names the file too)
    assert list((tmp_path / "remote.data").iterdir()) == [ingested]
    assert_same_model(out, read_model(tmp_path / "local"))


def test_predict_of_a_data_file_on_the_cluster_equals_in_process(cluster, tmp_path):
    """`omkl predict --scheduler ADDR --data file.csv`: the file is read here, its blocks predicted on the
    workers, and the output is the in-process one byte for byte -- ids carried, labels and accuracy,
    probabilities, and a model that encodes a text column itself."""
    rng = np.random.default_rng(11)
    n = 3000
    X = rng.normal(size=(n, 4))
    region = rng.choice(["north", "south", "east"], size=n)
    churn = np.where(X[:, 0] - X[:, 1] + (region == "east") + 0.3 * rng.normal(size=n) > 0, "yes", "no")
    rows = [
        f"c{i:05d},{r},{','.join(f'{v:.17g}' for v in x)},{c}\n" for i, (x, r, c) in enumerate(zip(X, region, churn))
    ]
    table = tmp_path / "customers.csv"
    table.write_text("customer_id,region,a,b,c,d,churn\n" + "".join(rows))
    unlabelled = tmp_path / "new.csv"
    unlabelled.write_text("customer_id,region,a,b,c,d\n" + "".join(r.rsplit(",", 1)[0] + "\n" for r in rows[:1000]))
    learnt = [
        ("plain", ["--features", "-customer_id,-region"]),
        ("encoded", ["--features", "-customer_id", "--categorical", "one-hot"]),
    ]
    for name, features in learnt:
        model = tmp_path / name
        omkl_here("run", "spa", "--data", table, "--label-column", "churn", *features, "--model-out", model, "--quiet")
        for data, extra in ((table, ["--proba"]), (unlabelled, [])):
            outputs = []
            for where in ((), ("--scheduler", cluster["scheduler_address"])):
                out = tmp_path / f"{name}-{data.stem}-{len(where)}.csv"
                args = ["predict", "--model-dir", model, "--data", data, "--out", out, "--block-rows", 700, "--json"]
                result = last_json((omkl if where else omkl_here)(*args, *extra, *where))
                outputs.append((out.read_bytes(), result["accuracy"], result["carried"], result["where"]))
            (local, accuracy, carried, here), (remote, remote_accuracy, remote_carried, there) = outputs
            assert here == "in-process" and there.startswith("dask ")
            assert remote == local and (remote_accuracy, remote_carried) == (accuracy, carried)
            assert b"c00999" in remote and "customer_id" in carried
            assert (accuracy is None) == (data == unlabelled) and (accuracy is None or accuracy > 0.8)
