"""Two defaults studies side by side: the whole streams (``--max-rows all``) against the 3,000-row cap
that chose the defaults. Per algorithm and dataset: the best setting on the whole stream (any of the
study's axes), the default's mistakes, the cap's winner and what it makes on the whole stream; then the
rows where the two choose a different combination, with what following the cap costs. Pure functions
of two reports (:func:`~.defaults_report.build_report`, or a summary read back)."""

from __future__ import annotations

from .defaults_axes import axes_markdown
from .defaults_markdown import (
    chosen_combination,
    default_combination,
    default_units,
    report_body,
    report_header,
    units_of,
    zero_one_combination,
)
from .defaults_plan import NEAR, cap_text, variant_label


def _means(row: dict) -> dict:
    return {c: cell["mean"] for c, cell in row.items() if cell.get("mean") is not None}


def _winner(means: dict, combinations) -> str | None:
    """The row's best combination once all of ``combinations`` are measured (the first on a tie)."""
    if not means or any(c not in means for c in combinations):
        return None
    return min(combinations, key=lambda c: means[c])


def compare_rows(cap: dict, whole: dict) -> list[dict]:
    """Per default unit and dataset of ``whole``: ``best`` (settings, combination, mean) over every unit of
    the algorithm, ``default`` (the mean of the defaults' combination there, the 0/1 rule's where it
    applies, :func:`~.defaults_markdown.default_combination`), ``whole_winner`` and
    ``cap_winner`` (over the six combinations, at default settings), ``cap_winner_whole`` (its mean on the
    whole stream) and ``gap`` (points that following the cap's winner costs on the whole stream)."""
    units = units_of(whole)
    out = []
    for unit in default_units(whole):
        algorithm = units[unit]["algorithm"]
        same = [u for u, v in units.items() if v["algorithm"] == algorithm]
        for dataset, row in whole["tables"][unit]["rows"].items():
            means = _means(row)
            candidates = [
                (mean, units[u]["settings"], c)
                for u in same
                for c, mean in _means(whole["tables"][u]["rows"].get(dataset, {})).items()
            ]
            best = min(candidates, key=lambda t: t[0]) if candidates else None
            cap_row = cap["tables"].get(algorithm, {}).get("rows", {}).get(dataset, {})
            cap_winner = _winner(_means(cap_row), cap["combinations"])
            whole_winner = _winner(means, whole["combinations"])
            gap = None
            if cap_winner in means and whole_winner is not None:
                gap = means[cap_winner] - means[whole_winner]
            out.append(
                {
                    "algorithm": algorithm,
                    "dataset": dataset,
                    "best": None if best is None else {"settings": best[1], "combination": best[2], "mean": best[0]},
                    "default": means.get(default_combination(whole, dataset)),
                    "whole_winner": whole_winner,
                    "whole_winner_mean": means.get(whole_winner),
                    "cap_winner": cap_winner,
                    "cap_winner_cap": _means(cap_row).get(cap_winner),
                    "cap_winner_whole": means.get(cap_winner),
                    "gap": gap,
                    # the cap's winner is only comparable if it ran the same kernels (a default may have changed since)
                    "same_kernels": cap["tables"].get(algorithm, {}).get("kernels") == whole["tables"][unit]["kernels"],
                }
            )
    return out


def against(cap: dict, whole: dict, source) -> dict:
    """What the whole-stream report keeps of the comparison: the cap's summary path, the default
    combination compared, and :func:`compare_rows`."""
    default = chosen_combination()
    return {"source": str(source), "default": default, "rows": compare_rows(cap, whole)}


def _pct(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _winner_text(winner, mean) -> str:
    return "—" if winner is None else f"{winner}: {mean:.2f}"


def _best_text(best) -> str:
    if best is None:
        return "—"
    settings = f", {variant_label(best['settings'])}" if best["settings"] else ""
    return f"{best['combination']}{settings}: {best['mean']:.2f}"


def comparison_markdown(cap: dict, whole: dict, rows: list[dict], default: str) -> list[str]:
    """The side-by-side table and the rows where the two studies' winners differ."""
    cap_rows = cap_text(cap["max_rows"])
    lines = [
        f"## Whole streams against the first {cap_rows} rows",
        "",
        f"Mistake rates in %, mean over the permutations measured. *Best*: the best cell of the whole stream over "
        f"every setting the study ran (the six combinations, and the axes where they apply); *default*: "
        f"{default} at default settings ({zero_one_combination()} where the 0/1 rule applies); *winner*: the "
        f"best of the six combinations at default settings, on the "
        f"whole stream and at {cap_rows} rows; *gap*: what the {cap_rows}-row winner makes on the whole stream "
        "minus the whole stream's winner.",
        "",
        f"| algorithm | dataset | best (whole) | default (whole) | winner (whole) | winner at {cap_rows} "
        f"(its rate there) | that winner on the whole stream | gap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['algorithm']} | {r['dataset']} | {_best_text(r['best'])} | {_pct(r['default'])} | "
            f"{_winner_text(r['whole_winner'], r['whole_winner_mean'])} | {r['cap_winner'] or '—'} "
            f"({_pct(r['cap_winner_cap'])}){'' if r['same_kernels'] else ' †'} | {_pct(r['cap_winner_whole'])} | "
            f"{_pct(r['gap'])} |"
        )
    if not all(r["same_kernels"] for r in rows):
        lines += [
            "",
            f"†: the {cap_rows}-row study ran this algorithm with other kernels (its default changed since; see "
            "each table's kernels): its winner is a scaling's, not a kernel's, verdict.",
        ]
    differ = sorted(
        (r for r in rows if r["gap"] is not None and r["cap_winner"] != r["whole_winner"]), key=lambda r: -r["gap"]
    )
    lines += ["", f"### Where the whole stream and the first {cap_rows} rows disagree", ""]
    if not differ:
        lines.append("Nowhere: on every complete row the two choose the same combination.")
    else:
        lines.append(
            f"{len(differ)} of {sum(r['gap'] is not None for r in rows)} complete rows choose differently "
            f"({sum(r['gap'] > NEAR for r in differ)} by more than {NEAR:g} points on the whole stream):"
        )
        lines.append("")
        lines += [
            f"- {r['algorithm']} on {r['dataset']}: {r['cap_winner']} at {cap_rows} rows, {r['whole_winner']} on the "
            f"whole stream ({r['cap_winner_whole']:.2f} vs {r['whole_winner_mean']:.2f}, +{r['gap']:.2f})"
            for r in differ
        ]
    return lines + [""]


def format_side_by_side(cap: dict, whole: dict) -> str:
    """The page of both studies: the comparison (``whole["against"]``, see :func:`against`), then the
    whole-stream report, then the cap's."""
    source, rows = whole["against"]["source"], whole["against"]["rows"]
    lines = report_header(whole, "Defaults study: whole streams and the first rows", compare=source)
    lines += comparison_markdown(cap, whole, rows, whole["against"]["default"])
    lines += axes_markdown(whole)
    lines += ["## Whole streams", ""] + report_body(whole, level=3)
    lines += [f"## The first {cap_text(cap['max_rows'])} rows (`{source}`)", ""] + report_body(cap, level=3)
    return "\n".join(lines)
