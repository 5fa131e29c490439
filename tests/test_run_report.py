"""The run report's note when learning slowed down as the support vectors grew (pipelines/run_report.py)."""

from __future__ import annotations

from omkl_dist.pipelines.run_report import growth_advice

# SPA (default parameters) on a generated 3,000,000-row stream: its trace at every 20th block
ENDS = [16384, 344064, 671744, 999424, 1327104, 1654784, 1982464, 2310144, 2637824, 2965504, 3000000]
SECONDS = [0.5, 13.1, 37.7, 74.1, 122.6, 182.7, 254.9, 339.1, 435.1, 542.3, 554.5]


def _report(total, budget=None):
    return {"n_support": {"total": total}, "params": {"budget": budget, "beta": 3.0}}


def test_a_run_that_slowed_as_its_support_grew_is_told_the_constant_cost_learners():
    (note,) = growth_advice("spa", _report(206_873), {"block_ends": ENDS, "seconds": SECONDS})
    assert "learning slowed from 26,264 to 3,033 rows/s as the support vectors grew to 206,873" in note
    assert "nogd or fogd" in note and "--budget N" in note and "`omkl run nogd`" in note


def test_a_budget_given_is_not_suggested_again():
    (note,) = growth_advice("spa", _report(46_810, budget=200_000), {"block_ends": ENDS, "seconds": SECONDS})
    assert "nogd or fogd" in note and "--budget N bounds" not in note and "--n-components" in note


def test_no_note_for_a_steady_or_short_run():
    steady = [s * ENDS[-1] / SECONDS[-1] for s in SECONDS]  # the same rows at a constant rate
    assert growth_advice("spa", _report(206_873), {"block_ends": steady, "seconds": SECONDS}) == []
    short = [s / 100 for s in SECONDS]  # under 30 s in all
    assert growth_advice("spa", _report(206_873), {"block_ends": ENDS, "seconds": short}) == []
    assert (
        growth_advice("nogd", {"n_support": {"total": 1600}, "params": {}}, {"block_ends": ENDS, "seconds": SECONDS})
        == []
    )


def test_a_resumed_cluster_run_is_timed_from_its_checkpoint():
    """A cluster run resumed after 1,000,000 rows times its own rounds only (``timed_from``): its
    speeds are read over those rows, as a run from row 0's are."""
    trace = {"timed_from": 1_000_000, "block_ends": [1_000_000 + e for e in ENDS], "seconds": SECONDS}
    (note,) = growth_advice("spa", {**_report(206_873), "workers": 2}, trace)
    assert "learning slowed from 26,264 to 3,033 rows/s" in note and "`omkl submit nogd`" in note
