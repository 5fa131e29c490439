"""The defaults study's report, a pure function of its records (:func:`build_report`): per algorithm a
table dataset x combination of mean mistake rates, how often each combination is best and by how much,
the rows where the most frequent winner loses; then written as Markdown (``docs/defaults.md`` for the
project's study) and a JSON summary, each replacing only an earlier report of ours."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from omkl_dist.defaults import SCALE_ROWS
from omkl_dist.storage.outputs import JSON_REPORT, MARKDOWN_REPORT, atomic_output, check_output, write_json_report

from .defaults_compare import against, format_side_by_side
from .defaults_data import GENERATED, SKIP_RULE, plan_datasets, zero_one_heads
from .defaults_markdown import format_markdown
from .defaults_plan import (
    AXES,
    BLOCK_SIZE,
    BUDGET,
    COMBINATIONS,
    FORMS,
    LOSS,
    NEAR,
    SEED,
    STUDY_ALGORITHMS,
    cap_text,
    variant_label,
)
from .defaults_records import PROJECT_RESULTS, read_records, run_key, summary_path


def _mean_std(values) -> tuple[float, float]:
    a = np.asarray(values, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def unit_name(record: dict) -> str:
    """The report's name of a run's algorithm and settings: ``spa``, or ``spa hedge_loss=mistake`` for
    a run that moves an axis from its default (each is a table of its own)."""
    settings = record.get("settings") or {}
    return record["algorithm"] + (f" {variant_label(settings)}" if settings else "")


def _cells(records: list[dict]) -> dict:
    """{(unit, dataset): {combination: {mean, std, n, seconds}}} in mistake %, the latest record of
    each run counted once; runs that failed as {combination: {"error": message}}."""
    latest = {}
    for r in records:
        latest[run_key(r)] = r  # a later line (a retried run) replaces an earlier one
    groups: dict = {}
    for r in latest.values():
        combination = r["scaling"] + ("+norm" if r["kernels"] == "norm" else "")
        groups.setdefault((unit_name(r), r["dataset"]), {}).setdefault(combination, []).append(r)
    cells = {}
    for key, by_combination in groups.items():
        cells[key] = {}
        for combination, runs in by_combination.items():
            ok = [r for r in runs if "error" not in r]
            if not ok:
                cells[key][combination] = {"error": runs[0]["error"]}
                continue
            mean, std = _mean_std([100 * r["mistake_rate"] for r in ok])
            cells[key][combination] = {
                "mean": mean,
                "std": std,
                "n": len(ok),
                "seconds": float(np.mean([r["seconds"] for r in ok])),
                "failed": len(runs) - len(ok),
            }
            cpu = [r["cpu_seconds"] for r in ok if "cpu_seconds" in r]
            if len(cpu) == len(ok):  # (a run's CPU time: what a shared machine's load does not inflate)
                cells[key][combination]["cpu_seconds"] = float(np.mean(cpu))
    return cells


def _row_gaps(row: dict, combinations) -> dict | None:
    """{combination: points above the row's best} over ``combinations``, or None unless all are measured."""
    means = {c: row[c]["mean"] for c in combinations if c in row and "mean" in row[c]}
    if len(means) < len(combinations):
        return None
    best = min(means.values())
    return {c: m - best for c, m in means.items()}


def summarise(rows: dict, combinations) -> dict:
    """How often each combination is a row's best (or within NEAR points), by how much it wins
    (the margin over the runner-up where it is the only best), its gap to the best, and the rows
    where the combination that is most often best-or-within loses by more than LOSS points.

    ``rows``: {dataset: {combination: cell}}; a row counts only when every combination is measured.
    """
    gaps = {name: g for name, row in rows.items() if (g := _row_gaps(row, combinations)) is not None}
    stats = {}
    for c in combinations:
        own = [g[c] for g in gaps.values()]
        margins = [min(v for k, v in g.items() if k != c) for g in gaps.values() if g[c] == 0 and len(combinations) > 1]
        stats[c] = {
            "best": sum(v == 0 for v in own),
            "near": sum(v <= NEAR for v in own),
            "mean_margin": float(np.mean(margins)) if margins else None,
            "mean_gap": float(np.mean(own)) if own else None,
            "max_gap": max(own) if own else None,
        }
    if not gaps:
        return {"rows": 0, "combinations": stats, "winner": None, "losses": []}
    winner = min(combinations, key=lambda c: (-stats[c]["near"], -stats[c]["best"], stats[c]["mean_gap"]))
    losses = [
        {
            "dataset": name,
            "gap": g[winner],
            "best": [c for c, v in g.items() if v == 0],
            "winner_mean": rows[name][winner]["mean"],
            "best_mean": rows[name][winner]["mean"] - g[winner],
        }
        for name, g in gaps.items()
        if g[winner] > LOSS
    ]
    return {
        "rows": len(gaps),
        "combinations": stats,
        "winner": winner,
        "losses": sorted(losses, key=lambda loss: -loss["gap"]),
    }


def _units(records: list[dict]) -> dict:
    """{unit: {"algorithm", "settings"}} of the records: by algorithm, its defaults first, then the
    axes it moves in the order of :data:`AXES`."""
    found = {unit_name(r): (r["algorithm"], r.get("settings") or {}) for r in records}
    axes = list(AXES)

    def order(item):
        a, settings = item[1]
        return (
            list(STUDY_ALGORITHMS).index(a),
            [(axes.index(k) if k in axes else len(axes), str(v)) for k, v in settings.items()],
        )

    return {unit: {"algorithm": a, "settings": s} for unit, (a, s) in sorted(found.items(), key=order)}


def build_report(
    records: list[dict], *, max_rows: int | None, skipped=None, source=PROJECT_RESULTS, zero_one=None
) -> dict:
    """The study's report from its JSONL records (those of ``max_rows``, None: whole streams): per
    algorithm and settings (a "unit", see :func:`unit_name`) a table dataset x combination and its
    summary, and the summary over the algorithms' defaults. Pure: it reads nothing else (``skipped``:
    the registry files the study left out, for the protocol; ``source``: the JSONL's path, named in
    the report; ``zero_one``: the datasets whose heads a job's defaults leave unscaled, the 0/1 rule,
    :func:`~.defaults_data.zero_one_heads`, None: not known)."""
    records = [r for r in records if r["max_rows"] == max_rows]
    if not records:
        raise ValueError(f"no runs at --max-rows {cap_text(max_rows)} to report on")
    units = _units(records)
    datasets = _dataset_rows(records)
    cells = _cells(records)
    measured = [c for c in COMBINATIONS if any(c in row for row in cells.values())]
    tables, summaries = {}, {}
    for unit in units:
        rows = {d["name"]: cells[(unit, d["name"])] for d in datasets if (unit, d["name"]) in cells}
        present = [c for c in measured if any(c in row for row in rows.values())]
        tables[unit] = {"kernels": _kernel_specs([r for r in records if unit_name(r) == unit]), "rows": rows}
        summaries[unit] = summarise(rows, present)
    ok = [r for r in records if "error" not in r]
    return {
        "source": str(source),
        "max_rows": max_rows,
        "scale_rows": SCALE_ROWS,
        "block_size": BLOCK_SIZE,
        "seed": SEED,
        "budget": BUDGET,
        "near": NEAR,
        "loss": LOSS,
        "combinations": measured,
        "algorithms": list(units),
        "units": units,
        "datasets": datasets,
        "permutations": max((cell.get("n", 0) for row in cells.values() for cell in row.values()), default=0),
        "skip_rule": SKIP_RULE,
        "skipped": list(skipped or []),
        "zero_one_heads": None if zero_one is None else sorted(zero_one),
        "tables": tables,
        "summaries": summaries,
        "overall": _overall({u: tables[u] for u in units if not units[u]["settings"]}, summaries, measured),
        "errors": sorted({(unit_name(r), r["dataset"], r["error"]) for r in records if "error" in r}),
        "runs": len(ok),
        "learning_seconds": float(sum(r["seconds"] for r in ok)),
        "code_versions": sorted({r.get("code", "unknown") for r in records}),
        "run_seconds": float(sum(r["wall_seconds"] for r in records)),
        # CPU time of the runs that recorded it (each single-threaded; older records have none)
        "cpu_seconds": float(sum(r["cpu_seconds"] for r in records if "cpu_seconds" in r)),
        "cpu_runs": sum("cpu_seconds" in r for r in records),
    }


def _dataset_rows(records: list[dict]) -> list[dict]:
    """The datasets the records cover, registry ones by name then the generated ones."""
    out = {}
    for r in records:
        if "error" not in r and r["dataset"] not in out:
            out[r["dataset"]] = {
                "name": r["dataset"],
                "rows": r["rows_available"],
                "n": r["n"],
                "features": r["n_features"],
                "classes": r["n_classes"],
            }
    for r in records:  # a dataset whose every run failed still gets its row
        out.setdefault(r["dataset"], {"name": r["dataset"], "rows": None, "n": None, "features": None, "classes": None})
    return sorted(out.values(), key=lambda d: (d["name"] in GENERATED, d["name"]))


def _kernel_specs(records) -> dict:
    return {
        form: sorted({r["kernel_spec"] for r in records if r["kernels"] == form and r.get("kernel_spec")})
        for form in FORMS
    }


def _overall(tables: dict, summaries: dict, combinations) -> dict:
    """Every algorithm's rows pooled (each row counted with the combinations all algorithms measure)."""
    pooled = {f"{a}/{name}": row for a, t in tables.items() for name, row in t["rows"].items()}
    summary = summarise(pooled, combinations)
    winners = {c: [a for a in tables if summaries[a]["winner"] == c] for c in combinations}
    return {**summary, "winners": winners}


def check_report_outputs(results, doc) -> None:
    """Before any run: the report and the summary may only replace earlier reports of ours (a
    user's file there is refused, with its path and the fix)."""
    check_output(doc, MARKDOWN_REPORT, overwrite=True, inputs=[("results", results)], option="--doc")
    check_output(summary_path(results), JSON_REPORT, overwrite=True, option="--results")


def write_report(results, doc, *, max_rows: int | None, compare=None, warn=None) -> dict:
    """Build the report from ``results`` and write ``doc`` (markdown) and the JSON summary;
    ``compare``, another study's JSON summary (the 3,000-row cap's), is reported beside it with the
    rows where the two choose differently (:mod:`.defaults_compare`)."""
    records, bad = read_records(results)
    if bad and warn:
        warn(f"{bad} unreadable line(s) in {results} ignored")
    if not records:
        raise ValueError(f"{results} holds no runs yet; run `omkl study defaults` first (without --report-only)")
    if not any(r["max_rows"] == max_rows for r in records):
        others = sorted({cap_text(r["max_rows"]) for r in records})
        raise ValueError(
            f"{results} has no runs at --max-rows {cap_text(max_rows)} (it has runs at "
            f"{', '.join(others)}): pass --max-rows {others[0].replace(',', '')}"
        )
    other = read_summary(compare) if compare is not None else None
    try:
        _, skipped = plan_datasets()
    except ValueError:  # no registry here: the report still stands, without the skipped files
        skipped = None
    zero_one = zero_one_heads(records, max_rows)
    report = build_report(records, max_rows=max_rows, skipped=skipped, source=results, zero_one=zero_one)
    if other is not None:
        report["against"] = against(other, report, compare)
    text = format_markdown(report) if other is None else format_side_by_side(other, report)
    with atomic_output(doc, kind=MARKDOWN_REPORT, overwrite=True, option="--doc", folder=False) as tmp:
        tmp.write_text(text, encoding="utf-8")
    write_json_report(summary_path(results), json.loads(json.dumps(report, default=list)), option="--results")
    return {**report, "doc": str(doc), "summary_json": str(summary_path(results))}


def read_summary(path) -> dict:
    """A study's JSON summary (what :func:`write_report` writes beside its JSONL), as its report."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        report["tables"], report["max_rows"]  # noqa: B018 -- a summary of ours has both
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(
            f"--compare {path}: not a defaults study's JSON summary ({exc}); name the .json an "
            "`omkl study defaults` wrote beside its runs (benchmarks/results/study-defaults.json)"
        ) from None
    return report
