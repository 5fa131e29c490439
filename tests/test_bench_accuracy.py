"""make bench-accuracy's online half on a tiny generated stream: our default jobs, river's rows on the
same permuted rows, and the best fixed setting read from a whole-stream study summary only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import bench_stream_accuracy as online


@pytest.fixture
def stream(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    path = tmp_path / "tiny.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,label", comments="")
    return str(path), X, y


def test_default_job_is_omkl_runs(stream):
    """A row of ours is the job `omkl run --algo A --data PATH` builds: the estimator's defaults."""
    path, _, _ = stream
    job = online.default_job("OMKC (S,S)", path)
    assert job.algorithm == "omkc" and dict(job.params)["update"] == "S" and dict(job.params)["combination"] == "S"
    row = online.run_ours("SPA", path)
    assert row["rows"] == 120 and 0.0 <= row["mistake_rate"] < 0.5
    assert row["settings"]["settings"]["scaling"] == online.default_job("SPA", path).settings.scaling


def test_river_rows_are_the_jobs_permuted_raw_rows(stream):
    path, X, y = stream
    rows = list(online.stream_rows(path, 32))
    order = np.random.default_rng(online.SEED).permutation(len(y))
    np.testing.assert_allclose([list(x.values()) for x, _ in rows], X[order])
    assert [label for _, label in rows] == list(y[order] > 0)
    pytest.importorskip("river")
    row = online.run_river("river LR", path)
    assert row["rows"] == 120 and 0.0 <= row["mistake_rate"] < 0.5


def test_best_fixed_reads_only_a_whole_stream_study(tmp_path):
    cells = {"minmax": {"mean": 6.9}, "standard+norm": {"mean": 10.99}}
    capped = {"max_rows": 3000, "tables": {"spa": {"rows": {"codrna": {"minmax": {"mean": 1.0}}}}}}
    (tmp_path / "study-defaults.json").write_text(json.dumps(capped))
    assert online.best_fixed(tmp_path) == {}
    # SPA's best fixed is the unit a job runs: its mistake-discounted Hedge, not the hinge loss's
    units = {"spa": {"algorithm": "spa", "settings": {}}}
    units["spa hedge_loss=mistake"] = {"algorithm": "spa", "settings": {"hedge_loss": "mistake"}}
    mistake = {"minmax": {"mean": 7.5}, "standard+norm": {"mean": 6.35}}
    tables = {"spa": {"rows": {"codrna": cells}}, "spa hedge_loss=mistake": {"rows": {"codrna": mistake}}}
    whole = {"max_rows": None, "units": units, "tables": tables}
    (tmp_path / "study-whole.json").write_text(json.dumps(whole))
    assert online.best_fixed(tmp_path) == {("spa", "codrna"): (6.35, "standard+norm", "study-whole.json")}


def test_batch_summary_marks_the_target_carries_unchanged_rows_and_counts_floors(tmp_path):
    """The batch half's summary: ✓/✗ against the SVC minus 0.5 points, the *paper* and MKBoost rows of
    an earlier summary carried (marked) where this log has none, and the floors each split chose."""
    from benchmarks import bench_accuracy as batch

    def fit(accuracy, floor=None):
        return {"accuracy": accuracy, "seconds": 1.0, "C": [2.0], **({"floor": [floor]} if floor else {})}

    done = {("d", s, "SVC"): fit(0.80) for s in range(2)}
    done.update({("d", s, "SILP"): fit(0.797, (1.0, 31.25)[s]) for s in range(2)})
    done.update({("d", s, "Level"): fit(0.79, 1.0) for s in range(2)})
    report = batch.summarise(done, ["d"], 2, False)
    assert report["datasets"]["d"]["target_met"] == {"SILP": True, "Level": False}
    earlier = {"datasets": {"d": {"rows": {"SILP paper": {"accuracy": 0.7, "std": 0.0, "seconds": 3.0, "C": []}}}}}
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    batch.keep_unchanged_rows(report, tmp_path / "earlier.json")
    rows = report["datasets"]["d"]["rows"]
    assert rows["SILP paper"]["earlier"] and "earlier" not in rows["SILP"]
    assert batch.floor_counts(report, "d", "SILP") == "1×1 / 1×31.2"
    text = "\n".join(batch.markdown(report))
    assert "| SILP | 79.7 ± 0.0 ✓ |" in text and "| Level | 79.0 ± 0.0 ✗ |" in text and "earlier run" in text
