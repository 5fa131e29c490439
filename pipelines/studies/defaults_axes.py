"""What the defaults study's axes buy: per algorithm and dataset, a setting the defaults do not use (SPA's
other Hedge loss, a budget of 400, the gaussian pool) against the default unit, both at the default
combination (the 0/1 rule's where it applies) -- the points of mistakes it saves or costs and the time it
takes. A budget is a memory/time choice rather than an accuracy one: this is the table that says what a
larger one buys. Pure functions of a report (:func:`~.defaults_report.build_report`, or a summary read back).
"""

from __future__ import annotations

import numpy as np

from .defaults_markdown import default_combination, default_units, units_of
from .defaults_plan import AXES, variant_label


def axis_rows(report: dict) -> list[dict]:
    """Per non-default unit and dataset: ``algorithm``, ``setting`` (what differs from the default
    unit), ``dataset``, ``combination``, ``default`` and ``moved`` (mean mistake %), ``change``
    (moved − default, points) and ``time`` (the ratio of their mean CPU seconds per run -- the runs
    share a machine, whose load inflates wall times unevenly --, None where a run did not record it)."""
    units = units_of(report)
    defaults = {units[u]["algorithm"]: u for u in default_units(report)}
    out = []
    for unit, spec in units.items():
        base = defaults.get(spec["algorithm"])
        if base is None or base == unit:
            continue
        setting = _difference(spec["settings"], units[base]["settings"])
        for dataset, row in report["tables"][unit]["rows"].items():
            combination = default_combination(report, dataset)
            moved, default = row.get(combination), report["tables"][base]["rows"].get(dataset, {}).get(combination)
            if not moved or not default or moved.get("mean") is None or default.get("mean") is None:
                continue
            seconds = (moved.get("cpu_seconds"), default.get("cpu_seconds"))
            out.append(
                {
                    "algorithm": spec["algorithm"],
                    "setting": setting,
                    "dataset": dataset,
                    "combination": combination,
                    "default": default["mean"],
                    "moved": moved["mean"],
                    "change": moved["mean"] - default["mean"],
                    "time": seconds[0] / seconds[1] if None not in seconds and seconds[1] > 0 else None,
                }
            )
    return out


def _difference(settings: dict, default: dict) -> str:
    """How ``settings`` differ from the default unit's, e.g. ``budget=400`` or, for a unit at the
    estimator's defaults beside a job's (SPA), ``hedge_loss=hinge``."""
    moved = {k: v for k, v in settings.items() if default.get(k) != v}
    moved.update({k: AXES[k].default for k in default if k not in settings and k in AXES})
    return variant_label(moved)


def axes_markdown(report: dict, h: str = "##") -> list[str]:
    """The table of :func:`axis_rows` and, per algorithm and setting, the mean change and time ratio."""
    rows = axis_rows(report)
    if not rows:
        return []
    lines = [
        f"{h} What the other settings buy",
        "",
        "Each setting the defaults do not use, against the default (both at the default combination, the 0/1 "
        "rule's where it applies): mistake % and the change in points (negative: fewer mistakes), and the "
        "CPU time per run as a multiple of the default's.",
        "",
        "| algorithm | setting | dataset | combination | default % | with the setting % | change | CPU time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        time = "—" if r["time"] is None else f"{r['time']:.2f}x"
        lines.append(
            f"| {r['algorithm']} | {r['setting']} | {r['dataset']} | {r['combination']} | {r['default']:.2f} | "
            f"{r['moved']:.2f} | {r['change']:+.2f} | {time} |"
        )
    lines += ["", "Per algorithm and setting, over its datasets:", ""]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["algorithm"], r["setting"]), []).append(r)
    for (algorithm, setting), group in groups.items():
        changes = [r["change"] for r in group]
        times = [r["time"] for r in group if r["time"] is not None]
        cost = f"; CPU time {np.mean(times):.2f}x the default's on average" if times else ""
        lines.append(
            f"- {algorithm} with {setting}: {np.mean(changes):+.2f} points on average over {len(group)} "
            f"dataset(s) (from {min(changes):+.2f} to {max(changes):+.2f}){cost}"
        )
    return lines + [""]
