"""The defaults study's report as Markdown: ``docs/defaults.md`` (protocol, overall summary, the defaults
chosen, per algorithm its table and summary) and the short section of ``BENCHMARKS.md``."""

from __future__ import annotations

import numpy as np

from omkl_dist.storage.outputs import MARKDOWN_MARKER

from .defaults_plan import AXES, BUDGET, BUDGET_ALGORITHMS, LOSS, NEAR, cap_text, variant_label
from .defaults_records import summary_path

_LABELS = {
    "omkc-dd": "OMKC (D,D)",
    "omkc-ds": "OMKC (D,S)",
    "omkc-sd": "OMKC (S,D)",
    "omkc-ss": "OMKC (S,S)",
    "perceptron": "Perceptron",
    "perceptron-u": "Perceptron(u)",
    "perceptron-star": "Perceptron(*)",
    "spa": "SPA (BOMKL)",
    "om2": "OM-2",
    "oks": "OKS",
    "rbp": "RBP",
    "forgetron": "Forgetron",
    "bogd": "BOGD",
    "bpas": "BPAS",
}


def units_of(report: dict) -> dict:
    """{unit: {"algorithm", "settings"}} of a report (a summary written before the study had axes
    names its algorithms only: each its defaults)."""
    return report.get("units") or {a: {"algorithm": a, "settings": {}} for a in report["algorithms"]}


def unit_label(report: dict, unit: str) -> str:
    """``BPAS (B = 400)``, ``SPA (BOMKL), hedge_loss=mistake``: an algorithm's name and the settings it ran with."""
    a, settings = units_of(report)[unit]["algorithm"], units_of(report)[unit]["settings"]
    label = _LABELS.get(a, a)
    if a in BUDGET_ALGORITHMS:
        label += f" (B = {settings.get('budget', BUDGET)})"
    rest = {k: v for k, v in settings.items() if k != "budget"}
    return label + (f", {variant_label(rest)}" if rest else "")


def _cell_text(cell, best: bool, permutations: int) -> str:
    if cell is None:
        return "—"
    if "error" in cell:
        return "error"
    text = f"{cell['mean']:.2f} ± {cell['std']:.2f}"
    text = f"**{text}**" if best else text
    return text + (f" (n={cell['n']})" if cell["n"] != permutations else "")


def _seconds(row: dict, form: str) -> str:
    values = [row[c]["seconds"] for c in row if ("+norm" in c) == (form == "norm") and "seconds" in row[c]]
    return f"{np.mean(values):.3f}" if values else "—"


