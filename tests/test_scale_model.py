"""The cost model of ``make bench-scale`` (benchmarks/scale_model.py) on synthetic round records: what it
sums, fits and predicts, and the format of the records it reads (no cluster, no timing)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_scale import markdown, worker_counts
from benchmarks.scale_model import CostModel, RunCosts, projection, validate
from omkl_dist.distributed.coordinator import round_record

SERIAL, PARALLEL, COORD, IO, ROUNDS = 0.02, 0.3, 0.001, 0.004, 10


def _rounds(workers, message, serial=SERIAL, parallel=PARALLEL, stretch=1.0):
    """Round records of a row-split job whose rounds cost exactly the model's terms on ``workers``,
    its shards having ``1 / stretch`` of a core each."""
    share = parallel / workers
    out = []
    for _ in range(ROUNDS):
        wall = stretch * (COORD + serial + share + IO + message)
        compute = [serial + share] + [share] * (workers - 1)
        out.append(
            {
                "rows": 100,
                "wall": wall,
                "coordinator": stretch * COORD,
                "compute": compute,
                "compute_wall": [stretch * c for c in compute],
                "io": [stretch * IO] * workers,
                "serial": serial,
                "wait": 0.0,
                "message": stretch * message,
            }
        )
    return out


def _run(workers, message, setup=0.5, stretch=1.0):
    per_round = _rounds(workers, message, stretch=stretch)
    return RunCosts.of(workers, stretch * setup + sum(r["wall"] for r in per_round), per_round)


def test_run_costs_sum_the_rounds():
    run = _run(2, 0.003)
    assert run.rounds == ROUNDS
    assert run.serial == pytest.approx(ROUNDS * SERIAL) and run.coordinator == pytest.approx(ROUNDS * COORD)
    assert run.parallel == pytest.approx(ROUNDS * PARALLEL)
    assert run.io == pytest.approx(ROUNDS * IO)
    assert run.message == pytest.approx(ROUNDS * 0.003)
    assert run.setup == pytest.approx(0.5)


def test_fit_recovers_the_terms_and_predicts_the_measured_runs():
    """Messages of 1 ms + 2 ms per further worker: the fit finds both and every run is predicted exactly."""
    runs = [_run(w, 0.001 + 0.002 * (w - 1)) for w in (1, 2, 3)]
    model = CostModel.fit(runs)
    assert model.message0 == pytest.approx(0.001) and model.message1 == pytest.approx(0.002)
    for check in validate(model, runs):
        assert check["error"] == pytest.approx(0.0, abs=1e-9)
    t1 = 0.5 + ROUNDS * (SERIAL + COORD + PARALLEL + IO + 0.001)
    t64 = 0.5 + ROUNDS * (SERIAL + COORD + PARALLEL / 64 + IO + 0.001 + 0.002 * 63)
    assert model.predict(1) == pytest.approx(t1) and model.predict(64) == pytest.approx(t64)
    assert model.speedup(64) == pytest.approx(t1 / t64)
    assert model.serial_fraction() == pytest.approx(1 - ROUNDS * PARALLEL / t1)
    assert model.compute_serial_fraction() == pytest.approx((SERIAL + COORD) / (SERIAL + COORD + PARALLEL))


def test_a_busy_machines_runs_are_predicted_at_their_share_of_a_core():
    """Runs whose processes had half a core (stretch 2: every wall time twice a core's) fit the same
    work; each is predicted at its own stretch, the projection with a core per worker."""
    runs = [_run(1, 0.001, stretch=2.0), _run(2, 0.003, stretch=1.5)]
    assert [r.stretch for r in runs] == [pytest.approx(2.0), pytest.approx(1.5)]
    model = CostModel.fit(runs)
    assert model.parallel == pytest.approx(ROUNDS * PARALLEL)  # CPU time: the load does not enter the work
    assert model.io == pytest.approx(ROUNDS * IO) and model.setup == pytest.approx(0.5)  # as a core's time
    for check in validate(model, runs):
        assert check["error"] == pytest.approx(0.0, abs=1e-9) and check["dedicated"] < check["predicted"]


def test_one_worker_count_and_falling_messages_give_a_flat_message_cost():
    one = CostModel.fit([_run(1, 0.002), _run(1, 0.004)])
    assert (one.message0, one.message1) == (pytest.approx(0.003), 0.0)
    falling = CostModel.fit([_run(1, 0.004), _run(2, 0.002)])
    assert (falling.message0, falling.message1) == (pytest.approx(0.003), 0.0)


def test_kernel_split_work_is_shared_by_at_most_one_shard_per_kernel():
    model = CostModel.fit([_run(1, 0.0)], shards_max=4)
    assert model.predict(8) == pytest.approx(model.predict(4))
    assert model.predict(4) < model.predict(2)
    assert [p["workers"] for p in projection(model)] == [1, 2, 4, 8, 16, 32, 64]


def test_fit_and_predict_refuse_what_has_no_meaning():
    with pytest.raises(ValueError, match="at least one measured run"):
        CostModel.fit([])
    with pytest.raises(ValueError, match="workers must be >= 1"):
        CostModel.fit([_run(1, 0.0)]).predict(0)


def _out(seconds, io, cpu, **lead):
    return {"seconds": seconds, "io_seconds": io, "cpu_seconds": cpu, **lead}


def test_round_record_of_a_row_split_round():
    """The lead's scoring, recurrence and wait are the critical path; the rest of the wall is messages."""
    lead = _out(0.05, 0.01, 0.045, wait_seconds=0.02, serial_cpu_seconds=0.03)
    rec = round_record(256, 0.1, 0.005, [lead, _out(0.04, 0.01, 0.04)], split_rows=True)
    assert rec["rows"] == 256 and rec["compute"] == [0.045, 0.04] and rec["io"] == [0.01, 0.01]
    assert (rec["serial"], rec["wait"], rec["coordinator"]) == (0.03, 0.02, 0.005)
    assert rec["message"] == pytest.approx(0.1 - 0.005 - (0.05 + 0.01 + 0.02))


def test_round_record_of_a_kernel_split_round():
    """No lead: the slowest shard is the critical path, the serial part is the coordinator's alone."""
    rec = round_record(1024, 0.2, 0.01, [_out(0.1, 0.02, 0.09), _out(0.15, 0.01, 0.14)], split_rows=False)
    assert (rec["serial"], rec["wait"]) == (0.0, 0.0)
    assert rec["message"] == pytest.approx(0.2 - 0.01 - 0.16)
    assert round_record(8, 0.1, 0.05, [_out(0.1, 0.0, 0.1)], split_rows=False)["message"] == 0.0  # never < 0


def test_worker_counts_run_to_the_cores_present():
    assert worker_counts(1) == [1] and worker_counts(2) == [1, 2] and worker_counts(64)[-1] == 64


def test_benchmarks_section_shows_measured_predicted_and_projected():
    runs = [_run(w, 0.001) for w in (1, 2)]
    model = CostModel.fit(runs)
    analysis = {
        "spa": {
            "label": "SPA",
            "model": model.to_dict(),
            "validation": validate(model, runs),
            "projection": projection(model),
            "serial_fraction": model.serial_fraction(),
            "compute_serial_fraction": model.compute_serial_fraction(),
            "in_process_seconds": 3.0,
            "vs_in_process": {"2": 3.0 / runs[1].wall},
            "same_model": True,
        }
    }
    raw = {
        "measured": "now",
        "cores": 2,
        "jobs": {"spa": {"shorter": 1, "runs": [{"workers": 1, "load_before": 1.5}]}},
    }
    lines = markdown({"raw": raw, "analysis": analysis})
    row = next(line for line in lines if line.startswith("| SPA |"))
    assert f"{runs[0].wall:.1f} ({model.predict(1):.1f}, " in row
    assert f"{model.speedup(64):.1f}" in row and f"{100 * model.serial_fraction():.1f} %" in row
    assert row.endswith("| yes |") and any("scale-speedup.png" in line for line in lines)


def _lead_timeline(shares, score, recurrence):
    """A pipelined round simulated: the lead scores its share, then runs the recurrence over each
    shard's range in order, waiting for that range's scores (every shard starts scoring at 0)."""
    t = shares[0] * score
    for i, share in enumerate(shares):
        t = max(t, share * score) if i else t
        t += share * recurrence
    return t


@pytest.mark.parametrize("workers", [1, 2, 3, 8, 64])
def test_a_pipelined_jobs_compute_is_the_leads_timeline_over_a_geometric_chain(workers):
    """The compute a pipelined job is predicted: the lead's timeline with ranges growing by 1 + lag,
    never more than with even ranges or the Amdahl line, never less than the recurrence alone."""
    serial, parallel = 0.7, 35.0
    model = CostModel(serial, 0.0, parallel, 0.0, 1, 0.0, 0.0, pipelined=True)
    chain = (1 + serial / parallel) ** np.arange(workers)
    assert model.compute(workers) == pytest.approx(_lead_timeline(chain / chain.sum(), parallel, serial))
    even = _lead_timeline(np.full(workers, 1 / workers), parallel, serial)
    assert serial < model.compute(workers) <= min(even, serial + parallel / workers) + 1e-12
    assert CostModel(serial, 0.0, parallel, 0.0, 1, 0.0, 0.0).compute(workers) == pytest.approx(
        serial + parallel / workers
    )


def test_runs_whose_recurrence_started_early_fit_a_pipelined_model():
    early = []
    for w in (1, 2):
        per_round = [{**r, "early_start": True} for r in _rounds(w, 0.001)]
        early.append(RunCosts.of(w, sum(r["wall"] for r in per_round), per_round))
    assert all(r.early_start for r in early) and CostModel.fit(early).pipelined
    assert not CostModel.fit([early[0], _run(2, 0.001)]).pipelined  # a run without: not
    model = CostModel.fit(early)
    assert model.predict(8) < CostModel.fit([_run(w, 0.001, setup=0.0) for w in (1, 2)]).predict(8)
