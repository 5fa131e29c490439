"""The mistake curve's points (at least every 1 % of a stream, whatever its blocks) and the report's
plots read at a glance: axes from 0, titles naming the data and the model, one legend entry per
drawn band, drift alarms as a rug (the figures are inspected, nothing is written)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from omkl_dist.evaluation import progressive_score
from omkl_dist.evaluation.curve import MistakeCurve
from omkl_dist.pipelines.report import figures, retrain_report, run_report
from omkl_dist.storage.model_store import ModelStore

pytest.importorskip("matplotlib")

KERNELS = [f"gaussian(sigma={2.0**i:g})" for i in range(-3, 13)]  # 16 kernels


@pytest.mark.parametrize("cuts", [[], [1, 2, 3], [7, 250, 251, 999], list(range(37, 1000, 37))])
def test_the_curve_has_the_same_points_for_any_blocks(cuts):
    flags = np.random.default_rng(0).random(1000) < 0.3
    curve = MistakeCurve.over(1000)
    rows, counts, seen, made = [], [], 0, 0
    for block in np.split(flags, cuts):
        r, c = curve.points(block, seen, made)
        rows += r.tolist()
        counts += c.tolist()
        seen, made = seen + len(block), made + int(block.sum())
    assert rows[-1] == 1000 and np.diff([0, *rows]).max() <= 10  # at least every 1 %
    assert counts == np.cumsum(flags)[np.asarray(rows) - 1].tolist()
    assert [rows, counts] == [v.tolist() for v in curve.points(flags, 0, 0)]


def test_a_continued_run_spaces_its_points_over_its_own_rows():
    rows, counts = MistakeCurve.over(300, first=1234).points(np.ones(300, bool), 1234, 50)
    assert rows[0] == 1234 + 2 and rows[-1] == 1534 and counts[-1] == 350


def test_progressive_score_traces_every_percent_of_one_long_block():
    from omkl_dist.algorithms import KernelPerceptron

    rng = np.random.default_rng(1)
    X = rng.normal(size=(450, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    flags = []
    trace = progressive_score(
        KernelPerceptron(),
        [(X[:400], y[:400]), (X[400:], y[400:])],
        n_rows=450,
        on_outcome=lambda o: flags.append(o["mistakes"]),
    )
    rows, flags = np.asarray(trace.n_seen), np.concatenate(flags)
    assert trace.block_ends == [400, 450] and len(trace.instances_per_second) == 2
    assert rows[-1] == 450 and np.diff([0, *rows]).max() <= 4.5
    # the model is read at the curve's points too, not only at the two block ends
    assert trace.sampled_at == trace.n_seen and len(trace.n_support) == len(trace.weights) == len(rows)
    assert trace.mistake_rate == (np.cumsum(flags)[rows - 1] / rows).tolist()


def _run_document(n_blocks: int = 2) -> dict:
    ends = [16_384 * (i + 1) for i in range(n_blocks)]
    support = [
        [50 * (i + 1) * (1 + k % 4) + (3000 * (i + 1) if k == 11 else 0) for k in range(16)] for i in range(n_blocks)
    ]
    weights = [[1.0 if k == 11 else 0.0 for k in range(16)] for _ in range(n_blocks)]
    return {
        "kind": "run",
        "summary": {"algo": "spa", "data": "a9a", "n": ends[-1]},
        "algo": "spa",
        "window": [0, ends[-1]],
        "split": None,
        "alarms": [],
        "n_before": 0,
        "history": [],
        "curves": {"run": {"rows": list(range(200, 32_769, 200)), "rate": [0.2] * 163, "label": "spa"}},
        "trace": {
            "block_ends": ends,
            "sampled_at": ends,
            "n_support": support,
            "weights": weights,
            "instances_per_second": [300.0, 500.0][:n_blocks],
            "kernel_names": KERNELS,
        },
        "budget": {"slope": 1 / 3, "label": "SPA's expected SVs, α t/β per kernel"},
    }


def _title(ax) -> str:
    """The title's words, however its lines are wrapped."""
    return " ".join(ax.get_title().split())


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_mistakes_start_at_zero_and_name_the_data_and_the_model():
    ax = figures(_run_document())["mistakes.png"].axes[0]
    assert ax.get_ylim()[0] == 0 and "spa on a9a" in _title(ax)


def test_support_vectors_are_stacked_bands_with_one_legend_entry_each():
    ax = figures(_run_document())["support.png"].axes[0]
    labels = _legend(ax)
    assert len(labels) == len(ax.collections) == 8 and labels[-1] == KERNELS[11]  # 7 kernels + the others
    assert labels[0] == "9 other kernel(s)" and ax.get_ylim()[0] == 0
    # SPA's expected count (16 x 32,768 / 3) is far above the support vectors: said, not drawn
    assert not any("expected" in label for label in labels) and "174,763 in all" in _title(ax)


