"""No command destroys data it did not create (issue: 210 bad inputs probed as a new user would).

Every case runs inside pytest's temporary directory. Each test fails without its fix: the
commands used to delete a checkpoint folder's unrelated files, wipe the dataset named as the
checkpoint folder, replace any folder or the source file on ``--overwrite``, learn from zeros for
a deleted chunk, lose a CSV's first row behind a byte-order mark, allocate what a file claims,
and leave temporary folders behind on a signal or a concurrent write.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.distributed.checkpoints import CheckpointStore
from omkl_dist.job import DataWindow, Job
from omkl_dist.persistence import load_model, save_model
from omkl_dist.pipelines.cli import main
from omkl_dist.storage import DataError, dataset_info, ingest, load_arrays, read_dataset
from omkl_dist.storage.ingest import verify_dataset
from omkl_dist.storage.layout import meta_digest
from omkl_dist.storage.outputs import OutputBusy, output_lock, sweep_leftovers
from omkl_dist.storage.synth import synthesize


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def snapshot(root: Path) -> dict:
    """Every file under ``root`` with its sha256: compared before and after a refused command."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def hidden(folder: Path) -> list[str]:
    """Temporary folders, moved-aside copies and lock files a write could leave behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=300) > 0, 1, -1)
    path = tmp_path / "good.csv"
    path.write_text("".join(f"{lab}," + ",".join(f"{v:.6f}" for v in row) + "\n" for lab, row in zip(y, X)))
    return path


@pytest.fixture
def dataset(tmp_path):
    out = tmp_path / "ds"
    synthesize(out, rows=2000, features=4, seed=1, chunk_rows=500)
    return out


# ---------------------------------------------------------------------------------------------
# files destroyed


def test_submit_refuses_a_checkpoint_dir_holding_other_files(tmp_path, dataset):
    ckpt = tmp_path / "mine"
    ckpt.mkdir()
    (ckpt / "thesis.tex").write_text("years of work")
    before = snapshot(tmp_path)
    for extra in ([], ["--overwrite"], ["--resume"]):
        # the scheduler address is never reached: outputs are checked first
        res = invoke(
            "submit",
            "spa",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--data",
            dataset,
            "--out",
            tmp_path / "model",
            "--checkpoint-dir",
            ckpt,
            "--timeout",
            0.5,
            *extra,
        )
        assert res.exit_code == 2, res.output
        assert str(ckpt) in res.output
        assert snapshot(tmp_path) == before


def test_submit_refuses_the_dataset_as_checkpoint_dir_or_output(tmp_path, dataset):
    before = snapshot(dataset)
    for option, target in [
        ("--checkpoint-dir", dataset),
        ("--checkpoint-dir", dataset / "features.zarr"),
        ("--out", dataset),
        ("--out", dataset / "model"),
    ]:
        args = ["--out", tmp_path / "model"] if option == "--checkpoint-dir" else []
        res = invoke(
            "submit",
            "spa",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--data",
            dataset,
            option,
            target,
            "--timeout",
            0.5,
            "--overwrite",
            *args,
        )
        assert res.exit_code == 2, res.output
        assert "dataset" in res.output and "would destroy it" in res.output, res.output
    assert snapshot(dataset) == before
    verify_dataset(dataset)


def test_checkpoint_store_replaces_and_clears_only_its_own_entries(tmp_path, dataset):
    from omkl_dist.algorithms import OMKC

    X, y, _ = load_arrays(dataset)
    model = OMKC(kernels="gaussian:1,2").fit(X[:50], y[:50])
    store = CheckpointStore(tmp_path / "ck")
    job = Job.build("omkc", {"kernels": "gaussian:1,2"}, data=DataWindow(str(dataset)))
    store.start(job, resume=False)
    for n in (10, 20, 30):
        store.write(model, None, n, job, history=[], samples=[], calibration_rows={})
    assert sorted(p.name for p in store.dir.iterdir()) == ["ckpt-000000000020", "ckpt-000000000030", "job.json"]
    (store.dir / "notes.txt").write_text("a user's file")
    store.clear()
    assert sorted(p.name for p in store.dir.iterdir()) == ["notes.txt"]  # kept, and so is the folder
    with pytest.raises(DataError, match="replaces only a checkpoint folder it wrote"):
        store.start(job, resume=False, overwrite=True)
    (store.dir / "notes.txt").unlink()
    store.start(job, resume=False)  # an empty folder is free to use
    with pytest.raises(FileExistsError, match="--resume to continue that job, or --overwrite"):
        store.start(job, resume=False)
    store.start(job, resume=False, overwrite=True)
    store.clear()
    assert not store.dir.exists()


def test_ingest_overwrite_replaces_only_a_dataset(tmp_path, csv_file):
    folder = tmp_path / "some_dir"
    folder.mkdir()
    (folder / "holiday.jpg").write_bytes(b"\xff\xd8 not a dataset")
    before = snapshot(tmp_path)
    res = invoke("data", "ingest", csv_file, "--out", folder, "--overwrite")
    assert res.exit_code == 2
    assert "is a folder without omkl-dist's meta.json" in res.output and str(folder) in res.output
    assert snapshot(tmp_path) == before
    # a dataset with a stranger inside is not replaced either
    assert invoke("data", "ingest", csv_file, "--out", tmp_path / "ds").exit_code == 0
    (tmp_path / "ds" / "README").write_text("mine")
    res = invoke("data", "ingest", csv_file, "--out", tmp_path / "ds", "--overwrite")
    assert res.exit_code == 2 and "also holds other files (README)" in res.output
    (tmp_path / "ds" / "README").unlink()
    assert invoke("data", "ingest", csv_file, "--out", tmp_path / "ds", "--overwrite").exit_code == 0
    assert hidden(tmp_path) == []


def test_ingest_refuses_its_source_and_folders_around_it(tmp_path, csv_file):
    copy = tmp_path / "copy.csv"
    copy.write_bytes(csv_file.read_bytes())
    before = snapshot(tmp_path)
    for out in (copy, tmp_path, copy / "inside"):
        res = invoke("data", "ingest", copy, "--out", out, "--overwrite")
        assert res.exit_code == 2, res.output
        assert "source file" in res.output and "would destroy it" in res.output
    assert snapshot(tmp_path) == before
    assert hidden(tmp_path) == []


def test_synth_and_run_outputs_replace_only_their_own_kind(tmp_path, csv_file):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"jpeg")
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    before = snapshot(tmp_path)
    res = invoke("data", "synth", "--rows", 100, "--features", 2, "--out", folder, "--overwrite")
    assert res.exit_code == 2 and "omkl-dist's meta.json" in res.output
    run = ["run", "omkc", "--data", csv_file, "--kernels", "gaussian:1", "--quiet"]
    res = invoke(*run, "--model-out", folder, "--overwrite", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 2 and "--model-out exists and is a folder without omkl-dist's model.json" in res.output
    res = invoke(*run, "--trace-out", notes, "--overwrite")
    assert res.exit_code == 2 and "not a JSON report written by omkl-dist" in res.output
    for option in ("--trace-out", "--model-out"):
        res = invoke(*run, option, csv_file, "--overwrite")
        assert res.exit_code == 2 and "is the data" in res.output
    res = invoke("reproduce", "omkc", "--datasets", "wdbc", "--permutations", 1, "--out", notes, "--quiet")
    assert res.exit_code == 2 and "not a JSON report" in res.output
    assert snapshot(tmp_path) == before
    # its own outputs are replaced, and only with --overwrite
    for _ in range(2):
        res = invoke(*run, "--model-out", tmp_path / "m", "--overwrite", "--trace-out", tmp_path / "t.json")
        assert res.exit_code == 0, res.output
    trace = (tmp_path / "t.json").read_bytes()
    res = invoke(*run, "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 2 and "--overwrite" in res.output and (tmp_path / "t.json").read_bytes() == trace
    assert hidden(tmp_path) == []


def test_an_empty_folder_may_receive_any_output(tmp_path, csv_file):
    (tmp_path / "ds").mkdir()
    assert invoke("data", "ingest", csv_file, "--out", tmp_path / "ds").exit_code == 0
    verify_dataset(tmp_path / "ds")


def test_run_checks_its_outputs_before_learning(tmp_path, csv_file):
    (tmp_path / "m").mkdir()  # not a model
    (tmp_path / "m" / "draft.txt").write_text("mine")
    (tmp_path / "file").write_text("x")
    for args in (["--model-out", tmp_path / "m"], ["--model-out", tmp_path / "file" / "m"]):
        res = invoke("run", "omkc", "--data", csv_file, "--quiet", "--trace-out", tmp_path / "t.json", *args)
        assert res.exit_code == 2, res.output
        assert not (tmp_path / "t.json").exists()  # refused before any learning (the trace comes last)
    assert "is a file, not a folder" in res.output


# ---------------------------------------------------------------------------------------------
# data silently wrong


def _chunk_files(directory: Path) -> list[Path]:
    return sorted(p for p in (directory / "features.zarr" / "c").rglob("*") if p.is_file())


def test_deleted_chunk_is_an_error_never_zeros(tmp_path, dataset):
    _chunk_files(dataset)[1].unlink()
    with pytest.raises(DataError, match="1 of the 4 feature chunk files are missing"):
        dataset_info(dataset)
    for args in (
        ["data", "info", dataset],
        ["data", "verify", dataset],
        ["run", "spa", "--data", dataset, "--quiet", "--trace-out", tmp_path / "t.json"],
    ):
        res = invoke(*args)
        assert res.exit_code == 2 and "missing" in res.output, res.output


def test_flipped_byte_is_detected_on_read(tmp_path, dataset):
    chunk = _chunk_files(dataset)[2]
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x01
    chunk.write_bytes(bytes(data))
    dataset_info(dataset)  # the cheap check sees every chunk file present
    res = invoke("data", "verify", dataset)
    assert res.exit_code == 2
    assert "chunk 2 (rows 1000..1499)" in res.output and "features.zarr" in res.output
    res = invoke("run", "spa", "--data", dataset, "--quiet", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 2 and "chunk 2" in res.output


def test_labels_edited_or_label_map_swapped_are_refused(tmp_path, dataset):
    meta_path = dataset / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["label_map"] = [["-1", 1], ["1", -1]]
    meta_path.write_text(json.dumps(meta, indent=2))
    res = invoke("data", "info", dataset)
    assert res.exit_code == 2 and "meta.json does not match its recorded hash" in res.output
    meta_path.write_text(json.dumps({**meta, "meta_sha256": meta_digest(meta)}))  # a consistent forgery...
    import pyarrow as pa
    import pyarrow.parquet as pq

    y = pq.read_table(dataset / "labels.parquet").column("y").to_numpy()
    pq.write_table(pa.table({"y": -y}), dataset / "labels.parquet", row_group_size=500)  # ...of the labels too
    with pytest.raises(DataError, match="labels of chunk 0 .* do not match their checksum"):
        load_arrays(dataset)


def test_csv_with_byte_order_mark_keeps_its_first_row(tmp_path, csv_file):
    bom = tmp_path / "excel.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + csv_file.read_bytes())
    plain, marked = read_dataset(csv_file), read_dataset(bom)
    assert marked.n_rows == plain.n_rows == 300
    np.testing.assert_array_equal(marked.X, plain.X)
    with_header = tmp_path / "header.csv"
    with_header.write_bytes(b"\xef\xbb\xbflabel,a,b,c,d\n" + csv_file.read_bytes())
    assert read_dataset(with_header).feature_names == ["a", "b", "c", "d"]


# ---------------------------------------------------------------------------------------------
# tracebacks and runaway memory


@pytest.mark.parametrize("index", [10**9, 10**12, 10**30])
def test_huge_libsvm_index_is_a_clear_error(tmp_path, index):
    path = tmp_path / "tiny.libsvm"
    path.write_text(f"1 1:0.5 3:1\n-1 {index}:1\n")
    assert path.stat().st_size < 60
    res = invoke("data", "ingest", path, "--out", tmp_path / "ds")
    assert res.exit_code == 2, res.output
    assert f"feature index {index}" in res.output and "row 2" in res.output
    assert not (tmp_path / "ds").exists() and hidden(tmp_path) == []


def test_n_features_pads_a_split_and_refuses_indices_above_it(tmp_path):
    path = tmp_path / "split.libsvm"
    path.write_text("1 1:0.5 3:1\n-1 2:1\n")
    assert read_dataset(path, n_features=5).X.shape == (2, 5)
    res = invoke("data", "ingest", path, "--out", tmp_path / "ds", "--n-features", 2)
    assert res.exit_code == 2 and "feature index 3 is above n_features=2" in res.output and "row 1" in res.output


def test_budget_beyond_the_stream_is_capped_with_the_same_model(tmp_path, csv_file):
    from omkl_dist.algorithms import BOGD, BPAS, RBP, Forgetron

    X, y = read_dataset(csv_file).X, read_dataset(csv_file).y
    for cls in (RBP, Forgetron, BOGD, BPAS):  # a budget the stream cannot reach gives the capped model
        capped, roomy = (cls(kernels="gaussian:1,2", budget=b, random_state=0) for b in (len(y), 4 * len(y)))
        a = capped.progressive_partial_fit(X, y)["mistakes"]
        b = roomy.progressive_partial_fit(X, y)["mistakes"]
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(capped.decision_function(X), roomy.decision_function(X))
    options = [
        "--data",
        csv_file,
        "--quiet",
        "--json",
        "--kernels",
        "gaussian:1,2",
        "--trace-out",
        tmp_path / "t.json",
        "--overwrite",
    ]
    for algo in ("rbp", "bpas"):
        res = invoke("run", algo, *options, "--budget", 10**12)
        assert res.exit_code == 0, res.output
        assert json.loads(res.output.splitlines()[-1])["budget_capped"] == {"asked": 10**12, "used": 300}
    small = json.loads(invoke("run", "forgetron", *options, "--budget", 20).output.splitlines()[-1])
    assert "budget_capped" not in small


def test_estimator_refuses_a_budget_that_cannot_fit():
    from omkl_dist.algorithms import BPAS

    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=r"budget=1,000,000,000,000 .* GiB, more than half"):
        BPAS(budget=10**12).fit(X, np.where(X[:, 0] > 0, 1, -1))


@pytest.fixture
def saved_model(tmp_path, dataset):
    from omkl_dist.algorithms import OMKC

    X, y, _ = load_arrays(dataset)
    save_model(OMKC(kernels="gaussian:1,2").fit(X[:200], y[:200]), tmp_path / "model")
    return tmp_path / "model"


def test_model_claiming_a_huge_shape_is_refused_before_reading(saved_model):
    zarr_json = saved_model / "state.zarr" / "w" / "zarr.json"
    meta = json.loads(zarr_json.read_text())
    meta["shape"] = [10**12]
    meta["chunk_grid"]["configuration"]["chunk_shape"] = [10**12]
    zarr_json.write_text(json.dumps(meta))
    with pytest.raises(DataError, match=r"state array 'w' is stored as \(1000000000000,\) float64, model.json says"):
        load_model(saved_model)
    model_json = saved_model / "model.json"
    meta = json.loads(model_json.read_text())
    meta["arrays"]["w"]["shape"] = [10**12]
    model_json.write_text(json.dumps(meta))
    with pytest.raises(DataError, match=r"would take .* GiB, more than the"):
        load_model(saved_model)


@pytest.mark.parametrize(
    "edit",
    ["drop-params", "drop-arrays", "arrays-not-dict", "bad-entry", "drop-engine", "list", "drop-array", "huge-class"],
)
def test_model_with_missing_or_malformed_entries_is_a_data_error(saved_model, edit):
    model_json = saved_model / "model.json"
    meta = json.loads(model_json.read_text())
    if edit == "drop-params":
        del meta["params"]
    elif edit == "drop-arrays":
        del meta["arrays"]
    elif edit == "arrays-not-dict":
        meta["arrays"] = [1, 2]
    elif edit == "bad-entry":
        meta["arrays"]["w"] = {"shape": "x"}
    elif edit == "drop-engine":
        del meta["engine"]
    elif edit == "list":
        meta = [meta]
    elif edit == "drop-array":
        del meta["arrays"]["logw"]
    elif edit == "huge-class":  # beyond the recorded int64 classes: an OverflowError, before the fix
        meta["classes"], meta["classes_dtype"] = [2**63, 1], "<i8"
    if isinstance(meta, dict):
        meta["meta_sha256"] = meta_digest(meta)  # past the hash check: the structure itself is tested
    model_json.write_text(json.dumps(meta))
    with pytest.raises(DataError) as info:
        load_model(saved_model)
    assert str(saved_model) in str(info.value)


def test_invalid_job_json_on_resume_names_the_file(tmp_path, dataset):
    ckpt = tmp_path / "model.checkpoints"
    ckpt.mkdir()
    (ckpt / "job.json").write_text("{oops")
    store = CheckpointStore(ckpt)
    with pytest.raises(DataError, match="job.json is not valid JSON") as info:
        store.start(Job.build("omkc", {}, data=DataWindow(str(dataset))), resume=True)
    assert str(ckpt / "job.json") in str(info.value)


# ---------------------------------------------------------------------------------------------
# leftovers and races


def _omkl(*args) -> list[str]:
    return [sys.executable, "-m", "omkl_dist.pipelines.cli", *map(str, args)]


def _wait_for_temp(folder: Path, name: str, proc, timeout=60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.startswith(f".{name}.tmp-") for p in folder.iterdir()):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """A 300,000-row CSV: its ingest writes long enough to be interrupted mid-write."""
    path = tmp_path_factory.mktemp("big") / "big.csv"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300_000, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    np.savetxt(path, np.column_stack([y, X]), fmt=["%d"] + ["%.6f"] * 4, delimiter=",")
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "command,signum,code",
    [
        ("synth", signal.SIGTERM, 143),
        ("synth", signal.SIGINT, 130),
        ("ingest", signal.SIGINT, 130),
        ("ingest", signal.SIGTERM, 143),
    ],
)
def test_signal_during_a_write_leaves_nothing_behind(tmp_path, big_csv, command, signum, code):
    for attempt, delay in enumerate((0.0, 0.05, 0.4)):  # right after the folder appears, and later
        out = tmp_path / f"s{attempt}"
        args = (
            ["data", "synth", "--rows", 2_000_000, "--features", 4, "--chunk-rows", 5_000]
            if command == "synth"
            else ["data", "ingest", big_csv, "--chunk-rows", 250]
        )  # 1,200 chunks: seconds of writing
        proc = subprocess.Popen(
            _omkl(*args, "--out", out), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            assert _wait_for_temp(tmp_path, out.name, proc), "the write never started"
            time.sleep(delay)
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == code, err
        time.sleep(0.3)  # a library thread still writing would recreate the folder now
        assert hidden(tmp_path) == [] and not out.exists(), os.listdir(tmp_path)


# a writer of ds killed between the two renames of an overwrite: ds moved into its work folder,
# the new dataset not yet in place (os.replace ends the process right after moving ds aside)
_KILLED_MID_SWAP = """
import os, sys
from pathlib import Path
from omkl_dist.storage.synth import synthesize
real_replace = os.replace
def replace(src, dst):
    real_replace(src, dst)
    if Path(dst).parent.name.startswith(".ds.tmp-"):
        os._exit(9)