def _table(report: dict, algorithm: str) -> list[str]:
    combos = report["combinations"]
    lines = ["| dataset | " + " | ".join(combos) + " | s/run raw | s/run norm |", "|---" * (len(combos) + 3) + "|"]
    for name, row in report["tables"][algorithm]["rows"].items():
        means = [row[c]["mean"] for c in combos if c in row and "mean" in row[c]]
        best = min(means) if means else None
        cells = [
            _cell_text(
                row.get(c),
                best is not None and "mean" in row.get(c, {}) and row[c]["mean"] == best,
                report["permutations"],
            )
            for c in combos
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {_seconds(row, 'raw')} | {_seconds(row, 'norm')} |")
    return lines


def _summary_table(summary: dict, combos, extra=None) -> list[str]:
    head = f"| combination | best | best or within {NEAR:g} | mean margin when best | mean gap to best | max gap |"
    lines = [head + (" algorithms it wins |" if extra else ""), "|---" * (6 + bool(extra)) + "|"]
    for c in (c for c in combos if c in summary["combinations"]):  # a unit may lack some (a study cut short)
        s = summary["combinations"][c]
        cells = [c, str(s["best"]), str(s["near"]), _pts(s["mean_margin"]), _pts(s["mean_gap"]), _pts(s["max_gap"])]
        if extra:
            cells.append(", ".join(extra[c]) or "—")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _pts(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _losses(summary: dict) -> str:
    if summary["winner"] is None:
        return "No dataset has every combination measured yet."
    head = (
        f"Most often best or within {NEAR} points: **{summary['winner']}** "
        f"({summary['combinations'][summary['winner']]['near']} of {summary['rows']} rows)."
    )
    if not summary["losses"]:
        return head + f" It never loses by more than {LOSS:g} point."
    items = "; ".join(
        f"{loss['dataset']} ({loss['winner_mean']:.2f} vs {loss['best_mean']:.2f} with "
        f"{'/'.join(loss['best'])}, +{loss['gap']:.2f})"
        for loss in summary["losses"]
    )
    return head + f" It loses by more than {LOSS:g} point on {_count(len(summary['losses']), 'row')}: {items}."


def _rows_rule(report: dict) -> str:
    if report["max_rows"] is None:
        return "learnt whole (`--max-rows all`)"
    return f"capped at its first {report['max_rows']:,} rows (`--max-rows`)"


def _cpu_text(report: dict) -> str:
    runs = report.get("cpu_runs", 0)  # a summary written before runs recorded their CPU time has none
    if not runs:
        return ""
    return (
        f" Cost: {report['cpu_seconds']:,.0f} CPU seconds over the {runs:,} runs that recorded it "
        f"({report['cpu_seconds'] / runs:,.1f} s per run, data preparation included)."
    )


def _protocol(report: dict, h: str = "##") -> list[str]:
    datasets = ", ".join(
        f"{d['name']} ({d['n']:,} of {d['rows']:,} rows × {d['features']}, {d['classes']} classes)"
        if d["n"] is not None
        else d["name"]
        for d in report["datasets"]
    )
    lines = [
        f"{h} Protocol",
        "",
        f"- Runs: {report['runs']:,} (each test-then-train over one permuted stream: every instance is predicted "
        "before it is learned, the mistake rate is the online one).",
        f"- Rows: each permutation p of a dataset is `numpy.random.default_rng([{report['seed']}, p])`, "
        f"{_rows_rule(report)}; up to {_count(report['permutations'], 'permutation')} "
        "per cell (mean ± std over them, std with ddof 1; `(n=k)` marks a cell with fewer).",
        f"- Scaling: `omkl_dist.preprocessing.Scaler(none|minmax|standard)` fitted on the first min("
        f"{report['scale_rows']:,}, n) rows of the permuted stream (SCALE_ROWS), then applied to every row -- "
        "the rule `omkl run` uses.",
        "- Kernels: each algorithm's default pool (the Perceptron: its default single kernel), raw or with every "
        "kernel normalised, k(x,x')/sqrt(k(x,x) k(x',x')) (`KernelPool.normalized()`, spec suffix `+norm`).",
        f"- Learners: `omkl run`'s estimators (`make_stream_estimator`, block size {report['block_size']}, "
        f"random_state = p); budget baselines with B = {report['budget']} support vectors per kernel.",
        *_axes_lines(report),
        "- Time: learning only (`progressive_score`, `time.perf_counter`), seconds per run, each run single-threaded "
        "(numba and BLAS) with `--workers` runs at a time on a 2-core machine shared with other work: compare "
        "times within a row, not across studies." + _cpu_text(report),
        f"- Code: {_count(len(report['code_versions']), 'version')} of the omkl_dist sources measured these runs "
        f"({', '.join(report['code_versions'])}: the `code` field of each JSONL record).",
        f"- Datasets: {datasets}.",
        f"- Skip rule: {report['skip_rule']}",
    ]
    if report["skipped"]:
        lines.append("- Skipped files: " + "; ".join(f"{s['file']} ({s['why']})" for s in report["skipped"]) + ".")
    lines += [
        f'- Summaries: a row counts when all its combinations are measured; "best or within {report["near"]}" '
        "counts ties; the margin is over the runner-up where a combination is the only best.",
        "",
    ]
    return lines


def _axes_lines(report: dict) -> list[str]:
    varied = sorted({k for u in units_of(report).values() for k in u["settings"]}, key=list(AXES).index)
    if not varied:
        return []
    return [
        "- Axes (`--axes`), one at a time: every other run keeps the defaults above; a run that moves one "
        "has a table of its own, with all six combinations. "
        + "; ".join(
            f"`{name}`: {AXES[name].what} ({AXES[name].default} by default; also "
            f"{', '.join(map(str, AXES[name].alternatives))}), on {', '.join(AXES[name].algorithms)}"
            for name in varied
        )
        + "."
    ]


def report_header(report: dict, title: str, compare=None) -> list[str]:
    """The page's marker, title and how to regenerate it (``compare``: the other study's summary)."""
    source = report["source"]
    also = f" --compare {compare}" if compare is not None else ""
    return [
        f"{MARKDOWN_MARKER.decode()}: written by `omkl study defaults`, which replaces only such a file -->",
        f"# {title}",
        "",
        f"Generated by `omkl study defaults` from its raw runs `{source}` ({report['run_seconds'] / 60:,.0f} "
        f"minutes of runs); `omkl study defaults --report-only --results {source} --max-rows "
        f"{cap_text(report['max_rows']).replace(',', '')}{also} --doc FILE` regenerates this page, and the summary "
        f"is `{summary_path(source)}`. Do not edit by hand.",
        "",
    ]


def format_markdown(report: dict) -> str:
    """``docs/defaults.md``: protocol, the overall summary, then per algorithm its table and summary."""
    lines = report_header(report, "Defaults study: feature scaling × kernel normalisation")
    return "\n".join(lines + report_body(report, level=2))


def report_body(report: dict, level: int) -> list[str]:
    """A report's sections, their headings at ``level``: protocol, overall, the defaults chosen, then
    per algorithm (and settings) its table and summary, and the failed runs."""
    combos, h = report["combinations"], "#" * level
    lines = _protocol(report, h) + overall_markdown(report, level=level) + chosen_markdown(report, h)
    for a in report["algorithms"]:
        kernels = report["tables"][a]["kernels"]
        spec = ", ".join(kernels["raw"] + kernels["norm"])
        lines += [
            f"{h} {unit_label(report, a)} (`{a}`, kernels {spec})",
            "",
            *_table(report, a),
            "",
            *_summary_table(report["summaries"][a], combos),
            "",
            _losses(report["summaries"][a]),
            "",
        ]
    if report["errors"]:
        lines += [f"{h} Failed runs", ""] + [f"- {a} on {d}: {e}" for a, d, e in report["errors"]] + [""]
    return lines


def overall_markdown(report: dict, level: int = 2) -> list[str]:
    """The overall summary: each algorithm's most frequent winner, and all rows pooled."""
    overall, combos = report["overall"], report["combinations"]
    lines = [
        f"{'#' * level} Overall",
        "",
        f"| algorithm | most often best (or within {report['near']:g}) | rows | mean gap | rows it loses by > "
        f"{report['loss']:g} point |",
        "|---|---|---|---|---|",
    ]
    for a in default_units(report):
        s = report["summaries"][a]
        if s["winner"] is None:
            lines.append(f"| {a} | — | 0 | — | — |")
            continue
        lost = ", ".join(f"{loss['dataset']} (+{loss['gap']:.2f})" for loss in s["losses"]) or "none"
        lines.append(
            f"| {a} | {s['winner']} ({s['combinations'][s['winner']]['near']}) | {s['rows']} | "
            f"{_pts(s['combinations'][s['winner']]['mean_gap'])} | {lost} |"
        )
    lines += [
        "",
        f"All algorithms' rows pooled ({overall['rows']} algorithm × dataset rows):",
        "",
        *_summary_table(overall, combos, extra=overall["winners"]),
        "",
    ]
    if overall["winner"] is not None:
        w = overall["combinations"][overall["winner"]]
        lines += [
            f"Across algorithms, **{overall['winner']}** is best or within {report['near']} points most often "
            f"({w['near']} of {overall['rows']} rows; mean gap {w['mean_gap']:.2f}, worst {w['max_gap']:.2f} "
            f"points; it loses by more than {report['loss']:g} point on {_count(len(overall['losses']), 'row')}).",
            "",
        ]
    return lines


# the rows the issue behind the study named: a user's default run should be near the best of these
NAMED_ROWS = (("spa", "codrna"), ("spa", "magic04-shaped"), ("om2", "letters-shaped"))


def chosen_combination() -> str:
    """The package's default combination (``omkl_dist.defaults``), as the study names it."""
    from omkl_dist import defaults

    return defaults.SCALING + ("+norm" if defaults.NORMALIZE_KERNELS else "")


def default_combination(report: dict, dataset: str) -> str:
    """The combination a job's defaults run on ``dataset``: the chosen one, or where every feature
    of the scaler's head is 0 or 1 (the report's ``zero_one_heads``) the 0/1 rule's
    (:meth:`omkl_dist.defaults.Settings.for_zero_one_head`)."""
    return zero_one_combination() if dataset in (report.get("zero_one_heads") or ()) else chosen_combination()


def zero_one_combination() -> str:
    """The combination of the defaults after the 0/1 rule, as the study names it."""
    from omkl_dist.defaults import resolve_settings

    rule = resolve_settings().for_zero_one_head()
    return rule.scaling + ("+norm" if rule.normalize_kernels else "")


def default_units(report: dict) -> list[str]:
    """Per algorithm, the report's unit that ran as a job runs it: with the parameters a job sets
    (``omkl_dist.defaults.JOB_PARAMS``: SPA's Hedge loss) where the study measured them, else
    with every axis at the estimator's default."""
    from omkl_dist.defaults import JOB_PARAMS

    units = units_of(report)
    chosen = {}
    for u, v in units.items():
        a = v["algorithm"]
        if v["settings"] == JOB_PARAMS.get(a, {}) or (not v["settings"] and a not in chosen):
            chosen[a] = u
    return list(chosen.values())


def chosen_markdown(report: dict, h: str = "##") -> list[str]:
    """The defaults the package took from the study (``omkl_dist.defaults``), their gap to each
    row's best cell per algorithm, and the named rows."""
    from omkl_dist import defaults

    chosen = chosen_combination()
    lines = [
        f"{h} The defaults chosen",
        "",
        f"`omkl run`, `submit` and `retrain` use **{chosen}** unless told otherwise (`omkl_dist.defaults`: "
        f"the scaler fitted on the stream's first {defaults.SCALE_ROWS:,} rows), and the online estimators "
        'default to the normalised pool (`omkc16+norm`; the Perceptron `laplacian:2`, BENCHMARKS.md "Defaults '
        'of fit"), and their `fit` learns a training set in five passes, each in a fresh seeded order '
        '(`n_epochs=5`, `shuffle=True`: BENCHMARKS.md "Defaults of fit"; a job\'s stream is learnt once, in its '
        "window's order); `--paper-settings` "
        "gives raw features and unnormalised kernels, which every `omkl reproduce` uses. A job also sets "
        + ", ".join(f"{a}'s `{k}={v!r}`" for a, p in defaults.JOB_PARAMS.items() for k, v in p.items())
        + " (where the study measured it, the default's row below is that unit's). Sparse rows stay "
        "unscaled (standardising would densify them), and so do rows whose every feature on the scaler's "
        f"head is 0 or 1 (the 0/1 rule: {_zero_one_text(report)}). Per algorithm, the default's gap to the "
        "best cell of each row:",
        "",
        f"| algorithm | rows within {report['near']:g} of the best | mean gap | worst gap |",
        "|---|---|---|---|",
    ]
    for a in default_units(report):
        rows = report["tables"][a]["rows"]
        gaps = [g for g in (_gap(row, default_combination(report, d)) for d, row in rows.items()) if g is not None]
        if gaps:
            near = sum(g <= report["near"] for g in gaps)
            lines.append(f"| {a} | {near} of {len(gaps)} | {np.mean(gaps):.2f} | {max(gaps):.2f} |")
    if report["max_rows"] is None:
        lines += _cells_markdown(report)
    lines += [
        "",
        "The named rows (the measurements that asked for this study):",
        "",
        "| algorithm | dataset | default | best cell | best | gap |",
        "|---|---|---|---|---|---|",
    ]
    for a, d in NAMED_ROWS:
        row = report["tables"].get(a, {}).get("rows", {}).get(d)
        default = default_combination(report, d)
        if row and default in row:
            best = min((c for c in row if row[c]["mean"] is not None), key=lambda c: row[c]["mean"])
            lines.append(
                f"| {a} | {d} | {row[default]['mean']:.2f} % | {best} | {row[best]['mean']:.2f} % | "
                f"{_gap(row, default):.2f} |"
            )
    return lines + [""]


def _zero_one_text(report: dict) -> str:
    heads = report.get("zero_one_heads")
    if heads is None:
        return "where it applies is not recorded in this summary, which predates the rule or could not read the data"
    named = ", ".join(heads) if heads else "none of the datasets here"
    return f"{named}, whose default is {zero_one_combination()}"


def _cells_markdown(report: dict) -> list[str]:
    """Every default unit's row: the default (with the 0/1 rule) against the best of its six
    combinations, and how many are within 1 point."""
    lines = [
        "",
        "Per row, the default (with the 0/1 rule) against the best of the six combinations:",
        "",
        "| algorithm | dataset | default | its rate | best of the six | its rate | gap |",
        "|---|---|---|---|---|---|---|",
    ]
    gaps = []
    for a in default_units(report):
        for d, row in report["tables"][a]["rows"].items():
            combination = default_combination(report, d)
            gap = _gap(row, combination)
            if gap is None:
                continue
            best = min((c for c in row if row[c]["mean"] is not None), key=lambda c: row[c]["mean"])
            gaps.append((gap, a, d))
            lines.append(
                f"| {a} | {d} | {combination} | {row[combination]['mean']:.2f} % | {best} | "
                f"{row[best]['mean']:.2f} % | {gap:.2f} |"
            )
    if gaps:
        worst = max(gaps)
        within = sum(g <= 1.0 for g, _, _ in gaps)
        lines += [
            "",
            f"The default is within 1 point of the best of the six on {within} of {len(gaps)} rows (mean gap "
            f"{np.mean([g for g, _, _ in gaps]):.2f}; worst {worst[0]:.2f}, {worst[1]} on {worst[2]}).",
        ]
    return lines


def _gap(row: dict, combination: str) -> float | None:
    """Points from ``combination``'s mean mistake rate to the row's best (None if not measured)."""
    means = [cell["mean"] for cell in row.values() if cell.get("mean") is not None]
    cell = row.get(combination)
    return None if cell is None or cell.get("mean") is None or not means else cell["mean"] - min(means)


def _algorithms_text(report: dict) -> str:
    """``14 algorithms`` or, with axes, ``14 algorithms (32 with the other settings)``."""
    algorithms = {u["algorithm"] for u in units_of(report).values()}
    units = len(report["algorithms"])
    return f"{len(algorithms)} algorithms" + (f" ({units} with the other settings)" if units != len(algorithms) else "")


def benchmarks_section(report: dict) -> str:
    """A short section for BENCHMARKS.md: what was measured, the overall summary and the total time."""
    rows = "whole streams" if report["max_rows"] is None else f"{cap_text(report['max_rows'])} rows"
    lines = [
        f"## Defaults study, {rows} (`omkl study defaults`, full report: docs/defaults.md)",
        "",
        f"{report['runs']:,} runs: {_algorithms_text(report)} × {len(report['datasets'])} datasets "
        f"× {len(report['combinations'])} combinations (scaling × raw/normalised kernels) × up to "
        f"{_count(report['permutations'], 'permutation')}, "
        f"{'whole streams' if report['max_rows'] is None else format(report['max_rows'], ',') + ' rows each'}; "
        "learning time "
        f"{report['learning_seconds']:,.0f} s in total ({report['run_seconds']:,.0f} s of runs including "
        f"data preparation). Raw results: `{report['source']}`.",
        "",
        *overall_markdown(report, level=3),
    ]
    return "\n".join(lines)
