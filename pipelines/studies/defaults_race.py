"""The race of ``scaling="auto"`` (:mod:`omkl_dist.race`) evaluated offline on the study's whole-stream
runs: each run records its cumulative mistakes after the first rows (``prefix_mistakes``), which are
the race's scores -- a candidate's race over the head of a stream is the head of its whole run -- so
for every algorithm x dataset the combination the race picks after ``h`` rows, and its whole-stream
gap to the best of the six, follow from the records alone."""

from __future__ import annotations

from collections import defaultdict

from omkl_dist.defaults import CANDIDATES, RACE_ROWS

NEAR = 1.0  # points: the bound on the default's gap to the best fixed combination


def _combination(record: dict) -> str:
    return record["scaling"] + ("+norm" if record["kernels"] == "norm" else "")


def _cumulative(record: dict, rows: int) -> int | None:
    """Mistakes over the run's first ``rows`` rows (None: not recorded at that prefix)."""
    prefixes = {int(h): int(m) for h, m in record.get("prefix_mistakes", ())}
    if rows >= record["n"]:
        return int(record["mistakes"])
    return prefixes.get(rows)


def streams(records) -> dict:
    """Whole-stream runs with all six combinations, by (algorithm, settings, dataset, permutation)."""
    cells: dict = defaultdict(dict)
    for r in records:
        if "error" in r or r.get("max_rows") is not None or "prefix_mistakes" not in r:
            continue
        variant = ",".join(f"{k}={v}" for k, v in sorted(r.get("settings", {}).items())) or "default"
        cells[(r["algorithm"], variant, r["dataset"], r["permutation"])][_combination(r)] = r
    return {key: row for key, row in cells.items() if set(row) == set(CANDIDATES)}


def race_choice(row: dict, rows: int) -> str | None:
    """The combination a race over the first ``rows`` rows picks (fewest mistakes, ties to the earlier
    of :data:`~omkl_dist.defaults.CANDIDATES`); None if a prefix is not recorded."""
    scores = [_cumulative(row[c], rows) for c in CANDIDATES]
    if any(s is None for s in scores):
        return None
    return CANDIDATES[scores.index(min(scores))]


def gap(row: dict, combination: str) -> float:
    """Points from ``combination``'s whole-stream mistake rate to the best of the row's six."""
    return 100.0 * (row[combination]["mistake_rate"] - min(cell["mistake_rate"] for cell in row.values()))


def race_markdown(records, h: str = "##", heads=(1_000, 2_000, 3_000, 5_000, 10_000, 20_000)) -> list[str]:
    """The section "The race": per head size, on how many whole streams the race's pick is within
    :data:`NEAR` of the best fixed combination; then every stream at :data:`RACE_ROWS`."""
    rows = streams(records)
    lines = [
        f"{h} The race",
        "",
        f'`scaling="auto"` (the default) races the six combinations over the stream\'s first {RACE_ROWS:,} rows '
        "and keeps the one with the fewest mistakes (`omkl_dist.race`). A candidate's race is the head of its "
        "whole run, so the whole-stream runs above say what each head size would pick and what it costs on the "
        f"whole stream (the pick's gap to the best of the six, in points; the issue's bound: {NEAR:g}).",
        "",
        f"| rows raced | streams | pick within {NEAR:g} of the best | mean gap | worst gap (stream) |",
        "|---|---|---|---|---|",
    ]
    for head in heads:
        picked = [(key, gap(row, c)) for key, row in rows.items() if (c := race_choice(row, head)) is not None]
        if not picked:
            continue
        worst = max(picked, key=lambda item: item[1])
        near = sum(g <= NEAR for _, g in picked)
        mean = sum(g for _, g in picked) / len(picked)
        lines.append(
            f"| {head:,} | {len(picked)} | {near} | {mean:.2f} | {worst[1]:.2f} ({'/'.join(map(str, worst[0][:3]))}) |"
        )
    lines += [
        "",
        f"At {RACE_ROWS:,} rows, stream by stream:",
        "",
        "| algorithm | settings | dataset | race's pick | its mistakes | best | best's mistakes | gap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, row in sorted(rows.items()):
        chosen = race_choice(row, RACE_ROWS)
        if chosen is None:
            continue
        best = min(CANDIDATES, key=lambda c: row[c]["mistake_rate"])
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {chosen} | {100 * row[chosen]['mistake_rate']:.2f} % | {best} | "
            f"{100 * row[best]['mistake_rate']:.2f} % | {gap(row, chosen):.2f} |"
        )
    return lines + [""]