os.replace = replace
synthesize(sys.argv[1], rows=10, features=2, overwrite=True)
"""


def test_stale_leftovers_of_a_dead_writer_are_swept(tmp_path, dataset):
    before = snapshot(dataset)
    killed = subprocess.run([sys.executable, "-c", _KILLED_MID_SWAP, str(dataset)], capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    lock, work = hidden(tmp_path)  # the kill skipped the lock's release: the next writer reuses it
    assert not dataset.exists() and lock == ".ds.lock" and work.startswith(".ds.tmp-")
    dead = work.split("-")[1]
    # names like a writer's that are not its work folder: the user's, never touched
    users = {f".ds.tmp-{dead}-abcd1234": "x", f".ds.old-{dead}": "y", f".other.tmp-{dead}-00": "z"}
    for name, content in users.items():
        (tmp_path / name).write_text(content)
    # the next write of ds sweeps: the moved-aside copy is put back first, so ds exists again
    with pytest.raises(FileExistsError):
        synthesize(dataset, rows=10, features=2)
    assert snapshot(dataset) == before
    verify_dataset(dataset)
    assert hidden(tmp_path) == sorted(users)
    synthesize(dataset, rows=10, features=2, overwrite=True)
    assert hidden(tmp_path) == sorted(users)
    assert all((tmp_path / name).read_text() == content for name, content in users.items())
    assert sweep_leftovers(dataset) == []


def test_a_second_writer_of_one_output_is_told_it_is_busy(tmp_path):
    out = tmp_path / "ds"
    with output_lock(out):
        with pytest.raises(OutputBusy, match="another process is writing"):
            synthesize(out, rows=10, features=2)
        res = invoke("data", "synth", "--rows", 10, "--features", 2, "--out", out)
        assert res.exit_code == 75 and res.output.startswith("busy: ")
    assert not out.exists()
    synthesize(out, rows=10, features=2)
    assert hidden(tmp_path) == []


@pytest.mark.slow
def test_concurrent_overwrites_end_complete_or_busy(tmp_path):
    out = tmp_path / "ds"
    synthesize(out, rows=10, features=3)
    for round_ in range(3):
        procs = [
            subprocess.Popen(
                _omkl("data", "synth", "--rows", 100_000, "--features", 3, "--seed", seed, "--out", out, "--overwrite"),
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for seed in (1, 2, 3)
        ]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        for code, err in results:
            assert code == 0 or (code == 75 and err.startswith("busy: ")), (code, err)
        assert any(code == 0 for code, _ in results)
        meta = verify_dataset(out)
        assert meta["n_rows"] == 100_000
        assert hidden(tmp_path) == [], round_


def test_truncated_chunk_is_an_error_naming_the_chunk(tmp_path, dataset):
    chunk = _chunk_files(dataset)[3]
    chunk.write_bytes(chunk.read_bytes()[:10])
    res = invoke("data", "verify", dataset)
    assert res.exit_code == 2 and "chunk 3 (rows 1500..1999)" in res.output and "features.zarr" in res.output


def test_outputs_are_created_with_the_users_umask(tmp_path, csv_file):
    from omkl_dist.algorithms import OMKC

    old = os.umask(0o022)
    try:
        ingest(csv_file, tmp_path / "ds")
        X, y, _ = load_arrays(tmp_path / "ds")
        save_model(OMKC(kernels="gaussian:1").fit(X[:50], y[:50]), tmp_path / "model")
    finally:
        os.umask(old)
    for folder in (tmp_path / "ds", tmp_path / "model"):
        assert folder.stat().st_mode & 0o777 == 0o755, oct(folder.stat().st_mode)  # readable by a worker's account


def test_no_pickle_eval_exec_or_shell_on_any_path():
    """User data and model files are parsed, never unpickled or evaluated; no command runs a shell."""
    import re

    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(
        r"^\s*(import pickle|from pickle|import dill|.*\beval\(|.*\bexec\(|.*shell=True|"
        r".*pickle\.loads?\(|.*allow_pickle=True)"
    )
    found = [
        f"{path.relative_to(root)}:{n}"
        for folder in ("omkl_dist", "storage", "pipelines", "cluster")
        for path in (root / folder).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.match(line)
    ]
    assert not found, found
