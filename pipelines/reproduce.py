"""``omkl reproduce omkc``: run the OMKC paper's Table 3/4 protocol and print ours next to the paper."""

from __future__ import annotations

import sys
import textwrap

from tqdm import tqdm

from omkl_dist.reproduction.bomkl import reproduce_bomkl, resolve_bomkl
from omkl_dist.reproduction.omkc import reproduce_omkc, resolve_algorithms, resolve_datasets
from omkl_dist.reproduction.tables.omkc import IMPLEMENTED
from omkl_dist.storage.outputs import JSON_REPORT, check_output, write_json_report


def split_names(text):
    if text is None:
        return None
    return [part for part in (p.strip() for p in text.split(",")) if part]


def run_reproduce_omkc(
    *,
    permutations: int,
    datasets=None,
    algorithms=None,
    scaling: str = "paper",
    seed: int = 0,
    ties: str = "mistake",
    show_progress: bool = True,
    out=None,
) -> dict:
    """Run the reproduction (with a progress bar on stderr) and optionally write the report to ``out``."""
    datasets, algorithms = split_names(datasets), split_names(algorithms)
    run_names, _ = resolve_datasets(datasets)
    runnable = [a for a in resolve_algorithms(algorithms) if a in IMPLEMENTED]
    total = len(run_names) * len(runnable) * permutations
    return run_with_bar(
        reproduce_omkc,
        total,
        "reproduce omkc",
        show_progress,
        out,
        datasets,
        algorithms,
        permutations=permutations,
        seed=seed,
        scaling=scaling,
        ties=ties,
    )


def run_reproduce_bomkl(
    *,
    permutations: int,
    datasets=None,
    algorithms=None,
    seed: int = 0,
    ties: str = "mistake",
    scaling: str = "paper",
    show_progress: bool = True,
    out=None,
) -> dict:
    """``omkl reproduce bomkl``: the BOMKL paper's Tables 1/2, with a progress bar, optional JSON file."""
    from omkl_dist.reproduction.tables.bomkl import IMPLEMENTED as BOMKL_IMPLEMENTED
    from omkl_dist.reproduction.tables.bomkl import TABLE_ALGORITHMS, TABLES

    datasets, algorithms = split_names(datasets), split_names(algorithms)
    names, algos = resolve_bomkl(datasets, algorithms)
    total = 0
    for name in names:
        needed = {a for (t, n) in TABLES if n == name for a in TABLE_ALGORITHMS[t]}
        total += sum(a in needed and a in BOMKL_IMPLEMENTED for a in algos) * permutations
    return run_with_bar(
        reproduce_bomkl,
        total,
        "reproduce bomkl",
        show_progress,
        out,
        datasets,
        algorithms,
        permutations=permutations,
        seed=seed,
        ties=ties,
        scaling=scaling,
    )


def run_with_bar(fn, total, desc, show_progress, out, datasets, algorithms, **kwargs) -> dict:
    if out is not None:
        check_output(out, JSON_REPORT, overwrite=True)  # before hours of work, not after
    bar = tqdm(total=total, unit="run", desc=desc, disable=not show_progress, file=sys.stderr, dynamic_ncols=True)

    def step(text):
        bar.set_postfix_str(text, refresh=False)
        bar.update(1)

    try:
        report = fn(datasets, algorithms, progress=step, **kwargs)
    finally:
        bar.close()
    if out is not None:
        write_json_report(out, report)
        report["out"] = str(out)
    return report


def _pm(cell, digits=2):
    return f"{cell['mean']:.{digits}f} ± {cell['std']:.{digits}f}"


def _num(value, digits):
    return f"{value:.{digits}f}"


_HEADER = (
    "algorithm",
    "ours mistake %",
    "paper mistake %",
    "flag",
    "ours #SV",
    "paper #SV",
    "ours time s",
    "paper time s",
)
_ALIGN = ("<", ">", ">", "<", ">", ">", ">", ">")


