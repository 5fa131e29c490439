"""``omkl fit`` and ``omkl reproduce mkboost`` on real data (few trials to stay fast)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.kernels import make_pool
from omkl_dist.pipelines.cli import main
from omkl_dist.reproduction.tables import mkboost as paper_mkboost

REPORT_KEYS = {"accuracy", "seconds", "kernel_counts"}  # what the issue asks `omkl fit --json` to report


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize(
    "algo,extra",
    [("mkboost", ["--variant", "S1", "--trials", "4"]), ("simplemkl", ["--C", "10"]), ("lpmkl", ["--paper-settings"])],
)
def test_fit_json_report(data_dir, algo, extra):
    res = invoke("fit", "--algo", algo, "--data", "ionosphere", "--test-size", 0.5, "--seed", 3, "--json", *extra)
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert REPORT_KEYS <= set(report)
    assert 0.8 < report["accuracy"] <= 1.0
    assert (report["n_train"], report["n_test"]) == (175, 176)
    # MKBoost's own pool (its polynomial kernels normalised: BENCHMARKS.md), the MKL estimators' mkboost17
    assert set(report["kernel_counts"]) == set(make_pool("mkboost17+norm" if algo == "mkboost" else "mkboost17").names)
    if algo == "mkboost":
        cores = os.cpu_count() or 1  # (MKBoost's SVMs on the cores present by default: the same model)
        assert report["executor"] == ("serial" if cores == 1 else f"threads x{cores}")
        assert report["variant"] == "S1" and len(report["trial_kernels"][0]) == report["trials_run"][0] <= 4
        assert sum(report["kernel_counts"].values()) == report["trials_run"][0]
    else:
        assert sum(report["weights"].values()) > 0
        paper = "--paper-settings" in extra
        assert report["C"] == (50.0 if paper else 10.0) == report["C_chosen"][0]  # (svc's test: C auto)
        assert report["kernel_normalization"] == ("trace" if paper else "diagonal")
        assert report["min_neighbors"] == (0.0 if paper else "auto")  # the paper's protocol keeps every kernel
        assert report["floor_chosen"] == [0.0] if paper else report["floor_chosen"][0] in (1.0, 175 / 16, 175 / 4)


def test_mkboost_threads_default_to_the_cores_the_memory_allows(monkeypatch):
    """A task holds ~3 Gram matrices of its resample (ijcnn1: 2 tasks of 14,169 rows peaked at 8.5 GB), so
    the default is the cores present, no more than half the available memory holds, and at least one."""
    import psutil

    from omkl_dist.pipelines.executors import default_threads

    class Memory:
        available = 20 * 2**30

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Memory)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert default_threads(1_000, 0.2) == 8  # small resamples: every core
    assert default_threads(70_845, 0.2) == 2  # 14,169 rows: 4.8 GB a task, 10 GB to spend
    assert default_threads(400_000, 0.2) == 1  # more than the memory holds: one at a time all the same


def test_mkboost_takes_the_papers_raw_kernels_with_paper_settings(data_dir):
    args = ("fit", "mkboost", "--data", "sonar", "--trials", "2", "--json")
    assert json.loads(invoke(*args).output)["kernels"] == "mkboost17+norm"
    assert json.loads(invoke(*args, "--paper-settings").output)["kernels"] == "mkboost17"


def test_fit_same_seed_same_result_and_text_output(data_dir):
    args = ("fit", "--algo", "mkboost", "--variant", "D2", "--data", "sonar", "--trials", "3", "--seed", "1")
    a, b = invoke(*args, "--json"), invoke(*args, "--json")
    ra, rb = json.loads(a.output), json.loads(b.output)
    assert (ra["accuracy"], ra["alphas"], ra["trial_kernels"]) == (rb["accuracy"], rb["alphas"], rb["trial_kernels"])
    text = invoke(*args, "--threads", "2")
    assert text.exit_code == 0 and "test accuracy" in text.output and f"{ra['accuracy']:.4f}" in text.output
    listed = text.output.split("kernel used in h_t (trials, all pairs):\n")[1].split("\nper trial")[0].splitlines()
    assert len({len(line.rsplit(" ", 1)[0]) for line in listed}) == 1, listed  # the counts in one column
    positional = invoke("fit", "mkboost", *args[3:], "--json")  # the algorithm as omkl run takes it
    assert json.loads(positional.output)["trial_kernels"] == ra["trial_kernels"]


def test_fit_on_an_ingested_dataset_is_its_files_fit(data_dir, tmp_path):
    """`omkl run` and `omkl predict` take an ingested dataset; `omkl fit` does too (read whole), with the
    file's split, so the same report; the columns were chosen at ingest, so label options are refused."""
    assert invoke("data", "ingest", "sonar", "--out", tmp_path / "sonar").exit_code == 0
    args = ("fit", "mkboost", "--trials", "3", "--seed", "1", "--json")
    of_file, of_ingested = (json.loads(invoke(*args, "--data", d).output) for d in ("sonar", tmp_path / "sonar"))
    for key in ("accuracy", "alphas", "trial_kernels", "classes", "n_train", "n_test", "n_features"):
        assert of_ingested[key] == of_file[key], key
    res = invoke(*args, "--data", tmp_path / "sonar", "--label-column", "last")
    assert res.exit_code != 0 and "is an ingested dataset" in res.output and "drop --label-column" in res.output