def test_a_budget_within_reach_is_drawn_and_listed():
    doc = {**_run_document(), "budget": {"cap": 400, "label": "budget 400 per kernel"}}
    ax = figures(doc)["support.png"].axes[0]
    assert _legend(ax)[0] == "budget 400 per kernel, x 16 kernels" and ax.get_ylim()[1] >= 16 * 400


def test_a_runs_trace_draws_its_budget_as_a_retrains_report_does():
    """`omkl report` of `omkl run bpas --budget 50 --trace-out`'s trace drew no budget line (a retrain's
    report takes it from the model; a run's trace has the parameters)."""
    doc = _run_document()
    trace = {**doc["trace"], "n_seen": doc["curves"]["run"]["rows"], "mistake_rate": doc["curves"]["run"]["rate"]}
    for algo, params, expected in [
        ("bpas", {"budget": 400}, {"cap": 400, "label": "budget 400 per kernel"}),
        (
            "spa",
            {"alpha": 1.0, "beta": 3.0, "budget": None},
            {"slope": 1 / 3, "label": "SPA's expected SVs, α t/β per kernel"},
        ),
        ("omkc", {"kernels": "omkc16"}, None),
    ]:
        run = run_report({"report": {"algo": algo, "params": params}, "trace": trace})
        assert run["budget"] == expected
    ax = figures(run_report({"report": {"algo": "bpas", "params": {"budget": 400}}, "trace": trace}))[
        "support.png"
    ].axes[0]
    assert _legend(ax)[0] == "budget 400 per kernel, x 16 kernels"


def test_weights_list_only_the_kernels_that_carry_weight():
    ax = figures(_run_document())["weights.png"].axes[0]
    assert _legend(ax) == ["15 other kernel(s), each never above 0.1 %", KERNELS[11]]
    assert ax.get_ylim() == (0, 1) and "holds 100 %" in _title(ax)


def test_the_weights_of_kernels_beyond_the_shown_ones_are_not_said_to_be_tiny():
    """OM-2 on satimage: the 7 largest kernels drawn, the other 9 (30 % of the weight) labelled "each
    never above 0.1 %"."""
    doc = _run_document()
    doc["trace"]["weights"] = [[1.0 + k for k in range(16)]] * 2  # every kernel 0.7 % .. 11.8 % of the weight
    labels = _legend(figures(doc)["weights.png"].axes[0])
    assert labels[0] == "9 other kernel(s), each at most 6.6 %" and len(labels) == 8


def test_weights_read_once_span_the_run_and_say_they_are_the_ends():
    """A 3-class SPA run of 178 rows (one block: a multi-class model's weights are read after every block)
    drew a lone column of dots at row 178 over an empty plot."""
    ax = figures(_run_document(n_blocks=1))["weights.png"].axes[0]
    assert ax.get_xlim() == (0, 16_384) and not ax.get_lines()  # bands over the rows, no dots
    assert "(shares), read once at the end: " in _title(ax) and "holds 100 %" in _title(ax)
    ax = figures(_run_document())["weights.png"].axes[0]  # read twice: the measured points dotted
    assert len(ax.get_lines()) == 2 and "read once" not in _title(ax)


def test_a_long_kernel_name_in_a_title_stays_on_the_figure():
    """The weights' title, centred over axes narrowed by the legend beside them, ran off the figure's left
    edge when the leading kernel had a long name (the defaults' gaussian(sigma=0.0078125)+norm)."""
    doc = _run_document()
    doc["trace"]["kernel_names"] = [f"gaussian(sigma={2.0**-7:g})+norm"] * 16
    fig = figures(doc)["weights.png"]
    fig.savefig(io.BytesIO(), format="png", dpi=110)  # (as `omkl report` saves it: the layout it drew)
    box = fig.axes[0].title.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width
    assert "at the end gaussian(sigma=0.0078125)+norm holds 100 %" in _title(fig.axes[0])


def test_a_model_without_support_vectors_draws_no_support_plot():
    doc = _run_document()
    doc["trace"]["n_support"] = [[0] * 16, [0] * 16]  # FOGD's random features keep no rows
    assert "support.png" not in figures(doc) and "weights.png" in figures(doc)


def test_the_speed_of_a_run_learnt_in_one_call_spans_its_rows_and_is_named():
    ax = figures(_run_document(n_blocks=1))["speed.png"].axes[0]
    (line,) = ax.get_lines()
    assert line.get_xdata().tolist() == [0, 16_384] and line.get_ydata().tolist() == [300.0, 300.0]
    assert "over the run's one call: 300 instances/s" in _title(ax)
    ax = figures(_run_document())["speed.png"].axes[0]  # a curve of its calls' ends otherwise
    assert ax.get_lines()[0].get_xdata().tolist() == [16_384, 32_768] and "cumulative" in _title(ax)


