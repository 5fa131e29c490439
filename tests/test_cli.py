"""The ``omkl`` command line on real files: ingest, info, list, synth, run; bad input exits 2."""

from __future__ import annotations

import json
import time

import click
import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.pipelines.cli_base import FiniteFloat, LocalPath
from omkl_dist.storage import load_arrays, read_dataset, resolve_dataset


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_ingest_then_info_reproduces_manifest_row(data_dir, tmp_path):
    out = tmp_path / "fourclass"
    res = invoke("data", "ingest", "fourclass", "--out", out, "--chunk-rows", 100)
    assert res.exit_code == 0, res.output
    res = invoke("data", "info", out, "--json")
    meta = json.loads(res.output)
    manifest = json.loads((data_dir / "MANIFEST.json").read_text())["fourclass/fourclass_scale.gz"]
    assert (meta["n_rows"], meta["n_features"]) == (manifest["rows"], manifest["features"])
    assert sum(meta["class_counts"].values()) == manifest["rows"]
    X, y, _ = load_arrays(out)
    ds = read_dataset(data_dir / "fourclass/fourclass_scale.gz")
    np.testing.assert_array_equal(X, ds.X)
    np.testing.assert_array_equal(y, ds.y)


def test_ingest_refuses_existing_output_and_unknown_name(data_dir, tmp_path):
    out = tmp_path / "d"
    assert invoke("data", "ingest", "fourclass", "--out", out).exit_code == 0
    res = invoke("data", "ingest", "fourclass", "--out", out)
    assert res.exit_code == 2 and "--overwrite" in res.output
    assert invoke("data", "ingest", "fourclass", "--out", out, "--overwrite").exit_code == 0
    res = invoke("data", "ingest", "fourclas", "--out", tmp_path / "x")
    assert res.exit_code == 2 and "fourclass" in res.output
    assert not (tmp_path / "x").exists()


def test_one_class_split_needs_declared_classes(data_dir, tmp_path):
    res = invoke("data", "ingest", "svmguide3/svmguide3.t.csv.gz", "--out", tmp_path / "t")
    assert res.exit_code == 2 and "--classes" in res.output
    res = invoke("data", "ingest", "svmguide3/svmguide3.t.csv.gz", "--classes", "-1,1", "--out", tmp_path / "t")
    assert res.exit_code == 0, res.output


def test_list_checks_every_file(data_dir):
    res = invoke("data", "list")
    assert res.exit_code == 0, res.output
    assert "codrna" in res.output and "mismatch" not in res.output