@pytest.mark.parametrize("algo,extra", [("mkboost", ["--trials", "3", "--threads", "2"]), ("svc", ["--C", "4"])])
def test_fit_saves_the_model_it_scored(data_dir, tmp_path, algo, extra):
    """--model-out: the model fitted on the training rows with its scaling and the user's labels, so
    load_model on the raw test rows predicts what the report scored; predict reads it; nothing replaced."""
    from omkl_dist import load_model
    from omkl_dist.reproduction.mkboost import split_indices
    from omkl_dist.storage import read_dataset, resolve_dataset

    out = tmp_path / "model"
    args = ("fit", algo, "--data", "sonar", "--seed", "2", "--json", "--model-out", out, *extra)
    report = json.loads(invoke(*args).output)
    assert report["model_path"] == str(out)
    ds = read_dataset(resolve_dataset("sonar"))
    _, test = split_indices(len(ds.y), 0.5, 2, 0)
    model = load_model(out)
    originals = dict((internal, original) for original, internal in ds.label_map)
    truth = np.array([originals[v] for v in ds.y[test]], dtype=object)
    assert np.mean(model.predict(ds.X[test]).astype(object) == truth) == report["accuracy"]
    res = invoke("predict", "--model-dir", out, "--data", "sonar", "--out", tmp_path / "p.parquet")
    assert res.exit_code == 0 and "208 predictions" in res.output, res.output
    again = invoke(*args)
    assert again.exit_code != 0 and "already exists; pass --overwrite" in again.output
    assert json.loads(invoke(*args, "--overwrite").output)["accuracy"] == report["accuracy"]
    selector = invoke("fit", "musvm", "--data", "sonar", "--model-out", tmp_path / "m2")
    assert selector.exit_code != 0 and "its model is not saved" in selector.output
    assert not (tmp_path / "m2").exists()


def test_a_fitted_model_is_imported_into_a_store_and_refitted_by_a_retrain(data_dir, tmp_path):
    """The batch model omkl fit saved becomes a store's champion (no job to record: a retrain refits it with
    its parameters); a batch model saved without its label map is refused, the store left as it was."""
    from omkl_dist import MKBoost, save_model
    from omkl_dist.storage.model_store import ModelStore

    store, saved, name = tmp_path / "store", tmp_path / "model", "breast-cancer"
    fitted = invoke("fit", "mkboost", "--data", "breast-cancer", "--trials", "3", "--json", "--model-out", saved)
    assert fitted.exit_code == 0, fitted.output
    imported = json.loads(invoke("models", "import", "--store", store, name, saved).output)
    assert (imported["status"], imported["version"], imported["champion"]) == ("imported", 1, 1)
    res = invoke("predict", "--store", store, "--model", name, "--data", name, "--out", tmp_path / "p.parquet")
    assert res.exit_code == 0 and "699 predictions of breast-cancer v1" in res.output, res.output
    assert "; loading " in res.output  # (a data file is parsed before the rows are scored: said apart)
    res = invoke("retrain", "--store", store, "--model", name, "--data", name, "--no-plots", "--quiet")
    retrained = json.loads(res.output.splitlines()[-1])
    assert (retrained["version"], retrained["parent"]) == (2, 1), res.output
    lineage = ModelStore(store, name).lineage(2)
    assert lineage["algo"] == "mkboost" and lineage["params"]["n_trials"] == 3 and lineage["params"]["verbose"] == 0
    rows = invoke("models", "list", "--store", store, name).output
    assert "v1 " in rows and "rows -" in rows and "rows None" not in rows
    X, y = np.random.default_rng(0).standard_normal((40, 3)), np.repeat([-1, 1], 20)
    bare = save_model(MKBoost(n_trials=2, random_state=0).fit(X, y), tmp_path / "bare")
    res = invoke("models", "import", "--store", store, name, bare)
    assert res.exit_code != 0 and "does not record its label map" in res.output
    assert ModelStore(store, name).versions() == [1, 2]


def test_fit_bad_input(data_dir):
    for args, words in (
        (("spa",), "spa is an online algorithm: omkl run spa --data FILE"),
        (("mkbost",), "no batch algorithm 'mkbost': did you mean 'mkboost'?"),
        ((), "name the algorithm: omkl fit ALGO --data FILE"),
        (("mkboost", "--algo", "svc"), "two algorithms, 'mkboost' and --algo 'svc'"),
    ):
        res = invoke("fit", *args, "--data", "ionosphere")
        assert res.exit_code == 2 and words in res.output, res.output
    res = invoke("fit", "--algo", "mkboost", "--data", "nosuchdataset")
    assert res.exit_code == 2 and "nosuchdataset" in res.output
    res = invoke("fit", "--algo", "mkboost", "--data", "ionosphere", "--ratio", "1.5")
    assert res.exit_code == 2 and "ratio" in res.output and "1.5" in res.output
    res = invoke(
        "fit", "--algo", "mkboost", "--data", "ionosphere", "--scheduler", "tcp://127.0.0.1:9", "--timeout", "1"
    )
    assert res.exit_code == 2 and "cannot reach a Dask scheduler" in res.output


