"""``omkl study defaults``: a tiny study writes its JSONL, resumes, reports; the report is a pure
function of the records; the generated datasets have the documented shapes; bad options exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.pipelines.studies.defaults_axes import axes_markdown, axis_rows
from omkl_dist.pipelines.studies.defaults_compare import against, format_side_by_side
from omkl_dist.pipelines.studies.defaults_data import letters_shaped, magic04_shaped
from omkl_dist.pipelines.studies.defaults_markdown import benchmarks_section, format_markdown
from omkl_dist.pipelines.studies.defaults_plan import COMBINATIONS, FORMS, SCALINGS, study_spec
from omkl_dist.pipelines.studies.defaults_records import run_key
from omkl_dist.pipelines.studies.defaults_report import build_report
from omkl_dist.pipelines.studies.defaults_run import run_task, single_threaded


def invoke(*args):
    return CliRunner().invoke(main, ["study", "defaults", *map(str, args)], catch_exceptions=False)


#: what one run's JSONL record holds (the report reads its mistakes, support vectors and times)
RECORD_FIELDS = {
    "algorithm",
    "block_size",
    "code",
    "cpu_seconds",
    "created",
    "dataset",
    "kernel_spec",
    "kernels",
    "max_rows",
    "mistake_rate",
    "mistakes",
    "n",
    "n_classes",
    "n_features",
    "n_support",
    "permutation",
    "prefix_mistakes",
    "rows_available",
    "scale_rows",
    "scaling",
    "seconds",
    "seed",
    "settings",
    "wall_seconds",
}


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tiny_study_writes_resumes_and_reports(data_dir, tmp_path):
    results, doc = tmp_path / "study.jsonl", tmp_path / "defaults.md"
    common = (
        "--algorithms",
        "perceptron,omkc-dd",
        "--datasets",
        "glass,fourclass",
        "--max-rows",
        200,
        "--workers",
        1,
        "--results",
        results,
        "--doc",
        doc,
        "--quiet",
    )
    res = invoke(*common, "--permutations", 2)
    assert res.exit_code == 0, res.output
    records = _lines(results)
    assert len(records) == 2 * 2 * 6 * 2 and not any("error" in r for r in records)
    assert {r["n"] for r in records} == {200} and {r["max_rows"] for r in records} == {200}
    assert {(r["scaling"], r["kernels"]) for r in records} == {(s, f) for s in SCALINGS for f in FORMS}
    assert all(set(r) == RECORD_FIELDS and 0 <= r["mistake_rate"] < 1 for r in records)
    assert {r["n_classes"] for r in records if r["dataset"] == "glass"} == {6}
    # the same run, computed twice, gives the same mistakes
    assert len({(run_key(r), r["mistakes"]) for r in records}) == len(records)

    res = invoke(*common, "--permutations", 3)  # resume: only permutation 2 is new
    assert res.exit_code == 0, res.output
    assert "ran 24 of 72 planned runs (48 already done)" in res.output
    assert len(_lines(results)) == 72 and _lines(results)[:48] == records

    text = doc.read_text()
    for heading in ("## Protocol", "## Overall", "## Perceptron (`perceptron`", "## OMKC (D,D) (`omkc-dd`"):
        assert heading in text
    assert "| dataset | none | minmax | standard | none+norm | minmax+norm | standard+norm |" in text
    assert text.count("| glass | ") == 2 and text.count("| fourclass | ") == 2 and "**" in text
    assert "200 rows" in text or "first 200 rows" in text
    assert "SCALE_ROWS" in text and "test split of" not in text.split("## Overall")[1]
    summary = json.loads((tmp_path / "study.json").read_text())
    assert summary["runs"] == 72 and summary["permutations"] == 3
    for algorithm in ("perceptron", "omkc-dd"):
        s = summary["summaries"][algorithm]
        assert s["rows"] == 2 and s["winner"] in COMBINATIONS
        assert sum(c["best"] for c in s["combinations"].values()) >= 2

    res = invoke("--report-only", "--max-rows", 200, "--results", results, "--doc", tmp_path / "again.md", "--json")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "again.md").read_text() == text
    assert json.loads(res.output.strip().splitlines()[-1])["runs"] == 72


def test_a_cut_short_line_is_done_again(data_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    args = (
        "--algorithms",
        "perceptron",
        "--datasets",
        "fourclass",
        "--permutations",
        1,
        "--max-rows",
        50,
        "--workers",
        1,
        "--results",
        results,
        "--doc",
        tmp_path / "d.md",
        "--quiet",
    )
    assert invoke(*args).exit_code == 0
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])  # killed mid-write
    res = invoke(*args)
    assert res.exit_code == 0 and "1 unreadable line" in res.output and "ran 1 of 6" in res.output
    res = invoke(*args)  # the redone run was written on a line of its own
    assert res.exit_code == 0 and "ran 0 of 6 planned runs (6 already done)" in res.output


def test_worker_processes(data_dir, tmp_path):
    results = tmp_path / "r.jsonl"
    res = invoke(
        "--algorithms",
        "perceptron",
        "--datasets",
        "magic04-shaped",
        "--permutations",
        2,
        "--max-rows",
        60,
        "--workers",
        2,
        "--results",
        results,
        "--doc",
        tmp_path / "d.md",
    )
    assert res.exit_code == 0, res.output
    assert len(_lines(results)) == 12 and "[12/12 runs" in res.output
    with single_threaded():  # the same runs in this process: the same mistakes
        again = run_task(
            {
                k: _lines(results)[0][k]
                for k in (
                    "algorithm",
                    "dataset",
                    "scaling",
                    "kernels",
                    "kernel_spec",
                    "permutation",
                    "max_rows",
                    "settings",
                )
            }
        )
    assert again["mistakes"] == _lines(results)[0]["mistakes"]


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_users_study_writes_a_new_folder_of_theirs(data_dir, tmp_path, monkeypatch):
    """Issue 41: run in a checkout, the study once rewrote docs/defaults.md and the summary in
    benchmarks/results; its outputs now default to a new folder, and a file that is not a report of
    ours is never replaced."""
    checkout = tmp_path / "checkout"
    for name in ("docs/defaults.md", "benchmarks/results/study-defaults.json"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("the project's evidence\n")
    monkeypatch.chdir(checkout)
    before = _files(checkout)
    tiny = ("--algorithms", "perceptron", "--datasets", "magic04-shaped", "--permutations", 1, "--max-rows", 40)
    tiny += ("--workers", 1, "--quiet")
    for folder in ("study-defaults", "study-defaults-2"):  # a default never replaces an earlier study
        res = invoke(*tiny)
        assert res.exit_code == 0, res.output
        assert f"report: runs/{folder}/study-defaults.md and runs/{folder}/study-defaults.json" in res.output
    after = _files(checkout)
    assert {name: after[name] for name in before} == before
    assert {name for name in after if name not in before} == {
        f"runs/{folder}/study-defaults.{suffix}"
        for folder in ("study-defaults", "study-defaults-2")
        for suffix in ("jsonl", "json", "md")
    }
    res = invoke(*tiny, "--doc", "docs/defaults.md")  # refused before any run
    assert res.exit_code == 2 and "not a Markdown report written by omkl-dist" in res.output
    res = invoke("--report-only", "--max-rows", 40)
    assert res.exit_code == 2 and "--report-only reports on a study's runs: name them with --results" in res.output
    assert _files(checkout) == after
    # a study's own report is replaced: regenerated from its runs
    res = invoke("--report-only", "--max-rows", 40, "--results", "runs/study-defaults/study-defaults.jsonl")
    assert res.exit_code == 0, res.output
    assert _files(checkout) == after


def test_bad_options_exit_2_with_one_line(data_dir, tmp_path):
    base = ("--results", tmp_path / "r.jsonl", "--doc", tmp_path / "d.md", "--quiet")
    cases = [
        (("--algorithms", "omkcc"), "unknown algorithm 'omkcc' (did you mean"),
        (("--datasets", "fourclas"), "unknown dataset 'fourclas' (did you mean fourclass"),
        (("--datasets", " , "), "no dataset given"),
        (("--report-only",), "holds no runs yet"),
        (("--report-only", "--workers", 1), "--workers: nothing runs with --report-only"),
        (("--permutations", 0), "--permutations"),
        (("--max-rows", -3), "--max-rows"),
        (("--max-rows", "most"), "neither a positive number of rows nor 'all'"),
        (("--axes", "hedge"), "unknown axis 'hedge' (did you mean hedge_loss"),
    ]
    for args, message in cases:
        res = invoke(*args, *base)
        assert res.exit_code == 2 and message in res.output, (args, res.output)
        if args[0] not in ("--permutations", "--max-rows"):  # click's own range checks show the usage
            assert res.output.startswith("error: ") and len(res.output.strip().splitlines()) == 1, res.output
    (tmp_path / "r.jsonl").write_text(json.dumps(_record("perceptron", "x", "none", 10.0)) + "\n")
    res = invoke("--report-only", "--max-rows", 300, *base)
    assert res.exit_code == 2 and "no runs at --max-rows 300" in res.output and "--max-rows 200" in res.output
    assert len(res.output.strip().splitlines()) == 1


# -- the report, from hand-made records (no data) --------------------------------------------------------------


def _record(algorithm, dataset, combination, rate, permutation=0, seconds=0.01):
    scaling, _, norm = combination.partition("+")
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "scaling": scaling,
        "kernels": "norm" if norm else "raw",
        "kernel_spec": "omkc16" + ("+norm" if norm else ""),
        "permutation": permutation,
        "max_rows": 200,
        "n": 200,
        "rows_available": 500,
        "n_features": 4,
        "n_classes": 2,
        "mistakes": int(2 * rate),
        "mistake_rate": rate / 100,
        "seconds": seconds,
        "wall_seconds": 2 * seconds,
        "n_support": 5,
    }


def _study(rates: dict) -> list:
    """{dataset: {combination: (rate of permutation 0, rate of permutation 1)}} -> records."""
    return [
        _record("omkc-dd", d, c, r, p)
        for d, row in rates.items()
        for c, pair in row.items()
        for p, r in enumerate(pair)
    ]


def test_report_counts_wins_margins_and_losses():
    minmax_wins = {
        "none": (20, 22),
        "minmax": (10, 12),
        "standard": (10.2, 12.2),
        "none+norm": (30, 30),
        "minmax+norm": (15, 15),
        "standard+norm": (16, 16),
    }
    report = build_report(
        _study(
            {
                "a": minmax_wins,
                "b": {**minmax_wins, "standard": (13, 15)},  # minmax best by 2 points
                "c": {**minmax_wins, "standard+norm": (5, 5)},  # minmax loses by 6 points
            }
        ),
        max_rows=200,
    )
    s = report["summaries"]["omkc-dd"]
    assert s["rows"] == 3 and s["winner"] == "minmax"
    mm, st = s["combinations"]["minmax"], s["combinations"]["standard"]
    assert (mm["best"], mm["near"]) == (2, 2) and mm["mean_margin"] == pytest.approx((0.2 + 3.0) / 2)
    assert mm["mean_gap"] == pytest.approx(6 / 3) and mm["max_gap"] == pytest.approx(6)
    assert (st["best"], st["near"]) == (0, 1)  # within 0.5 on a only
    assert [(loss["dataset"], loss["best"]) for loss in s["losses"]] == [("c", ["standard+norm"])]
    assert s["losses"][0]["gap"] == pytest.approx(6)
    text = format_markdown(report)
    assert "| a | 21.00 ± 1.41 | **11.00 ± 1.41** | 11.20 ± 1.41 |" in text
    assert "loses by more than 1 point on 1 row: c (11.00 vs 5.00 with standard+norm, +6.00)" in text
    assert report["overall"]["winner"] == "minmax" and report["overall"]["winners"]["minmax"] == ["omkc-dd"]
    section = benchmarks_section(report)
    assert section.startswith("## Defaults study, 200 rows (") and "### Overall" in section and "36 runs" in section


def test_report_marks_missing_partial_and_failed_cells():
    records = _study({"a": {"none": (10, 11), "minmax": (9, 9)}, "b": {"none": (10,), "minmax": (12, 12)}})
    records.append({**_record("omkc-dd", "c", "none", 0), "error": "ValueError: boom"})
    del records[-1]["mistake_rate"]
    report = build_report(records, max_rows=200)
    assert report["combinations"] == ["none", "minmax"] and report["permutations"] == 2
    text = format_markdown(report)
    assert "| b | **10.00 ± 0.00** (n=1) | 12.00 ± 0.00 |" in text
    assert "| c | error | — |" in text and "omkc-dd on c: ValueError: boom" in text
    assert report["summaries"]["omkc-dd"]["rows"] == 2  # c has no complete row
    with pytest.raises(ValueError, match="no runs at --max-rows 7"):
        build_report(records, max_rows=7)


def test_a_later_record_of_a_run_replaces_an_earlier_one():
    failed = {**_record("omkc-dd", "a", "none", 0), "error": "RuntimeError: half-edited code"}
    report = build_report([failed, _record("omkc-dd", "a", "none", 12.5)], max_rows=200)
    assert report["tables"]["omkc-dd"]["rows"]["a"]["none"]["mean"] == 12.5


# -- the generated datasets --------------------------------------------------------------------------------------


def test_magic04_shaped_has_the_documented_shape():
    d = magic04_shaped()
    assert d.X.shape == (19_020, 10) and d.classes == [-1, 1]
    assert 0.63 < np.mean(d.y == -1) < 0.67  # g ~65 %
    spans = d.X.max(axis=0) - d.X.min(axis=0)
    assert spans.max() / spans.min() > 100  # very different scales: scaling matters
    np.testing.assert_array_equal(magic04_shaped().X, d.X)  # deterministic


def test_letters_shaped_has_the_documented_shape():
    d = letters_shaped()
    assert d.X.shape == (15_000, 16) and d.classes == list(range(26)) and set(np.unique(d.y)) == set(range(26))
    spans = d.X.max(axis=0) - d.X.min(axis=0)
    assert spans.max() / spans.min() > 30


# -- whole streams, the axes, the prefixes, and the page of both studies (issue 35) ---------------------------


def test_prefix_mistakes_are_the_mistakes_of_the_stream_cut_there():
    """A whole run's cumulative mistakes at each prefix are what a run of only those rows makes (the
    offline race over a stream's head reads them); unscaled rows: a cut stream's scaler would differ."""
    task = {
        "algorithm": "omkc-ss",
        "dataset": "magic04-shaped",
        "scaling": "none",
        "kernels": "norm",
        "kernel_spec": study_spec("omkc-ss", {}, "norm"),
        "permutation": 1,
        "settings": {},
    }
    with single_threaded():
        whole = run_task({**task, "max_rows": 600})
        assert "error" not in whole, whole
        assert [h for h, _ in whole["prefix_mistakes"]] == [250, 500, 600]
        assert whole["prefix_mistakes"][-1][1] == whole["mistakes"]
        for rows, mistakes in whole["prefix_mistakes"][:-1]:
            assert run_task({**task, "max_rows": rows})["mistakes"] == mistakes


def test_whole_streams_with_axes(data_dir, tmp_path):
    results = tmp_path / "whole.jsonl"
    args = ("--algorithms", "spa,perceptron", "--datasets", "fourclass", "--permutations", 1, "--max-rows", "all")
    args += ("--axes", "hedge_loss,budget", "--workers", 1, "--results", results, "--doc", tmp_path / "d.md")
    res = invoke(*args, "--quiet")
    assert res.exit_code == 0, res.output
    records = _lines(results)
    # the Perceptron has no axis that applies; SPA runs its six combinations at each Hedge loss
    assert len(records) == 6 + 2 * 6 and not any("error" in r for r in records)
    assert {r["max_rows"] for r in records} == {None} and {r["n"] for r in records} == {862}
    assert all(r["n"] == r["rows_available"] and r["prefix_mistakes"][-1] == [862, r["mistakes"]] for r in records)
    spa = {json.dumps(r["settings"]) for r in records if r["algorithm"] == "spa"}
    assert spa == {"{}", '{"hedge_loss": "mistake"}'}
    assert "ran 0 of 18 planned runs (18 already done)" in invoke(*args, "--quiet").output  # resumed
    text = (tmp_path / "d.md").read_text()
    assert "learnt whole (`--max-rows all`)" in text and "## SPA (BOMKL), hedge_loss=mistake (`spa hedge_loss" in text
    assert "max-rows all" in res.output


def _side_by_side(cap_rates: dict, whole_rates: dict):
    """Two studies of omkc-dd on datasets a, b: {dataset: {combination: rate}} at 200 rows and whole."""
    cap = build_report(
        [_record("omkc-dd", d, c, r) for d, row in cap_rates.items() for c, r in row.items()], max_rows=200
    )
    whole = [
        {**_record("omkc-dd", d, c, r), "max_rows": None} for d, row in whole_rates.items() for c, r in row.items()
    ]
    whole.append({**_record("omkc-dd", "a", "minmax", 1.0), "max_rows": None, "settings": {"pool": "gaussian:1"}})
    report = build_report(whole, max_rows=None)
    report["against"] = against(cap, report, "cap.json")
    return report, format_side_by_side(cap, report)


def test_the_page_lists_where_the_whole_stream_and_the_cap_disagree():
    six = dict.fromkeys(COMBINATIONS, 20.0)
    report, text = _side_by_side(
        {"a": {**six, "minmax": 10.0}, "b": {**six, "none": 10.0}},
        {"a": {**six, "standard+norm": 12.0, "minmax": 15.0}, "b": {**six, "none": 11.0}},
    )
    rows = {r["dataset"]: r for r in report["against"]["rows"]}
    assert (rows["a"]["cap_winner"], rows["a"]["whole_winner"]) == ("minmax", "standard+norm")
    assert rows["a"]["gap"] == pytest.approx(3.0) and rows["b"]["gap"] == 0
    # the best cell of the whole stream is over every setting run: the other pool's
    assert rows["a"]["best"] == {"settings": {"pool": "gaussian:1"}, "combination": "minmax", "mean": 1.0}
    assert "1 of 2 complete rows choose differently (1 by more than 0.5 points on the whole stream)" in text
    assert "- omkc-dd on a: minmax at 200 rows, standard+norm on the whole stream (15.00 vs 12.00, +3.00)" in text
    assert "| omkc-dd | a | minmax, pool=gaussian:1: 1.00 | 12.00 | standard+norm: 12.00 | minmax (10.00) |" in text
    for heading in ("## Whole streams against the first 200 rows", "## Whole streams", "## The first 200 rows"):
        assert f"\n{heading}" in text
    assert "--max-rows all --compare cap.json --doc FILE" in text


def test_the_page_says_what_each_other_setting_buys_in_points_and_cpu_time():
    six = dict.fromkeys(COMBINATIONS, 20.0)
    whole = [{**_record("bpas", "a", c, r), "max_rows": None, "cpu_seconds": 1.0} for c, r in six.items()]
    whole += [
        {**_record("bpas", "a", c, r - 3.0), "max_rows": None, "settings": {"budget": 400}, "cpu_seconds": 2.5}
        for c, r in six.items()
    ]
    # a record without its CPU time: the ratio is not guessed from the wall time a shared machine inflated
    whole += [
        {**_record("bpas", "a", c, r + 1.0), "max_rows": None, "settings": {"pool": "gaussian:1"}}
        for c, r in six.items()
    ]
    report = build_report(whole, max_rows=None)
    rows = {r["setting"]: r for r in axis_rows(report)}
    assert set(rows) == {"budget=400", "pool=gaussian:1"}
    assert rows["budget=400"]["change"] == pytest.approx(-3.0) and rows["budget=400"]["time"] == pytest.approx(2.5)
    assert rows["pool=gaussian:1"]["time"] is None
    text = "\n".join(axes_markdown(report))
    assert "| bpas | budget=400 | a | standard+norm | 20.00 | 17.00 | -3.00 | 2.50x |" in text
    assert "| bpas | pool=gaussian:1 | a | standard+norm | 20.00 | 21.00 | +1.00 | — |" in text
    assert "- bpas with budget=400: -3.00 points on average over 1 dataset(s)" in text
