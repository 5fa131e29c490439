"""The BOMKL/SPA Table 1/2 reproduction: transcribed paper data and a small real run."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.kernels import make_pool
from omkl_dist.pipelines.cli import main
from omkl_dist.reproduction import bomkl as rp
from omkl_dist.reproduction import omkc
from omkl_dist.reproduction.tables.bomkl import (
    ALGORITHM_LABELS,
    BASELINE_BUDGET,
    BUDGET_BASELINES,
    DATASETS,
    IMPLEMENTED,
    NOT_IMPLEMENTED_NOTE,
    PAPER_DATASETS,
    SPA_BETA,
    TABLE_ALGORITHMS,
    TABLES,
)

# -- the transcribed tables ---------------------------------------------------------------------------


def test_paper_tables_are_well_formed():
    assert list(TABLES) == [
        ("table1", "german"),
        ("table1", "svmguide3"),
        ("table1", "madelon"),
        ("table1", "a9a"),
        ("table2", "a9a"),
        ("table2", "ijcnn1"),
        ("table2", "codrna"),
        ("table2", "SUSY"),
    ]
    assert set(ALGORITHM_LABELS) == {a for algos in TABLE_ALGORITHMS.values() for a in algos}
    assert set(IMPLEMENTED) | set(NOT_IMPLEMENTED_NOTE) == set(ALGORITHM_LABELS)
    assert not set(IMPLEMENTED) & set(NOT_IMPLEMENTED_NOTE)
    assert set(DATASETS) == set(PAPER_DATASETS) == set(SPA_BETA) == {n for _, n in TABLES}
    for (table, name), block in TABLES.items():
        assert block.table == table and block.name == name
        for cells in (block.mistake, block.sv, block.time):
            assert list(cells) == list(TABLE_ALGORITHMS[table]), (table, name)
        for algorithm in TABLE_ALGORITHMS[table]:
            m, s, t = block.mistake[algorithm], block.sv[algorithm], block.time[algorithm]
            assert 0.0 <= m.mean <= 100.0 and 0.0 <= m.std < 5.0, (name, algorithm)
            assert 0.0 < s.mean <= 16 * PAPER_DATASETS[name].n and s.std >= 0.0, (name, algorithm)
            assert math.isfinite(t.mean) and t.mean > 0.0 and t.std is None, (name, algorithm)
    # SPA's a9a row is printed in both tables, identically
    assert TABLES[("table1", "a9a")].mistake["spa"] == TABLES[("table2", "a9a")].mistake["spa"]
    assert TABLES[("table1", "a9a")].sv["spa"] == TABLES[("table2", "a9a")].sv["spa"]
    # spot checks
    assert (TABLES[("table1", "german")].mistake["spa"].mean, TABLES[("table1", "german")].mistake["spa"].std) == (
        30.19,
        0.29,
    )
    assert (TABLES[("table2", "codrna")].sv["spa"].mean, TABLES[("table2", "codrna")].sv["spa"].std) == (12631, 196.5)
    assert TABLES[("table2", "SUSY")].time["bpas"].mean == 167.6
    assert SPA_BETA["SUSY"] == 300.0 and all(v == 3.0 for k, v in SPA_BETA.items() if k != "SUSY")


def test_dataset_notes_say_what_differs():
    assert "59,535" in DATASETS["codrna"].note and DATASETS["codrna"].substitute
    assert "30,000" in DATASETS["SUSY"].note and "subsample" in DATASETS["SUSY"].note and DATASETS["SUSY"].substitute
    assert "32,561" in DATASETS["a9a"].note and DATASETS["a9a"].substitute
    assert DATASETS["ijcnn1"].rows == PAPER_DATASETS["ijcnn1"].n == 49990
    for name, src in DATASETS.items():
        assert src.note and src.registry, name


_NUM = r"(\d+(?:\.\d+)?)"
_PM = _NUM + r"\s*±\S*\s*\\pm\$?\s*" + _NUM


def _paper_text(data_dir):
    path = data_dir.parent / "papers" / "bomkl_budget_online_mkl_spa.md"
    if not path.is_file():
        pytest.skip(f"paper text not found at {path}")
    return path.read_text()


def _parse_paper_table(text, start, end, labels):
    """``{dataset: {algorithm: [(m, ms), (sv, svs), t] * 2 datasets per line}}`` from the markdown table."""
    block = text[text.index(start) : text.index(end)]
    out, pair = {}, None
    by_label = {v: k for k, v in labels.items()}
    by_label["BOMKC(SPA)"] = "spa"
    row = re.compile(r"^(\S+)\s+" + _PM + r"\s+" + _PM + r"\s+" + _NUM + r"\s+" + _PM + r"\s+" + _PM + r"\s+" + _NUM)
    for line in block.splitlines():
        head = re.match(r"^(?:BOMKC\s+)?(\w+)\s+(\w+)\s*$", line)
        if head and head.group(1) not in ("Algorithm", "Algorithms"):
            pair = (head.group(1), head.group(2))
            out.setdefault(pair[0], {})
            out.setdefault(pair[1], {})
            continue
        m = row.match(line)
        if m:
            g = [float(x) for x in m.groups()[1:]]
            algorithm = by_label[m.group(1)]
            out[pair[0]][algorithm] = ((g[0], g[1]), (g[2], g[3]), g[4])
            out[pair[1]][algorithm] = ((g[5], g[6]), (g[7], g[8]), g[9])
    return out


@pytest.mark.data
def test_transcription_matches_the_paper_text(data_dir):
    text = _paper_text(data_dir)
    t1 = _parse_paper_table(text, "Table 1: Evaluation", "First of all, we compare", ALGORITHM_LABELS)
    t2 = _parse_paper_table(text, "Table 2: Evaluation", "Refer to caption", ALGORITHM_LABELS)
    parsed = {"table1": t1, "table2": t2}
    assert {"german", "svmguide3", "madelon", "a9a"} <= set(t1) and {"a9a", "ijcnn1", "codrna", "SUSY"} <= set(t2)
    for (table, name), block in TABLES.items():
        paper = parsed[table][name]
        assert list(paper) == list(TABLE_ALGORITHMS[table]), (table, name)
        for algorithm, ((m, ms), (s, ss), t) in paper.items():
            assert (block.mistake[algorithm].mean, block.mistake[algorithm].std) == (m, ms), (table, name, algorithm)
            assert (block.sv[algorithm].mean, block.sv[algorithm].std) == (s, ss), (table, name, algorithm)
            assert block.time[algorithm].mean == t, (table, name, algorithm)


# -- selection and models ----------------------------------------------------------------------------------


def test_resolve_and_models():
    names, algos = rp.resolve_bomkl(["susy", "cod-rna", "german.numer"], ["SPA", "OMKC(DD)", "bpas"])
    assert names == ["german", "codrna", "SUSY"] and algos == ["omkc-dd", "spa", "bpas"]
    names, algos = rp.resolve_bomkl()
    assert names == list(DATASETS) and len(algos) == len(ALGORITHM_LABELS)
    with pytest.raises(ValueError, match="unknown dataset"):
        rp.resolve_bomkl(["magic04"])
    with pytest.raises(ValueError, match="unknown algorithm"):
        rp.resolve_bomkl(None, ["bpass-x"])
    spa = rp.make_bomkl_model("spa", 1, spa_beta=300.0)
    assert (spa.gamma, spa.delta, spa.eta, spa.alpha, spa.beta, spa.budget, spa.kernels) == (
        0.99,
        0.001,
        0.1,
        1.0,
        300.0,
        None,
        "omkc16",
    )
    dd, sd = rp.make_bomkl_model("omkc-dd"), rp.make_bomkl_model("omkc-sd")
    assert (dd.update, dd.combination, dd.beta, dd.delta) == ("D", "D", 0.99, 0.001)
    assert (sd.update, sd.combination) == ("S", "D")
    assert not NOT_IMPLEMENTED_NOTE and set(IMPLEMENTED) == set(ALGORITHM_LABELS)
    for algorithm in BUDGET_BASELINES:
        model = rp.make_bomkl_model(algorithm, 3, budget=443, n_rows=32561)
        assert (model.budget, model.gamma, model.kernels, model.random_state) == (443, 0.99, "omkc16", 3)
        if algorithm in ("bogd", "bpas"):
            assert model.eta == 0.1
    assert rp.make_bomkl_model("bogd", n_rows=1000).lam == 1e-6
    with pytest.raises(ValueError, match="unknown BOMKL algorithm"):
        rp.make_bomkl_model("projectron")


def test_flags_are_explained_from_the_data_or_the_transcribed_notes():
    from omkl_dist.reproduction.tables.bomkl import FLAG_NOTES, PAPER_SCALING

    assert set(PAPER_SCALING) == set(DATASETS) and set(PAPER_SCALING.values()) == {"none"}
    ijcnn1 = TABLES[("table2", "ijcnn1")].mistake
    # the paper's BOGD/BPAS on ijcnn1 sit on its positive rate, 9.708 %: a majority-class classifier
    for algorithm in ("bogd", "bpas"):
        assert "always predicting the majority class (9.708 % here)" in rp.explain_bomkl_flag(
            "ijcnn1", algorithm, ijcnn1[algorithm], 100 * 4853 / 49990
        )
    assert rp.explain_bomkl_flag("ijcnn1", "rbp", ijcnn1["rbp"], 100 * 4853 / 49990) == "not explained"
    madelon = TABLES[("table1", "madelon")].mistake
    assert "majority class" in rp.explain_bomkl_flag("madelon", "omkc-u", madelon["omkc-u"], 50.0)
    assert rp.explain_bomkl_flag("madelon", "spa", madelon["spa"], 50.0) == FLAG_NOTES[("madelon", "spa")]
    assert rp.make_bomkl_model("perceptron-star", perceptron_kernel="gaussian(sigma=8)").kernel == "gaussian(sigma=8)"
    codrna = TABLES[("table2", "codrna")].mistake  # (raw features: the scales, measured with --scaling standard)
    for algorithm in ("spa", "bpas", "rbp", "forgetron"):
        why = rp.explain_bomkl_flag("codrna", algorithm, codrna[algorithm], 33.3)
        assert "column 1 spans -1,868..0" in why and "(--scaling standard)" in why and "271,617" in why
    susy = TABLES[("table2", "SUSY")].mistake  # (a subsample: the baselines within tolerance at [-1, 1])
    for algorithm in ("rbp", "forgetron", "bogd", "bpas"):
        assert "(--scaling minmax-sym)" in rp.explain_bomkl_flag("SUSY", algorithm, susy[algorithm], 45.0)
    assert "T/300 per kernel" in rp.explain_bomkl_flag("SUSY", "spa", susy["spa"], 45.0)
    a9a = TABLES[("table2", "a9a")].mistake
    assert "lambda = 0.01 makes 19.74-19.81 %" in rp.explain_bomkl_flag("a9a", "bogd", a9a["bogd"], 24.1)
    assert "the paper's own 48,842" in rp.explain_bomkl_flag("a9a", "rbp", a9a["rbp"], 24.1)


def test_foresight_kernel_is_the_best_single_kernel_perceptron():
    """The search runs the 16 Perceptrons in one OMKC(U) pass; each must equal a Perceptron run alone."""
    from omkl_dist.algorithms import KernelPerceptron

    rng = np.random.default_rng(3)
    X = rng.normal(size=(160, 4))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1 > 0, 1.0, -1.0)
    alone = {}
    for name in make_pool("omkc16").names:
        alone[name] = KernelPerceptron(kernel=name, n_epochs=1, shuffle=False).fit(X, y).mistakes_
    best = min(alone, key=lambda k: (alone[k], list(alone).index(k)))
    assert rp.foresight_kernel(X, y) == best


def test_baseline_budgets_are_the_papers_sv_over_16():
    # 16 B is the #SV the paper prints for the baselines and ~ SPA's #SV (section 4.4)
    assert BASELINE_BUDGET == {"a9a": 443, "ijcnn1": 353, "codrna": 789, "SUSY": 124}
    for name, b in BASELINE_BUDGET.items():
        block = TABLES[("table2", name)]
        assert all(block.sv[a].mean == 16 * b for a in BUDGET_BASELINES)
        assert abs(block.sv["spa"].mean - 16 * b) < 8


# -- real data --------------------------------------------------------------------------------------------


@pytest.mark.data
def test_german_uses_the_authors_permutations(data_dir):
    data, perms = rp.load_bomkl_dataset("german", data_dir=data_dir)
    assert (data.n, data.d) == (1000, 24) and perms is not None and perms.shape == (20, 1000)
    assert sorted(perms[0].tolist()) == list(range(1000))
    data, perms = rp.load_bomkl_dataset("ijcnn1", data_dir=data_dir)
    assert data.n == 49990 and perms is None


@pytest.mark.data
def test_small_real_run_prints_a_table_with_numbers(data_dir, tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        [
            "reproduce",
            "bomkl",
            "--permutations",
            "1",
            "--datasets",
            "german,svmguide3",
            "--algorithms",
            "spa,perceptron-star,omkc-u",
            "--quiet",
            "--json",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    report = json.loads(lines[-1])
    assert report["experiment"] == "bomkl"
    assert json.loads(out.read_text())["summary"]["rows_compared"] == 6
    assert [(b["table"], b["paper_name"]) for b in report["datasets"]] == [
        ("table1", "german"),
        ("table1", "svmguide3"),
    ]
    assert report["datasets"][0]["permutations_from_file"] == 1
    for block in report["datasets"]:
        assert [r["algorithm"] for r in block["rows"]] == ["perceptron-star", "omkc-u", "spa"]
        for r in block["rows"]:
            assert 0.0 <= r["ours"]["mistake_rate"]["mean"] <= 100.0
            recorded = r["ours"]["seconds"]["mean"]  # a learning time was measured (no limit on it)
            assert r["ours"]["n_support"]["mean"] > 0 and recorded > 0
            assert isinstance(r["flagged"], bool)
    text = "\n".join(lines[:-1])
    spa = [ln for ln in text.splitlines() if ln.startswith("SPA ")]
    assert len(spa) == 2 and re.search(r"\d+\.\d\d ± \d+\.\d\d\s+30\.19 ± 0\.29", spa[0])
    assert re.search(r"23\.53 ± 0\.24", spa[1])
    assert len([ln for ln in text.splitlines() if ln.startswith("OMKC(U) ")]) == 2
    assert "Table 1" in text
    assert re.search(r"^flagged rows: \d+ of 6 compared", text, re.M)


def test_duplicate_rows_are_counted_once():
    row = {"ours": {}, "deviation_pp": 1.5, "flagged": True}
    report = {
        "datasets": [
            {"substitute": False, "rows": [dict(row)]},
            {"substitute": False, "rows": [dict(row, duplicate=True)]},
        ]
    }
    s = omkc.summarize(report)
    assert s["rows_compared"] == 1 and s["flagged"] == 1


@pytest.mark.data
def test_budget_baselines_run_in_table2(data_dir, monkeypatch):
    """Table 2's budget rows are run (no "n/a") with B = paper SPA #SV / 16 per kernel, said in the header.
    On the first 400 rows of SUSY to stay fast (B = 124)."""
    from omkl_dist.pipelines.reproduce import format_reproduce_report

    load = rp.load_bomkl_dataset

    def small(name, scaling="paper", data_dir=None):
        data, perms = load(name, scaling, data_dir=data_dir)
        return omkc.PreparedData(
            data.paper_name, data.registry, data.file, data.X[:400], data.y[:400], data.scaling, data.repair_note
        ), perms

    monkeypatch.setattr(rp, "load_bomkl_dataset", small)
    report = rp.reproduce_bomkl(["SUSY"], list(BUDGET_BASELINES), permutations=1, warm_up=False)
    (block,) = report["datasets"]
    assert block["table"] == "table2" and block["baseline_budget"] == 124
    assert [r["algorithm"] for r in block["rows"]] == list(BUDGET_BASELINES)
    for row in block["rows"]:
        assert row["implemented"] and row["ours"] is not None
        assert 0 < row["ours"]["n_support"]["mean"] <= 16 * 124
        assert 0.0 <= row["ours"]["mistake_rate"]["mean"] <= 100.0
    assert report["settings"]["baseline_budget"] == {"SUSY": 124}
    text = format_reproduce_report(report)
    assert "n/a" not in text
    assert "budget B per kernel = paper SPA #SV / 16 (SUSY 124)" in text
    assert "B = 124 support vectors per kernel" in text
    for label in ("RBP", "Forgetron", "BOGD", "BPAS"):
        assert re.search(rf"^{label}\s+\d+\.\d\d ± \d+\.\d\d", text, re.M), label


@pytest.mark.data
def test_susy_size_study_runs_on_real_and_generated_rows(data_dir):
    from omkl_dist.pipelines.studies.susy import markdown, run_susy_study

    result = run_susy_study(None, permutations=1, susy_sizes=(3000,), synth_sizes=(3000, 6000), data_dir=data_dir)
    real, short, longer = result["rows"]
    assert (real["data"], real["rows"], short["rows"], longer["rows"]) == ("SUSY subsample", 3000, 3000, 6000)
    for row in result["rows"]:
        assert 0 < row["n_support"] <= 16 * row["rows"] and 0.0 <= row["mistake_rate"] <= 100.0
    assert longer["n_support"] > short["n_support"]  # at beta = 300 the SVs grow with the stream
    assert "| paper: UCI SUSY subsample | 1,000,000 | 10 | 34.57 ± 0.36 |" in markdown(result)