def test_reproduce_mkboost_one_run(data_dir, tmp_path):
    out = tmp_path / "report.json"
    res = invoke(
        "reproduce",
        "mkboost",
        "--runs",
        1,
        "--datasets",
        "ionosphere,monks1",
        "--trials",
        3,
        "--quiet",
        "--out",
        out,
        "--json",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert json.loads(out.read_text())["summary"] == report["summary"]
    [block] = report["datasets"]
    assert block["paper_name"] == "ionosphere" and block["n"] == 351
    rows = {row["algorithm"]: row for row in block["rows"]}
    assert list(rows) == list(paper_mkboost.ALGORITHMS)
    for key in paper_mkboost.IMPLEMENTED:
        assert 0.8 < rows[key]["ours"]["accuracy"]["mean"] <= 1.0
        assert rows[key]["paper"]["accuracy"] == paper_mkboost.PAPER["ionosphere"].cells[key].accuracy
    assert [s["paper_name"] for s in report["skipped"]] == ["monks1"]
    text = res.output
    assert "MKBoost-D1" in text and "0.9426 ± 0.0139" in text and "skipped D5 monks1" in text
    assert "MKL-SILP" in text and "MKL-Level" in text and "n/a" not in text  # every algorithm runs


def test_reproduce_mkboost_bad_names(data_dir):
    res = invoke("reproduce", "mkboost", "--runs", 1, "--datasets", "ionosfere", "--quiet")
    assert res.exit_code == 2 and "ionosphere" in res.output
    res = invoke("reproduce", "mkboost", "--runs", 1, "--datasets", "ionosphere", "--algorithms", "d3", "--quiet")
    assert res.exit_code == 2 and "unknown algorithm" in res.output


def test_paper_tables_transcribed_consistently():
    assert [ds.key for ds in paper_mkboost.PAPER.values()] == [f"D{i}" for i in range(1, 11)]
    for ds in paper_mkboost.PAPER.values():
        assert set(ds.cells) == set(paper_mkboost.ALGORITHMS)
        for cell in ds.cells.values():
            assert 0.5 < cell.accuracy < 1.0 and 0.0 <= cell.std < 0.05
        paper_times = [cell.seconds for cell in ds.cells.values()]  # transcribed numbers, not a timing
        assert all(t > 0 for t in paper_times)
    assert paper_mkboost.PAPER["segment"].n_classes == 7 and paper_mkboost.PAPER["vehicle"].n == 846


@pytest.mark.parametrize("algo", ["oks-svm", "musvm", "alsvm"])
def test_fit_kernel_selectors_on_views(data_dir, algo):
    """The OKS paper's selectors from the command line, on mfeat's views (feature-group kernels)."""
    res = invoke(
        "fit",
        "--algo",
        algo,
        "--data",
        "mfeat",
        "--scaling",
        "minmax",
        "--test-size",
        0.8,
        "--seed",
        2,
        "--kernels",
        "linear,chi2,gaussian:2 @ fourier; linear,gaussian:1 @ zernike",
        "--json",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert report["selected_kernel"] in report["per_kernel"] and report["accuracy"] > 0.5
    assert (report["n_train"], report["n_test"]) == (400, 1600) and len(report["classes"]) == 10
    assert all("@fourier=216:292" in k or "@zernike=602:649" in k for k in report["per_kernel"])


def test_fit_tuned_svc_and_paper_settings(data_dir):
    """``--algo svc``: one gaussian SVM tuned on the training half; ``--paper-settings`` gives the MKL
    estimators the reproduction's settings and so its run-0 accuracy."""
    from omkl_dist.reproduction.mkboost import load_dataset, make_model, prepare_split, run_once, split_indices

    res = invoke("fit", "--algo", "svc", "--data", "sonar", "--seed", 2, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["C"] == "auto" and report["selected_kernels"][0].startswith("gaussian(sigma=")
    assert report["kernels"].startswith("gaussian:") and 0.7 < report["accuracy"] <= 1.0
    text = invoke("fit", "--algo", "svc", "--data", "sonar", "--seed", 2, "--C", 4).output
    assert "C 4.0, kernels normalised: diagonal" in text and "selected kernel: ['gaussian(sigma=" in text
    res = invoke("fit", "--algo", "silp", "--data", "sonar", "--seed", 2, "--paper-settings", "--json")
    report = json.loads(res.output)
    data = load_dataset("sonar", data_dir)
    split = prepare_split(data.X, data.y, *split_indices(len(data.y), 0.5, 2, 0))
    assert report["accuracy"] == run_once(make_model("mkl-silp"), *split)["accuracy"]
    assert invoke("fit", "--algo", "svc", "--data", "sonar", "--C", "best").exit_code == 2