def _format_block(block) -> list[str]:
    rows = []
    notes = []
    for row in block["rows"]:
        paper = row["paper"]
        if row["ours"] is None:
            rows.append(
                (
                    row["label"],
                    "n/a",
                    _pm(paper["mistake_rate"]),
                    "-",
                    "n/a",
                    _num(paper["n_support"]["mean"], 1),
                    "n/a",
                    _num(paper["seconds"]["mean"], 3),
                )
            )
            notes.append(f"{row['label']}: ours: {row['note']}")
            continue
        ours = row["ours"]
        flag = f"{'FLAG' if row['flagged'] else 'ok'} {row['deviation_pp']:+.2f}"
        rows.append(
            (
                row["label"],
                _pm(ours["mistake_rate"]),
                _pm(paper["mistake_rate"]),
                flag,
                _num(ours["n_support"]["mean"], 1),
                _num(paper["n_support"]["mean"], 1),
                _num(ours["seconds"]["mean"], 3),
                _num(paper["seconds"]["mean"], 3),
            )
        )
        if "best_kernel" in ours:
            notes.append(
                f"{row['label']} picked {ours['best_kernel']} most often "
                f"(paper's best kernel: {block['paper_best_kernel'] or 'not reported'})"
            )
        if row.get("duplicate"):
            notes.append(f"{row['label']}: same runs and paper numbers as above, not counted again")
        if row.get("explanation"):
            notes.append(f"{row['label']} flagged: {row['explanation']}")
    widths = [max(len(r[i]) for r in [_HEADER, *rows]) for i in range(len(_HEADER))]

    def line(cells):
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, _ALIGN, widths)).rstrip()

    sub = " [SUBSTITUTE dataset]" if block["substitute"] else ""
    title = (
        f"== {block['paper_name']} (paper n={block['paper_n']} d={block['paper_d']}) -- ours: "
        f"{block['registry']} = {block['file']}, n={block['n']} d={block['d']}, scaling {block['scaling']}{sub}"
    )
    out = [title, *textwrap.wrap(block["note"], 110, initial_indent="   ", subsequent_indent="   ")]
    if block.get("repair"):
        out.append(f"   repair: {block['repair']}")
    if block.get("baseline_budget"):
        b = block["baseline_budget"]
        out.append(
            f"   budget baselines: B = {b} support vectors per kernel (16 B = {16 * b}, the paper's #SV for them)"
        )
    out += [line(_HEADER), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    out += [f"   {n}" for n in notes]
    return out


def _bomkl_header(report: dict) -> list[str]:
    s = report["settings"]
    betas = ", ".join(f"{k} {v:g}" for k, v in s["spa_beta"].items())
    lines = [
        "BOMKL reproduction -- Budget Online Multiple Kernel Learning (SPA), Tables 1 and 2",
        f"{s['permutations']} permutation(s) (paper: 10), seed {s['seed']}, scaling {s.get('scaling', 'none')} "
        "(per dataset in its title), kernels "
        f"{s['kernels']}; "
        f"gamma {s['gamma']}, delta {s['delta']}, eta {s['eta']}, alpha {s['alpha']}, SPA beta: {betas}; one pass, "
        "test-then-train; a zero score counts as " + ("a mistake" if s["ties"] == "mistake" else "+1"),
        f"flag: {s['flag_rule']} (mistake rate only)",
        "#SV: total over the 16 component classifiers; Perceptron(*) uses the kernel whose Perceptron makes the "
        "fewest mistakes on the first permutation (the paper's search with foresight, section 4.3); time: ours "
        "(numba) vs the paper's C++ (no std printed there)",
    ]
    if s.get("baseline_budget"):
        budgets = ", ".join(f"{k} {v}" for k, v in s["baseline_budget"].items())
        lines.append(
            f"budget baselines RBP/Forgetron/BOGD/BPAS: budget B per kernel = paper SPA #SV / 16 ({budgets}); "
            "each kernel's learner sees every instance, Hedge gamma 0.99 discounted by each kernel's mistakes "
            f"(RBP, Forgetron) or hinge loss (BOGD, BPAS); eta {s['eta']}; BOGD lambda {s.get('bogd_lambda', '?')} "
            "(T = instances; the paper gives none)"
        )
    lines.append("")
    return lines


def format_reproduce_report(report: dict) -> str:
    if report.get("experiment") == "bomkl":
        return _format_report_body(report, _bomkl_header(report))
    s = report["settings"]
    lines = [
        "OMKC reproduction -- Hoi et al. (2013), Tables 3 and 4",
        f"{s['permutations']} permutation(s), seed {s['seed']}, scaling {s['scaling']}, kernels {s['kernels']}, "
        f"beta {s['beta']}, delta {s['delta']}, OM-2 p {s.get('om2_p', '-')}; one pass, test-then-train; a zero "
        "score counts as " + ("a mistake" if s["ties"] == "mistake" else "+1"),
        f"flag: {s['flag_rule']} (mistake rate only)",
        "#SV: Perceptron(u) counts its one shared SV set; OMKC(D,S)/(S,S) the expected SVs of the stochastic "
        "combination; time: ours (numba) vs the paper's Matlab",
        "",
    ]
    return _format_report_body(report, lines)


def _format_report_body(report: dict, lines: list[str]) -> str:
    table = None
    for block in report["datasets"]:
        if block.get("table") != table:
            table = block.get("table")
            if table is not None:
                from omkl_dist.reproduction.tables.bomkl import TABLE_TITLES

                lines += [f"#### {TABLE_TITLES[table]}", ""]
        lines += _format_block(block)
        lines.append("")
    for skipped in report["skipped"]:
        lines.append(f"skipped {skipped['paper_name']}: {skipped['note']}")
    sm = report["summary"]
    subs = sorted({b["registry"] for b in report["datasets"] if b["substitute"]})
    lines.append(
        f"flagged rows: {sm['flagged']} of {sm['rows_compared']} compared "
        f"({sm['flagged_same_data']} of {sm['rows_compared_same_data']} on the paper's own datasets"
        + (
            f"; {sm['flagged_substitute']} of {sm['rows_compared'] - sm['rows_compared_same_data']} on substitute "
            f"datasets {'/'.join(subs)}"
            if subs
            else ""
        )
        + ")"
    )
    if sm["mean_abs_deviation_pp"] is not None:
        lines.append(
            f"mean |ours - paper| mistake rate: {sm['mean_abs_deviation_pp']:.2f} points "
            f"({sm['mean_abs_deviation_same_data_pp'] or 0.0:.2f} on the paper's own datasets)"
        )
    lines.append(f"total time: {sm['total_seconds']:.1f} s")
    if "out" in report:
        lines.append(f"report written to {report['out']}")
    return "\n".join(lines)


def run_reproduce_om2(
    *,
    permutations: int,
    datasets=None,
    seed: int = 0,
    ties: str = "mistake",
    study_permutations: int = 5,
    study_datasets=None,
    plot=None,
    show_progress: bool = True,
    out=None,
) -> dict:
    """``omkl reproduce om2``: the OM-2 rows of the OMKC paper's Tables 3/4 (beside OMKC(D,D), the
    paper's comparison), then the multi-class study (:mod:`omkl_dist.reproduction.om2`)
    with its plot written to ``plot``."""
    from omkl_dist.reproduction.om2 import ALGORITHMS as STUDY_ALGORITHMS
    from omkl_dist.reproduction.om2 import DATASETS as STUDY_DATASETS
    from omkl_dist.reproduction.om2 import plot_study, run_study
    from omkl_dist.storage.outputs import PLOT, write_plot

    if plot is not None:
        check_output(plot, PLOT, overwrite=True, option="--plot")  # before the runs, not after
    if out is not None:
        check_output(out, JSON_REPORT, overwrite=True)
    algorithms = ["om2", "omkc-dd"]
    datasets, study_datasets = split_names(datasets), split_names(study_datasets)
    run_names, _ = resolve_datasets(datasets)
    study_names = study_datasets or list(STUDY_DATASETS)
    total = (
        len(run_names) * len(algorithms) * permutations + len(study_names) * len(STUDY_ALGORITHMS) * study_permutations
    )
    bar = tqdm(
        total=total, unit="run", desc="reproduce om2", disable=not show_progress, file=sys.stderr, dynamic_ncols=True
    )

    def step(text):
        bar.set_postfix_str(text, refresh=False)
        bar.update(1)

    try:
        tables = reproduce_omkc(datasets, algorithms, permutations=permutations, seed=seed, ties=ties, progress=step)
        study = run_study(study_names, permutations=study_permutations, seed=seed, progress=step)
    finally:
        bar.close()
    report = {"experiment": "om2", "tables": tables, "study": study}
    if plot is not None:
        write_plot(plot, lambda path: plot_study(study, path))
        report["plot"] = str(plot)
    if out is not None:
        write_json_report(out, report)
        report["out"] = str(out)
    return report


def format_om2_report(report: dict) -> str:
    tables, study = report["tables"], report["study"]
    s = tables["settings"]
    lines = [
        "OM-2 reproduction -- the OM-2 rows of Hoi et al. (2013), Tables 3 and 4, beside OMKC(D,D)",
        f"{s['permutations']} permutation(s), seed {s['seed']}, scaling {s['scaling']}, kernels {s['kernels']}, "
        f"OM-2 with p = {s['om2_p']} (the OM-2 paper's best; see omkl_dist.reproduction.omkc) and Algorithm 1's "
        "exact norm; one pass, test-then-train; a zero score counts as "
        + ("a mistake" if s["ties"] == "mistake" else "+1"),
        f"flag: {s['flag_rule']} (mistake rate only)",
        "#SV: OM-2's rows (every kernel keeps the same ones); OMKC(D,D) summed over its 16 kernels",
        "",
    ]
    body = _format_report_body(tables, lines).splitlines()
    st = study["settings"]
    body += [
        "",
        f"Multi-class study -- online mistake rate of one pass ({st['permutations']} random orders, "
        f"seed {st['seed']}, features {st['scaling']}, kernels {st['kernels']})",
        "",
    ]
    header = ("dataset", "n x d", "K", "algorithm", "mistake %", "#SV", "seconds")
    rows = []
    for block in study["datasets"]:
        for row in block["rows"]:
            rows.append(
                (
                    block["dataset"],
                    f"{block['n']} x {block['d']}",
                    str(block["classes"]),
                    row["label"],
                    _pm(row["final"]),
                    _num(row["n_support"], 0),
                    _num(row["seconds"], 2),
                )
            )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    body += ["  ".join(f"{c:<{w}}" for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    body.append(
        "(mistake rate at 20 points of the stream per dataset and algorithm: the JSON report's "
        "study.datasets[].rows[].mistake_rate)"
    )
    if "plot" in report:
        body.append(f"plot written to {report['plot']}")
    if "out" in report:
        body.append(f"report written to {report['out']}")
    return "\n".join(body)