def test_a_slowdown_shows_in_the_speed_of_each_stretch_not_only_in_the_speed_so_far():
    """SPA on a 3,000,000-row stream: 2,900 rows/s at its end, when the cumulative speed still read 5,400."""
    ends = [300_000 * (i + 1) for i in range(10)]
    seconds = [10.0, 30, 60, 100, 150, 210, 280, 360, 450, 550]
    doc = run_report(
        {
            "report": {"algo": "spa", "data": "big.csv", "n": ends[-1]},
            "trace": {
                "kernel_names": ["k"],
                "n_seen": ends,
                "mistake_rate": [0.1] * 10,
                "block_ends": ends,
                "seconds": seconds,
                "instances_per_second": [n / s for n, s in zip(ends, seconds)],
            },
        }
    )
    ax = figures(doc)["speed.png"].axes[0]
    stretch, so_far = ax.get_lines()
    assert stretch.get_ydata()[-1] == 3000.0 and round(so_far.get_ydata()[-1]) == 5455
    assert _legend(ax) == ["each stretch of rows", "so far (cumulative)"]
    assert "3,000,000" in [ax.xaxis.get_major_formatter()(v, 0) for v in ax.get_xticks()]


def test_a_resumed_cluster_run_draws_its_speed_from_its_checkpoint():
    """A cluster run resumed at row 1,000,000 times only its own rounds (``timed_from``): its first
    stretch starts there, not at row 0 with the checkpoint's rows learnt in no time."""
    ends = [1_000_000 + 100_000 * (i + 1) for i in range(10)]
    seconds = [10.0 * (i + 1) for i in range(10)]  # 10,000 rows/s throughout
    trace = {"kernel_names": ["k"], "n_seen": ends, "mistake_rate": [0.1] * 10, "timed_from": 1_000_000}
    trace |= {"block_ends": ends, "seconds": seconds, "instances_per_second": [10_000.0] * 10}
    ax = figures(run_report({"report": {"algo": "spa", "data": "big", "n": ends[-1]}, "trace": trace}))[
        "speed.png"
    ].axes[0]
    stretch = ax.get_lines()[0]
    assert stretch.get_xdata()[0] == 1_050_000 and set(stretch.get_ydata()) == {10_000.0}


def test_hundreds_of_drift_alarms_are_one_rug_and_a_count(tmp_path):
    flags = np.random.default_rng(2).random(20_000) < 0.2
    summary = {
        "model": "spa",
        "version": 3,
        "parent": 2,
        "window": {"rows": [0, 20_000], "holdout_rows": [16_000, 20_000], "source": "/x/night-1"},
    }
    watch = {"mistakes": flags, "drift": {"alarms": list(range(50, 20_000, 61))}}
    head = MistakeCurve.over(16_000).points(flags[:16_000], 0, 0)  # a cluster run's trace: the curve only
    trace = {"n_seen": head[0].tolist(), "mistake_rate": (head[1] / head[0]).tolist(), "kernel_names": KERNELS}
    fit = {"holdout": flags[16_000:], "trace": trace, "model": None, "algo": "spa"}
    doc = retrain_report(summary, watch, fit, ModelStore(tmp_path, "spa"))
    for curve in doc["curves"].values():
        assert np.diff([0, *curve["rows"]]).max() <= 200 and curve["rows"][-1] == 20_000  # every 1 % of the window
    ax = figures(doc)["mistakes.png"].axes[0]
    assert len(ax.lines) == 4 and "drift alarms (Page-Hinkley): 328" in _legend(ax)  # 2 curves, the split, the rug
    assert ax.get_ylim()[0] == 0 and "model spa v3 (spa) on night-1" in _title(ax)


def test_history_starts_at_zero_and_shows_a_single_version():
    version = {"version": 1, "parent": None, "challenger": 0.1, "champion": None, "promoted": True, "algo": "spa"}
    doc = {**_run_document(), "kind": "retrain", "summary": {"model": "spa"}, "history": [version]}
    ax = figures(doc)["history.png"].axes[0]
    assert ax.get_ylim()[0] == 0 and ax.get_xlim() == (0.5, 1.5) and ax.get_title().startswith("model spa (spa)")


def test_history_names_a_version_published_without_a_gate():
    first = {"version": 1, "parent": None, "challenger": None, "champion": None, "promoted": True, "algo": "spa"}
    second = {"version": 2, "parent": 1, "challenger": 0.1, "champion": 0.12, "promoted": True, "algo": "spa"}
    doc = {**_run_document(), "kind": "retrain", "summary": {"model": "spa"}, "history": [first, second]}
    ax = figures(doc)["history.png"].axes[0]
    assert [t.get_text() for t in ax.texts] == ["v1: no gate\n(first version)"]
    # the legend beside the axes, not over the newest version (a low rate sat under it, lower right), and
    # listing only what is drawn (no version was kept out by the gate here)
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.bbox.x1
    assert _legend(ax) == ["version (promoted)", "its champion, same held-out rows"]
    # an imported version has no parent either: its lineage says where it came from
    doc["history"] = [{**first, "imported": True}, second]
    ax = figures(doc)["history.png"].axes[0]
    assert [t.get_text() for t in ax.texts] == ["v1: no gate\n(imported)"]
