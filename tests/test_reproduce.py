"""The OMKC Table 3/4 reproduction: transcribed paper data, the flagging rule, and a small real run."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.reproduction import omkc as rp
from omkl_dist.reproduction.tables.omkc import ALGORITHM_LABELS, ALGORITHMS, DATASETS, IMPLEMENTED, PAPER

# -- the transcribed tables ---------------------------------------------------------------------------


def test_paper_tables_are_well_formed():
    assert list(PAPER) == [
        "ionosphere",
        "votes84",
        "wdbc",
        "breast",
        "australian",
        "diabetes",
        "fourclass",
        "splice",
        "dorothea",
        "svmguide3",
        "svmguide1",
        "a3a",
        "spambase",
        "mushrooms",
        "w5a",
    ]
    assert set(DATASETS) == set(PAPER)
    assert set(ALGORITHM_LABELS) == set(ALGORITHMS)
    assert set(IMPLEMENTED) == set(ALGORITHMS)
    for name, ds in PAPER.items():
        assert ds.name == name and ds.n > 0 and ds.d > 0 and ds.best_kernel
        for table, upper in ((ds.mistake, 100.0), (ds.sv, 16 * ds.n), (ds.time, 60.0)):
            assert list(table) == list(ALGORITHMS), name
            for algorithm, cell in table.items():
                assert math.isfinite(cell.mean) and math.isfinite(cell.std), (name, algorithm)
                assert 0.0 <= cell.mean <= upper and 0.0 <= cell.std < max(cell.mean, 0.01), (name, algorithm, cell)
    # spot checks against the paper text
    assert (PAPER["ionosphere"].mistake["omkc-dd"].mean, PAPER["ionosphere"].mistake["omkc-dd"].std) == (16.07, 1.42)
    assert (PAPER["w5a"].sv["omkc-dd"].mean, PAPER["w5a"].sv["omkc-dd"].std) == (28705.4, 143.4)
    assert (PAPER["mushrooms"].time["omkc-ss"].mean, PAPER["mushrooms"].time["omkc-ss"].std) == (2.724, 0.129)


def test_dataset_sources_are_documented():
    for name, src in DATASETS.items():
        assert src.note, name
        if src.registry is None:
            assert "not available" in src.note
    assert {k for k, s in DATASETS.items() if s.substitute} == {"a3a", "w5a"}
    assert DATASETS["w5a"].registry == "w1a" and DATASETS["a3a"].registry == "a1a"
    assert set(rp.PAPER_SCALING) == set(PAPER)
    assert set(rp.PAPER_SCALING.values()) <= set(rp.SCALINGS) - {"paper"}


def _paper_text(data_dir):
    path = data_dir.parent / "papers" / "omkc_online_multiple_kernel_classification.md"
    if not path.is_file():
        pytest.skip(f"paper text not found at {path}")
    return path.read_text()


def _parse_paper_block(block, columns):
    number = r"(\d+(?:\.\d+)?)\s*(?:±|\$\\pm\$|<math>\\pm</math>)\s*(\d+(?:\.\d+)?)"
    out, current = {}, None
    for line in block.splitlines():
        head = re.match(r"^(\w+)\s+n=\s*(\d+)\s+d=\s*(\d+)", line)
        if head:
            current = head.group(1).lower().replace("lonosphere", "ionosphere")
            out[current] = {"n": int(head.group(2)), "d": int(head.group(3))}
            continue
        for key, label in (("mistake", "Mistake"), ("sv", "SV"), ("time", "Time")):
            if line.startswith(label):
                values = [(float(a), float(b)) for a, b in re.findall(number, line)]
                assert len(values) == len(columns), line
                out[current][key] = dict(zip(columns, values))
    return out


@pytest.mark.data
def test_transcription_matches_the_paper_text(data_dir):
    text = _paper_text(data_dir)
    t3 = _parse_paper_block(
        text[text.index("Algorithm\tPerceptron\tPerceptron (u)") : text.index("## 5.2")],
        ["perceptron", "perceptron-u", "perceptron-star", "om2", "omkc-dd"],
    )
    t4 = _parse_paper_block(
        text[text.index("Algorithm\tOM-2\tOMKC") : text.index("Fig. 2:")],
        ["om2", "omkc-dd", "omkc-ds", "omkc-sd", "omkc-ss"],
    )
    assert list(t3) == list(PAPER) == list(t4)
    for name, ds in PAPER.items():
        assert (ds.n, ds.d) == (t3[name]["n"], t3[name]["d"])
        for key in ("mistake", "sv", "time"):
            for table in (t3, t4):
                for algorithm, (mean, std) in table[name][key].items():
                    cell = getattr(ds, key)[algorithm]
                    assert (cell.mean, cell.std) == (mean, std), (name, key, algorithm)


# -- the flagging rule -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ours, mean, std, flagged",
    [
        (16.07, 16.07, 1.42, False),  # identical
        (18.90, 16.07, 1.42, False),  # 2.83 <= 2 * 1.42
        (18.92, 16.07, 1.42, True),  # 2.85 > 2.84
        (13.22, 16.07, 1.42, True),  # below the paper, same rule
        (1.30, 0.32, 0.04, False),  # 0.98: the 1-point floor, not 2 * 0.04, applies
        (1.33, 0.32, 0.04, True),  # 1.01 > 1.0
        (5.0, 4.0, 0.5, False),  # exactly at the floor: not flagged (strict inequality)
        (37.0, 22.07, 6.77, True),  # 14.93 > 13.54
        (35.0, 22.07, 6.77, False),  # 12.93 <= 13.54
    ],
)
def test_flag_rule(ours, mean, std, flagged):
    assert rp.flag_deviation(ours, mean, std) is flagged
    assert rp.tolerance(std) == max(2 * std, 1.0)


def test_flag_rule_custom_floor():
    assert rp.flag_deviation(2.0, 1.0, 0.1, min_pp=0.5) is True
    assert rp.flag_deviation(2.0, 1.0, 0.1, min_pp=1.5) is False


def test_summary_counts_substitutes_separately():
    def row(dev, flagged, ours=True):
        return {"ours": {} if ours else None, "deviation_pp": dev, "flagged": flagged}

    report = {
        "datasets": [
            {"substitute": False, "rows": [row(0.5, False), row(-3.0, True), row(None, None, ours=False)]},
            {"substitute": True, "rows": [row(2.5, True)]},
        ]
    }
    s = rp.summarize(report)
    assert (s["rows_compared"], s["rows_compared_same_data"]) == (3, 2)
    assert (s["flagged"], s["flagged_same_data"], s["flagged_substitute"]) == (2, 1, 1)
    assert s["mean_abs_deviation_pp"] == pytest.approx(2.0)
    assert s["mean_abs_deviation_same_data_pp"] == pytest.approx(1.75)


# -- selection and models ----------------------------------------------------------------------------------


def test_resolve_names():
    run, skip = rp.resolve_datasets(["w1a", "breast-cancer", "spambase", "ionosphere", "a3a"])
    assert run == ["ionosphere", "breast", "a3a", "w5a"] and skip == ["spambase"]
    run, skip = rp.resolve_datasets(None)
    assert skip == ["dorothea", "spambase"] and len(run) == 13
    with pytest.raises(ValueError, match="unknown dataset 'ionosfere'.*ionosphere"):
        rp.resolve_datasets(["ionosfere"])
    assert rp.resolve_algorithms(["omkc", "perceptron"]) == ["perceptron", "omkc-dd", "omkc-ds", "omkc-sd", "omkc-ss"]
    assert rp.resolve_algorithms(["OMKC(S,S)", "om2"]) == ["om2", "omkc-ss"]
    with pytest.raises(ValueError, match="unknown algorithm"):
        rp.resolve_algorithms(["omkc-xx"])


def test_models_have_the_paper_settings():
    dd = rp.make_model("omkc-dd", 3)
    assert (dd.update, dd.combination, dd.beta, dd.delta, dd.kernels) == ("D", "D", 0.8, 0.01, "omkc16")
    sd = rp.make_model("omkc-sd", 3)
    assert (sd.update, sd.combination) == ("S", "D")
    assert rp.make_model("perceptron").kernel == "linear"
    assert rp.make_model("perceptron-star").validation_fraction == 0.1
    om2 = rp.make_model("om2")
    assert (om2.kernels, om2.p, om2.norm, om2.n_epochs) == ("omkc16", 1.01, "exact", 1)


def test_support_vector_conventions():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    y = np.where((X**2).sum(1) > 2.5, 1.0, -1.0)
    pu = rp.run_once("perceptron-u", X, y)
    assert pu["n_support_stored"] == 16 * pu["n_support"]  # one set, stored once per kernel
    for algorithm in ("omkc-ds", "omkc-ss"):
        r = rp.run_once(algorithm, X, y, random_state=5)
        assert 0 < r["n_support"] <= r["n_support_stored"]
    dd = rp.run_once("omkc-dd", X, y)
    assert dd["n_support"] == dd["n_support_stored"]


def test_tie_rules():
    score = np.array([0.0, 0.0, 0.5, -0.5, 0.5])
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    assert rp.count_mistakes(score, y, "mistake") == 4  # both zeros, and two wrong signs
    assert rp.count_mistakes(score, y, "positive") == 3  # the zero on a positive is right
    with pytest.raises(ValueError, match="ties"):
        rp.count_mistakes(score, y, "random")


def test_mistake_rule_matches_the_models_own_count():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 4))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    for algorithm in ("perceptron", "omkc-ds", "omkc-ss"):
        model = rp.make_model(algorithm, 7)
        out = model.progressive_partial_fit(X, y, classes=[-1.0, 1.0])
        assert rp.count_mistakes(out["score"], y, "mistake") == int(out["mistakes"].sum()) == model.mistakes_
        r = rp.run_once(algorithm, X, y, random_state=7)
        assert r["mistakes"] == model.mistakes_  # same seed, same run
        assert rp.run_once(algorithm, X, y, random_state=7, ties="positive")["mistakes"] <= r["mistakes"]


def test_scalings_fit_on_the_whole_dataset():
    X = np.array([[0.0, 10.0], [5.0, 20.0], [10.0, 30.0]])
    assert np.array_equal(rp.scale_features(X, "none"), X)
    assert rp.scale_features(X, "minmax").min() == 0.0 and rp.scale_features(X, "minmax").max() == 1.0
    sym = rp.scale_features(X, "minmax-sym")
    assert np.array_equal(sym[:, 0], [-1.0, 0.0, 1.0])
    assert np.allclose(rp.scale_features(X, "standard").mean(0), 0.0)
    with pytest.raises(ValueError, match="unknown scaling"):
        rp.scale_features(X, "paper")


# -- real data --------------------------------------------------------------------------------------------


@pytest.mark.data
def test_breast_repair_restores_the_papers_683_rows(data_dir):
    data = rp.load_paper_dataset("breast", "none", data_dir=data_dir)
    assert (data.n, data.d) == (683, 9)
    assert set(np.unique(data.X)) <= set(range(1, 11))  # every feature is a 1..10 score again
    assert int((data.y == 1).sum()) == 239  # 444 benign / 239 malignant (UCI)


@pytest.mark.data
def test_votes_recoding(data_dir):
    data = rp.load_paper_dataset("votes84", "none", data_dir=data_dir)
    assert (data.n, data.d) == (435, 16)
    values, counts = np.unique(data.X, return_counts=True)
    assert values.tolist() == [-1.0, 0.0, 1.0] and counts[1] == 392  # 392 missing votes in UCI house-votes-84


@pytest.mark.data
def test_sizes_match_the_paper_where_we_have_the_same_data(data_dir):
    for name in (
        "ionosphere",
        "votes84",
        "wdbc",
        "australian",
        "diabetes",
        "fourclass",
        "splice",
        "svmguide3",
        "svmguide1",
        "mushrooms",
    ):
        data = rp.load_paper_dataset(name, "paper", data_dir=data_dir)
        assert data.n == PAPER[name].n, name


@pytest.mark.data
def test_small_real_run_prints_a_table_with_numbers(data_dir, tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        [
            "reproduce",
            "omkc",
            "--permutations",
            "1",
            "--datasets",
            "ionosphere,votes84",
            "--quiet",
            "--json",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    report = json.loads(lines[-1])
    assert json.loads(out.read_text())["summary"]["rows_compared"] == 16
    assert [b["paper_name"] for b in report["datasets"]] == ["ionosphere", "votes84"]
    text = "\n".join(lines[:-1])
    for block in report["datasets"]:
        assert [r["algorithm"] for r in block["rows"]] == list(ALGORITHMS)
        for r in block["rows"]:
            assert 0.0 <= r["ours"]["mistake_rate"]["mean"] <= 100.0
            recorded = r["ours"]["seconds"]["mean"]  # a learning time was measured (no limit on it)
            assert r["ours"]["n_support"]["mean"] > 0 and recorded > 0
            assert isinstance(r["flagged"], bool)
    # the table rows carry numbers, ours and the paper's
    dd = [ln for ln in text.splitlines() if ln.startswith("OMKC(D,D)")]
    assert len(dd) == 2 and all(re.search(r"\d+\.\d\d ± \d+\.\d\d\s+16\.07 ± 1\.42|7\.38 ± 0\.69", ln) for ln in dd)
    om2 = [ln for ln in text.splitlines() if ln.startswith("OM-2")]
    assert len(om2) == 2 and all(re.search(r"\d+\.\d\d ± \d+\.\d\d\s+(17\.41 ± 1\.20|7\.21 ± 0\.68)", ln) for ln in om2)
    assert re.search(r"^flagged rows: \d+ of 16 compared", text, re.M)


@pytest.mark.data
@pytest.mark.parametrize("n_datasets", [3, 4])
def test_the_multiclass_studys_legend_covers_no_curve(n_datasets):
    """The legend sat inside the first panel, over glass's curves (40-90 %): now in a spare panel, or
    below the panels when there is none."""
    import matplotlib

    matplotlib.use("Agg")
    from omkl_dist.reproduction.om2 import study_figure

    rows = [{"label": name, "n_seen": [10, 20], "mistake_rate": [80.0, 40.0]} for name in ("OM-2", "SPA")]
    block = {"dataset": "glass", "n": 20, "d": 9, "classes": 6, "rows": rows}
    fig = study_figure({"datasets": [block] * n_datasets, "settings": {"permutations": 1}})
    used = fig.axes[:n_datasets]
    assert all(ax.get_legend() is None for ax in used)
    legend = fig.axes[n_datasets].get_legend() if n_datasets == 4 else fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["OM-2", "SPA"]


def test_reproduce_om2_prints_its_rows_and_the_multiclass_study(data_dir, tmp_path):
    plot = tmp_path / "study.png"
    result = CliRunner().invoke(
        main,
        [
            "reproduce",
            "om2",
            "--permutations",
            "1",
            "--datasets",
            "ionosphere",
            "--study-permutations",
            "2",
            "--study-datasets",
            "glass",
            "--plot",
            str(plot),
            "--quiet",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    report = json.loads(lines[-1])
    text = "\n".join(lines[:-1])
    rows = report["tables"]["datasets"][0]["rows"]
    assert [r["algorithm"] for r in rows] == ["om2", "omkc-dd"] and isinstance(rows[0]["flagged"], bool)
    assert re.search(r"^OM-2\s+\d+\.\d\d ± \d+\.\d\d\s+17\.41 ± 1\.20", text, re.M)
    study = report["study"]["datasets"][0]
    assert study["classes"] == 6 and [r["label"] for r in study["rows"]] == [
        "OM-2",
        "OMKC(D,D)",
        "OMKC(S,S)",
        "SPA",
        "Perceptron(*)",
        "OM-2, gaussians",
    ]
    for row in study["rows"]:
        assert len(row["mistake_rate"]) == len(row["n_seen"]) and row["n_seen"][-1] == 214
        assert 0 < row["final"]["mean"] < 100 and row["mistake_rate"][-1] == pytest.approx(row["final"]["mean"])
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"plot written to {plot}" in text
    (tmp_path / "notes.txt").write_text("mine")  # a file that is not a PNG is never replaced by the plot
    refused = CliRunner().invoke(
        main,
        [
            "reproduce",
            "om2",
            "--permutations",
            "1",
            "--datasets",
            "ionosphere",
            "--study-datasets",
            "glass",
            "--plot",
            str(tmp_path / "notes.txt"),
            "--quiet",
        ],
    )
    assert refused.exit_code != 0 and (tmp_path / "notes.txt").read_text() == "mine"


def test_perceptron_star_best_kernel_tie_goes_to_the_first_permutation():
    """Two permutations picking two kernels once each: the summary names the first one, in every
    process (it was max over a set, whose order follows the string hash seed)."""
    from omkl_dist.reproduction.omkc import comparison_row

    def run(kernel):
        return {"mistake_rate": 1.0, "n_support": 1.0, "n_support_stored": 1, "seconds": 0.1, "best_kernel": kernel}

    for first, second in (("gaussian(sigma=2)", "gaussian(sigma=0.5)"), ("gaussian(sigma=0.5)", "gaussian(sigma=2)")):
        row = comparison_row("perceptron-star", "Perceptron(*)", PAPER["svmguide3"], [run(first), run(second)], None)
        assert row["ours"]["best_kernel"] == first