def test_synth_and_run_json_on_ingested_stream(tmp_path):
    out = tmp_path / "s"
    assert invoke("data", "synth", "--rows", 3000, "--features", 4, "--seed", 1, "--out", out).exit_code == 0
    res = invoke(
        "run",
        "omkc",
        "--update",
        "S",
        "--combination",
        "S",
        "--data",
        out,
        "--kernels",
        "poly:1;gaussian:0.5,1,2",
        "--scaling",
        "standard",
        "--json",
        "--quiet",
        "--trace-out",
        tmp_path / "trace.json",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    for key in (
        "mistake_rate",
        "n_support",
        "seconds",
        "load_seconds",
        "instances_per_second",
        "block_size",
        "seed",
        "scaling",
    ):
        assert key in report
    assert report["n"] == 3000 and 0 < report["mistake_rate"] < 0.5
    assert report["n_support"]["total"] == sum(report["n_support"]["per_kernel"].values())
    trace = json.loads((tmp_path / "trace.json").read_text())["trace"]
    assert trace["n_seen"][-1] == 3000 and len(trace["weights"][-1]) == 4


def test_run_bad_options_exit_2(data_dir, tmp_path):
    res = invoke("run", "omkc", "--beta", 1.5, "--data", "fourclass", "--quiet")
    assert res.exit_code == 2 and "beta" in res.output
    res = invoke("run", "perceptron", "--beta", 0.5, "--data", "fourclass", "--quiet")
    assert res.exit_code == 2 and "No such option '--beta'" in res.output  # perceptron has no beta
    res = invoke("run", "omkcc", "--data", "fourclass", "--quiet")
    assert res.exit_code == 2 and "omkc" in res.output


def test_run_spa_with_its_parameters(tmp_path):
    out = tmp_path / "s"
    assert invoke("data", "synth", "--rows", 2000, "--features", 5, "--seed", 2, "--out", out).exit_code == 0
    res = invoke(
        "run",
        "spa",
        "--data",
        out,
        "--budget",
        40,
        "--gamma",
        0.95,
        "--eta",
        0.2,
        "--kernels",
        "gaussian:0.5,1,2",
        "--scaling",
        "standard",
        "--json",
        "--quiet",
        "--trace-out",
        tmp_path / "t.json",
        "--model-out",
        tmp_path / "model",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    assert report["params"]["budget"] == 40 and report["params"]["gamma"] == 0.95
    assert max(report["n_support"]["per_kernel"].values()) <= 3 * 40
    res = invoke("run", "spa", "--data", out, "--beta", 0.5, "--quiet")
    assert res.exit_code == 2 and "beta must be >= alpha" in res.output


def test_run_on_ingested_stream_without_scaling(tmp_path):
    """Regression: an ingested directory with the default --scaling none streamed through an
    unfitted identity scaler and failed."""
    out = tmp_path / "s"
    assert invoke("data", "synth", "--rows", 1500, "--features", 3, "--seed", 3, "--out", out).exit_code == 0
    res = invoke("run", "perceptron", "--data", out, "--json", "--quiet", "--trace-out", tmp_path / "t.json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["n"] == 1500


def test_run_report_sizes_a_random_feature_model_by_its_features(tmp_path):
    """FOGD keeps no support vectors: its report says its features, not "0 support vectors"."""
    out = tmp_path / "s"
    assert invoke("data", "synth", "--rows", 600, "--features", 3, "--seed", 3, "--out", out).exit_code == 0
    res = invoke("run", "fogd", "--data", out, "--kernels", "gaussian:1,2", "--n-components", 8, "--quiet")
    assert res.exit_code == 0, res.output
    assert "model size       2 kernel(s) x 8 random features (no support vectors)" in res.output
    assert "support vectors  " not in res.output


def test_run_refuses_kernels_fogd_cannot_take_before_reading_the_data(tmp_path):
    """The kernel check comes before the data is opened (so before any progress bar): the file named
    does not even exist, and the error is about the kernels."""
    res = invoke("run", "fogd", "--data", tmp_path / "absent.svm", "--kernels", "linear;gaussian:1")
    assert res.exit_code != 0
    assert "use gaussian kernels only" in res.output and "absent" not in res.output


def test_run_refuses_more_nogd_components_than_budget_before_reading_the_data(tmp_path):
    res = invoke("run", "nogd", "--data", tmp_path / "absent.svm", "--budget", "5", "--n-components", "6")
    assert res.exit_code != 0
    assert "n_components=6 is more than budget=5" in res.output and "absent" not in res.output


def test_run_nogd_with_a_budget_above_the_rows(data_dir, tmp_path):
    # a budget larger than the stream is not cut to the rows for NOGD: it would fall below n_components
    res = invoke("run", "nogd", "--data", "fourclass", "--limit", 60, "--budget", 100, "--quiet")
    assert res.exit_code == 0, res.output
    assert "mistake rate" in res.output


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["submit", "--help"], ["cluster", "up", "--help"]])
def test_help_exits_zero(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "Usage:" in result.output and "error" not in result.output


@pytest.mark.parametrize("args", [[], ["data"], ["models"], ["run"], ["cluster"]])
def test_a_group_without_its_command_shows_its_help_in_lines(args):
    """`omkl` alone (or `omkl data`) shows the group's help as help: click >= 8.2 raises it as a usage
    error, whose message every error's one-line form printed as one line of '\\n'."""
    result = CliRunner().invoke(main, args)
    text = result.stdout + result.stderr
    assert result.exit_code in (0, 2) and "\\n" not in text
    assert text.startswith("Usage:") and "\nCommands:\n" in text and "\n  -h, --help" in text


def _leaf_contexts(command, parent):
    """A context for every sub-command of ``command`` under ``parent`` (options see the settings
    the root group gives its sub-commands, as on the command line)."""
    name = command.name if parent else "omkl"
    ctx = click.Context(command, info_name=name, parent=parent, **(command.context_settings or {}))
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):  # (the root group imports a command when asked for it)
            yield from _leaf_contexts(command.get_command(ctx, name), ctx)
    else:
        yield ctx


def test_help_shows_every_default_and_explains_the_shared_options():
    """Issue 41, item 10: defaults were not shown; --block-size, --seed, --keep-checkpoints and
    predict --json had no help; submit and retrain cited a --scale-rows they do not have."""
    texts = {}
    for ctx in _leaf_contexts(main, None):
        for opt in ctx.command.params:
            if not isinstance(opt, click.Option) or opt.is_flag or opt.required or opt.multiple:
                continue
            if opt.get_default(ctx, call=False) not in (None, ()):
                record = opt.get_help_record(ctx)
                assert "default:" in record[1] or "default " in record[1], (ctx.command_path, record)
        texts[ctx.command_path] = ctx.command.get_help(ctx)
    for path in ("omkl run spa", "omkl submit spa", "omkl retrain"):
        assert "Rows per block" in texts[path] and "The job's seed" in texts[path], path
    assert "Keep the checkpoint folder" in texts["omkl submit spa"]
    assert "as one JSON object" in texts["omkl predict"]
    assert "--scale-rows" not in texts["omkl submit spa"] and "--scale-rows" not in texts["omkl retrain"]
    assert "--scale-rows" in texts["omkl run spa"]


def test_submit_takes_the_model_folder_as_run_and_fit_name_it():
    """`omkl run` and `omkl fit` write the model to --model-out; `omkl submit` took only --out, and a
    new user's `--model-out` there was "No such option" suggesting --trace-out. Both names work."""
    contexts = {ctx.command_path: ctx for ctx in _leaf_contexts(main, None)}
    for path in ("omkl run spa", "omkl submit spa", "omkl submit omkc"):
        ctx = contexts[path]
        parsed = ctx.command.make_context(ctx.info_name, ["--data", "d", "--model-out", "m"], parent=ctx.parent)
        assert "m" in parsed.params.values(), path
    submit = contexts["omkl submit omkc"]
    assert submit.command.make_context("omkc", ["--data", "d", "--out", "m"], parent=submit.parent).params["out"] == "m"


def test_numba_compiling_is_announced_on_its_first_use_only(capsys):
    """A compile inside the bar's block (numba's cache missed) is said, once, with its time at the
    end; a second block that only calls the compiled code says nothing, nor a hidden bar."""
    from numba import njit

    from omkl_dist.pipelines.progress import COMPILING, ProgressBar

    @njit  # (not cached: compiled on its first call, in this test)
    def twice(x):
        return 2 * x

    with ProgressBar("spa on x", show=False) as hidden:  # (--quiet: tqdm disabled, a bar without a label)
        hidden({"n_rows": 10, "n_seen": 0, "n_mistakes": 0})
        twice(1.0)
        hidden({"n_rows": 10, "n_seen": 5, "n_mistakes": 1})
    assert capsys.readouterr().err == ""
    with ProgressBar("spa on x") as bar:
        bar({"n_rows": 10, "n_seen": 0, "n_mistakes": 0})
        twice(1)  # a new argument type: a compile
        twice(2)
    err = capsys.readouterr().err
    assert err.count(COMPILING) == 1 and "compiling took" in err
    with ProgressBar("spa on x") as bar:
        twice(3)
    assert capsys.readouterr().err == ""  # nothing compiled: nothing said


def test_progress_bar_shows_the_mistake_rate_of_the_rows_it_shows(capsys):
    """Each update draws the rate of the rows seen so far, not the update's before (a cluster job
    of few coordinator calls showed "mistakes=0.00%" at 83 % of its rows)."""
    from omkl_dist.pipelines.progress import ProgressBar

    with ProgressBar("bpas on x") as bar:
        bar({"n_rows": 100, "n_seen": 0, "n_mistakes": 0})
        time.sleep(0.15)  # (tqdm draws an update 0.1 s after the last drawing)
        bar({"n_rows": 100, "n_seen": 80, "n_mistakes": 8})
        drawn = capsys.readouterr().err.split("\r")[-1]  # (before the bar closes, which draws it again)
    assert "80/100" in drawn and "mistakes=10.00%" in drawn


@pytest.mark.parametrize("algo", ["om2", "omkc"])
def test_run_multiclass_reports_classes_and_the_online_confusion_matrix(data_dir, tmp_path, algo):
    """vehicle (4 classes): the report counts every class, the trace's confusion matrix holds every
    row with the mistakes off its diagonal, and the saved model predicts the four original labels."""
    from omkl_dist.persistence import load_model

    res = invoke(
        "run",
        algo,
        "--data",
        "vehicle",
        "--scaling",
        "minmax",
        "--json",
        "--quiet",
        "--trace-out",
        tmp_path / "trace.json",
        "--model-out",
        tmp_path / "model",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output.strip().splitlines()[-1])
    trace = json.loads((tmp_path / "trace.json").read_text())["trace"]
    confusion = np.array(trace["confusion"])
    assert confusion.shape == (4, 4) and confusion.sum() == report["n"] == 846
    assert confusion.sum() - np.trace(confusion) == report["mistakes"] > 0
    assert report["class_counts"] == {str(c): int(n) for c, n in zip(trace["classes"], confusion.sum(axis=1))}
    model = load_model(tmp_path / "model")
    ds = read_dataset(resolve_dataset("vehicle"))
    X = ds.X
    assert set(np.unique(model.predict(X))) <= set(model.classes_) == {original for original, _ in ds.label_map}
    assert model.decision_function(X[:5]).shape == (5, 4)


def _float_options(command, path=()):
    """(command path, option) for every number option of ``command`` and its sub-commands."""
    for param in command.params:
        if isinstance(param.type, (click.types.FloatParamType, click.FloatRange)):
            yield path, param
    if isinstance(command, click.Group):
        for name in command.list_commands(None):
            yield from _float_options(command.get_command(None, name), (*path, name))


def test_every_number_option_refuses_nan_and_inf():
    """click's float types accept nan and inf (a nan timeout never fires, a nan gate never passes):
    every number option of every command is a FiniteFloat and says which option is wrong."""
    options = list(_float_options(main))
    assert len(options) > 15
    for path, param in options:
        assert isinstance(param.type, FiniteFloat), f"omkl {' '.join(path)} {param.opts[0]}"
    for value in ("nan", "inf", "-inf"):
        with pytest.raises(click.BadParameter, match="not a finite number"):
            FiniteFloat().convert(value, None, None)


def test_a_warning_reads_as_one_warning_line():
    """A library warning during a command prints ``warning: ...``, not a Python source location (click's
    or the package's) with its source line; in-process, the warning format is the caller's again after."""
    import subprocess
    import sys
    import warnings

    code = (
        "import warnings, click\n"
        "from omkl_dist.pipelines.cli import main\n"
        "@main.command('warns')\n"
        "def warns():\n"
        "    warnings.warn('the workers profile: set X=False', RuntimeWarning, stacklevel=2)\n"
        "main(['warns'])\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "warning: the workers profile: set X=False\n"
    before = warnings.formatwarning
    assert invoke("data", "info", "no-such-dataset").exit_code == 2  # the root group's callback ran
    assert warnings.formatwarning is before


def test_a_url_for_a_local_only_output_is_refused_not_taken_as_a_local_path(tmp_path, monkeypatch):
    """click's Path type turned `s3://b/t.json` into the local path `s3:/b/t.json`: a trace, a report
    or predictions went into a folder named `s3:`. A URL now reaches the output checks: outputs
    object storage does not take are one error naming the option (predictions are uploaded: see
    test_object_storage)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_text("".join(f"{i % 2},{i},{i * i % 7}\n" for i in range(40)))
    CliRunner().invoke(main, ["run", "spa", "--data", "d.csv", "--trace-out", "t.json", "--quiet"])
    for args in (
        ["run", "spa", "--data", "d.csv", "--trace-out", "s3://b/t.json"],
        ["report", "t.json", "--out", "s3://b/report"],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "cannot be written to a URL" in result.stderr, (args, result.stderr)
    assert not (tmp_path / "s3:").exists()


def test_every_option_for_a_local_folder_or_file_refuses_a_url(tmp_path, monkeypatch):
    """`omkl retrain --store s3://bkt/store` published its version into `./s3:/bkt/store` and said
    "promoted": click's Path type made the URL a local path. Every option and argument that takes
    a path on this machine (a model store, a write-ahead log, a cluster's folder, a report's
    source, ...) now refuses a URL, naming the option; a store's refusal says where a model may be
    at a URL instead."""
    monkeypatch.chdir(tmp_path)
    checked = []
    for ctx in _leaf_contexts(main, None):
        for param in ctx.command.params:
            if not isinstance(param.type, LocalPath):
                continue
            args = [*ctx.command_path.split()[1:], *(param.opts[:1] if isinstance(param, click.Option) else [])]
            result = CliRunner().invoke(main, [*args, "s3://bkt/x"])
            assert result.exit_code == 2 and "s3://bkt/x is a URL" in result.stderr, (args, result.stderr)
            if param.name == "store":
                assert "omkl models import" in result.stderr
            checked.append(ctx.command_path)
    assert {"omkl retrain", "omkl models list", "omkl serve", "omkl predict", "omkl report"} <= set(checked)
    assert len(checked) > 25 and list(tmp_path.iterdir()) == []


def test_a_learner_without_budget_projected_to_take_long_is_noted_once(capsys, monkeypatch):
    """`omkl run omkc` on a 1,000,000-row stream crawled (600 rows/s at row 125,000, slowing) with a
    progress bar's constant-speed estimate as the only sign. A learner without a budget whose pass,
    projected quadratically from its pace after the first block, exceeds NOTE_SECONDS gets one note
    naming the constant-cost learners; the demo's OMKC (S,S) on 200,000 rows (21 s) gets none, nor
    does SPA; the bar still gets every report."""
    from omkl_dist.pipelines import progress as module

    clock = [0.0]
    monkeypatch.setattr(module.time, "perf_counter", lambda: clock[0])
    seen = []
    # (algorithm, rows, seconds per block of 10,000 rows at the start): 1M rows at 10 s a block -> hours
    for algo, rows, pace in (("omkc", 1_000_000, 10.0), ("spa", 1_000_000, 10.0), ("omkc", 200_000, 0.1)):
        progress = module.advising(algo, seen.append)
        for n_seen in range(0, 100_001, 10_000):
            clock[0] += pace * (1 + n_seen / 10_000)  # (each block slower than the last)
            progress({"n_seen": n_seen, "n_mistakes": 0, "n_rows": rows, "done": False})
    err = capsys.readouterr().err
    assert err.count("note:") == 1 and "note: omkc keeps a support vector for every update" in err
    assert "the 1,000,000 rows take about" in err and "hours" in err and "bpas, rbp, forgetron or bogd" in err
    assert len(seen) == 33
