"""Reports of retrains and runs: ``report.json`` and PNG plots (``omkl report``).

A report document holds what the plots need, so ``omkl report`` redraws them from any saved
document: a retrain's ``report.json``, a run's trace (``omkl run`` or ``omkl submit --trace-out``), or a store
model's history. The plots use matplotlib's object API on the Agg backend (no display, no global
pyplot state); matplotlib is the optional ``plots`` extra (``pip install 'omkl-dist[plots]'``).

Plots: ``mistakes.png`` (running mistake rate vs instances: champion vs challenger, the gate's
held-out split and the drift alarms marked), ``support.png`` (support vectors per kernel, with
SPA's expected budget or a baseline's cap; not for a model that keeps none, FOGD),
``weights.png`` (kernel weights over time), ``speed.png`` (instances/s) and ``history.png`` (the
gate metric of every version, promotions and rollbacks).

The report is one folder (:data:`~omkl_dist.storage.outputs.REPORT`), written whole in a work
folder and swapped into place: ``report.json`` is its marker, every PNG carries omkl-dist's marker
chunk, and an existing folder is replaced only if it holds nothing else. A document read back
(:func:`load_document`) is checked against the shape the plots need first, so a truncated or
edited file is one error naming the file and the key, never a traceback from the drawing.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np

from omkl_dist.evaluation.curve import MistakeCurve
from omkl_dist.storage.errors import DataError
from omkl_dist.storage.outputs import REPORT, REPORT_MARKER, Inputs, atomic_output, draw_png, dump_json_report

from ._report_schema import check_report_document

TOP_KERNELS = 7  # the support and weights plots show these kernels, the others as one band
#: a trace's series the plots read: the model at ``sampled_at`` (the mistake curve's points where the
#: engine reads the model inside a block, in this process and on a cluster alike; else block ends),
#: the speed at ``block_ends`` (a cluster run's: at its rounds' ends, from row ``timed_from``)
TRACE_SERIES = (
    "sampled_at",
    "n_support",
    "weights",
    "block_ends",
    "instances_per_second",
    "seconds",
    "timed_from",
    "kernel_names",
)


def _curve(rows, counts, *, start: int, label: str) -> dict:
    """A mistake curve's JSON: the running mistake ``rate`` (``counts`` mistakes in the first
    ``rows`` rows) at rows ``start + rows`` of the data."""
    rows = np.asarray(rows, dtype=np.int64)
    return {"rows": (start + rows).tolist(), "rate": (np.asarray(counts) / rows).tolist(), "label": label}


# ------------------------------------------------------------------------------------------------ documents
def retrain_report(summary: dict, watch: dict, fit, store) -> dict:
    """The report document of one retrain (see :func:`omkl_dist.pipelines.retrain.retrain`).

    Every curve has a point at least every 1 % of its rows (:mod:`omkl_dist.evaluation.curve`):
    the champion's over the window, the challenger's mistake curve of its run over the head (the
    same in this process and on a cluster), then its mistakes on the held-out tail.
    """
    start, stop = summary["window"]["rows"]
    split = summary["window"]["holdout_rows"][0]
    curves = {}
    if watch["mistakes"] is not None:
        rows, counts = MistakeCurve.over(stop - start).points(watch["mistakes"], 0, 0)
        curves["champion"] = _curve(rows, counts, start=start, label=f"champion v{summary['parent']} (not learning)")
    doc = {
        "kind": "retrain",
        "summary": summary,
        "algo": None if fit is None else fit["algo"],
        "window": [start, stop],
        "split": split,
        "alarms": watch["drift"]["alarms"],
        "curves": curves,
        "history": version_history(store),
    }
    if fit is not None:
        held = np.asarray(fit["holdout"])
        trace = fit["trace"]
        tail_rows, tail_counts = MistakeCurve.over(len(held)).points(held, 0, 0)
        if trace is not None:  # online: its run's mistake curve on the head, then not learning on the tail
            head_rows = np.asarray(trace["n_seen"], dtype=np.int64)
            head_counts = np.rint(np.asarray(trace["mistake_rate"]) * head_rows).astype(np.int64)
            made = head_counts[-1] if len(head_counts) else 0
            curves["challenger"] = _curve(
                np.r_[head_rows, split - start + tail_rows],
                np.r_[head_counts, made + tail_counts],
                start=start,
                label="challenger (learning on the head, then not)",
            )
        else:  # batch: the refitted model on the tail only
            curves["challenger"] = _curve(
                tail_rows, tail_counts, start=split, label="challenger (refitted on the head)"
            )
        if trace is not None and trace.get("sampled_at"):  # the model read during the run
            doc["trace"] = {k: trace[k] for k in TRACE_SERIES if k in trace}
            doc["n_before"] = int(fit["model"].n_samples_seen_) - int(trace["sampled_at"][-1])
            doc["budget"] = budget_line(fit["model"])
    return doc


def run_report(document: dict) -> dict:
    """The report document of ``omkl run``'s trace file (``{"report": ..., "trace": ...}``)."""
    trace, report = document["trace"], document.get("report", {})
    return {
        "kind": "run",
        "summary": report,
        "algo": report.get("algo"),
        "window": [0, trace["n_seen"][-1] if trace["n_seen"] else 0],
        "split": None,
        "alarms": [],
        "n_before": 0,
        "history": [],
        "curves": {
            "run": {
                "rows": trace["n_seen"],
                "rate": trace["mistake_rate"],
                "label": f"{report.get('algo', 'model')} (test-then-train)",
            }
        },
        "trace": {k: trace[k] for k in TRACE_SERIES if k in trace},
        "budget": _run_budget(report),
    }


def _run_budget(summary: dict) -> dict | None:
    """:func:`budget_line` of a run from its summary's parameters (a retrain's report has the model):
    a budget baseline's cap, SPA's expected support vectors when no budget set its β."""
    params, algo = summary.get("params") or {}, summary.get("algo")
    if algo == "spa" and params.get("budget") is None and params.get("alpha") and params.get("beta"):
        return {"slope": float(params["alpha"]) / float(params["beta"]), "label": _SPA_EXPECTED}
    if algo != "spa" and params.get("budget") is not None:
        return {"cap": int(params["budget"]), "label": f"budget {params['budget']} per kernel"}
    return None


def version_history(store) -> list:
    """Per version of a store model: its gate metric, the champion's on the same rows, whether it was promoted."""
    promoted = {e["version"] for e in store.events() if e.get("event") == "promote"}
    out = []
    for version in store.versions():
        lineage = store.lineage(version)
        gate = lineage.get("gate", {})
        out.append(
            {
                "version": version,
                "parent": lineage.get("parent"),
                "challenger": gate.get("challenger"),
                "champion": gate.get("champion"),
                "promoted": version in promoted,
                "rows": lineage.get("window", {}).get("rows"),
                "algo": lineage.get("algo"),
                "imported": "imported_from" in lineage,
            }
        )
    rollbacks = [e["version"] for e in store.events() if e.get("event") == "rollback"]
    return [*out, *({"rollback_to": v} for v in rollbacks)]


_SPA_EXPECTED = "SPA's expected SVs, α t/β per kernel"


def budget_line(model) -> dict | None:
    """SPA: expected support vectors per kernel α t / β after t rows; a budget baseline: its cap."""
    params = model.get_params()
    if hasattr(model, "beta_") and "alpha" in params:
        return {"slope": float(params["alpha"]) / float(model.beta_), "label": _SPA_EXPECTED}
    if params.get("budget") is not None:
        return {"cap": int(params["budget"]), "label": f"budget {params['budget']} per kernel"}
    return None


_SOURCE_FIX = "give a retrain's report.json or a trace from `omkl run` or `omkl submit` (--trace-out), as written"
_MAX_DOCUMENT_BYTES = 512 * 2**20  # far above any report of ours (a curve has about 200 points)


def load_document(path) -> dict:
    """A report document from a retrain's ``report.json`` or a run's trace JSON, its shape checked.

    Raises
    ------
    DataError
        The file cannot be read, is not (complete) JSON, or is not a report document or run trace
        of the shape the plots need (the message names the offending key).
    """
    path = Path(path)
    try:
        if path.stat().st_size > _MAX_DOCUMENT_BYTES:
            raise DataError(f"{path.stat().st_size:,} bytes is far larger than any report", path=path, fix=_SOURCE_FIX)
        document = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:  # unreadable, cut short, not JSON, nested absurdly
        if isinstance(exc, DataError):
            raise
        what = "is not complete JSON (cut short or not JSON)" if isinstance(exc, ValueError) else "cannot be read"
        raise DataError(f"the report {what}: {exc}", path=path, fix=_SOURCE_FIX) from None
    problem = check_report_document(document)
    if problem is not None:
        raise DataError(problem, path=path, fix=_SOURCE_FIX)
    return run_report(document) if "trace" in document and "kind" not in document else document


# ------------------------------------------------------------------------------------------------ writing
def write_report(
    document: dict, folder, *, plots: bool = True, option: str = "--report-dir", inputs: Inputs = ()
) -> Path:
    """Write the report folder ``folder``: ``report.json`` and (``plots``) the PNGs; returns it.

    The folder is written whole and swapped into place; an existing one is replaced only if it is
    a report folder of ours (see :func:`omkl_dist.storage.outputs.recognise`), an empty folder
    may receive it, anything else is refused before drawing. ``option`` names ``folder`` in
    messages; ``inputs``: (label, path) pairs it must not be, lie in or contain.
    """
    with atomic_output(folder, kind=REPORT, overwrite=True, inputs=inputs, option=option) as tmp:
        written = render(document, tmp) if plots else []
        dump_json_report(tmp / REPORT_MARKER, {**document, "plots": written})
    return Path(folder)


def render(document: dict, folder) -> list[str]:
    """Draw every plot the document has data for into the new folder ``folder``, each PNG marked
    as omkl-dist's; returns the file names."""
    folder = Path(folder)
    written = []
    for name, fig in figures(document).items():
        draw_png(folder / name, lambda path, fig=fig: fig.savefig(path, format="png", dpi=110))
        written.append(name)
    return written


def figures(document: dict) -> dict:
    """The plots the document has data for: ``{file name: matplotlib Figure}`` (object API, no
    pyplot state; nothing is drawn to a screen)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RuntimeError(
            "the report's plots need matplotlib: pip install 'omkl-dist[plots]', "
            "or pass --no-plots for report.json only"
        ) from None
    drawers = [
        ("mistakes.png", _mistakes),
        ("support.png", _support),
        ("weights.png", _weights),
        ("speed.png", _speed),
        ("history.png", _history),
    ]
    out = {}
    for name, draw in drawers:
        fig = Figure(figsize=(8, 4.5), layout="constrained")
        if draw(fig.add_subplot(), document):
            out[name] = fig
    return out


def _subject(document: dict) -> str:
    """What a plot is of: the algorithm and the data of a run; the store model, its version and
    algorithm and the window of a retrain."""
    s, algo = document.get("summary", {}), document.get("algo")
    if document["kind"] == "run":
        n = f" ({s['n']:,} rows)" if isinstance(s.get("n"), int) else ""
        return f"{algo or 'model'} on {Path(str(s.get('data', 'the data'))).name}{n}"
    version = f" v{s['version']}" if s.get("version") is not None else ""
    window = s.get("window") if isinstance(s.get("window"), dict) else {}
    data = f" on {Path(str(window['source'])).name}" if window.get("source") else ""
    rows = document["window"]
    return f"model {s.get('model', '?')}{version}{f' ({algo})' if algo else ''}{data}, rows {rows[0]:,}-{rows[1]:,}"


TITLE_WIDTH = 72  # characters of a title's line: what fits beside the widest legend of long kernel names


def _label_axes(ax, subject: str, what: str, xlabel: str, ylabel: str, *, legend: dict | None = None) -> bool:
    """Title (what the plot is of, then what is drawn), axis labels, grid and (``legend``: its
    keyword arguments) legend. A line longer than :data:`TITLE_WIDTH` wraps: centred over axes narrowed by
    a legend outside them, it ran off the figure's left edge (a long kernel name in the weights' title)."""
    lines = [textwrap.fill(line, TITLE_WIDTH, break_long_words=False) for line in what.split("\n")]
    ax.set_title("\n".join([subject, *lines]), fontsize=10)
    _counts(ax.xaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if legend is not None:
        ax.legend(**legend)
    return True


_ROWS = "instance (row of the data)"


def _counts(axis) -> None:
    """Tick labels of counts with thousands separators: 3,000,000 rows, not "3.0" under a "1e6"."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


_OUTSIDE = {"fontsize": 7, "loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}


def _mistakes(ax, document) -> bool:
    curves = document["curves"]
    if not curves:
        return False
    colors = {"champion": "tab:blue", "challenger": "tab:orange", "run": "tab:orange"}
    top = 0.0
    for key, curve in curves.items():
        rate = 100 * np.asarray(curve["rate"], dtype=float)
        ax.plot(curve["rows"], rate, color=colors.get(key), label=curve["label"], lw=1.6)
        top = max(top, float(np.nanmax(rate, initial=0.0)))
    if document.get("split") is not None:
        ax.axvline(document["split"], color="0.3", ls="--", lw=1, label="gate: held-out tail from here")
    alarms = document.get("alarms", [])
    if alarms:  # a rug of thin ticks along the bottom: hundreds of alarms stay readable
        ax.plot(
            alarms,
            np.full(len(alarms), 0.02),
            ls="none",
            marker="|",
            ms=10,
            mew=0.6,
            color="tab:red",
            alpha=0.6,
            transform=ax.get_xaxis_transform(),
            label=f"drift alarms (Page-Hinkley): {len(alarms):,}",
        )
    ax.set_ylim(0, max(top * 1.1, 1.0))
    gate = document.get("summary", {}).get("gate")
    what = "running mistake rate"
    if gate and gate.get("champion") is not None and gate.get("challenger") is not None:
        what += f" (held out: challenger {100 * gate['challenger']:.2f} %, champion {100 * gate['champion']:.2f} %)"
    return _label_axes(ax, _subject(document), what, _ROWS, "mistakes so far, %", legend={"fontsize": 8, "loc": "best"})


def _series(document, key, axis):
    """The rows of ``axis`` (``sampled_at``, ``block_ends``) and the trace's ``key`` series there
    (None: no data)."""
    trace = document.get("trace")
    if not trace or not trace.get(axis) or not trace.get(key):
        return None, None, None
    x = np.asarray(trace[axis]) + document["window"][0]
    return x, np.asarray(trace[key], dtype=float), trace


def _markers(x) -> dict:
    """Dots on a curve of few points (a learner's rounds can be long), so each measurement shows."""
    return {"marker": "o", "markersize": 3} if len(x) < 40 else {}


def _bands(values, names, *, floor: float = 0.0, shares: bool = False):
    """The :data:`TOP_KERNELS` kernels largest at any time (and ever above ``floor``), then the
    rest summed into one band (``shares``: its label says the largest share any of them reached):
    ``(columns, labels)``, largest first."""
    peak = values.max(axis=0)
    order = np.argsort(-peak, kind="stable")
    shown = [k for k in order[:TOP_KERNELS] if peak[k] > floor]
    rest = [k for k in order if k not in shown]
    columns, labels = [values[:, k] for k in shown], [names[k] for k in shown]
    if rest:
        columns.append(values[:, rest].sum(axis=1))
        # (beyond the TOP_KERNELS shown, the rest may hold far more than the floor: 9 kernels, 30 % in all)
        most, small = peak[rest].max(), ""
        if shares:
            small = ", each never above 0.1 %" if most <= 1e-3 else f", each at most {100 * most:.2g} %"
        labels.append(f"{len(rest)} other kernel(s){small}")
    return columns, labels


def _stack(ax, x, columns, labels, *, dotted: bool = True) -> list:
    """Stacked bands (largest at the bottom) with their measured points dotted (``dotted``); returns the
    bands' legend handles top to bottom, as drawn."""
    bands = ax.stackplot(x, *columns, labels=labels, alpha=0.85)
    if dotted and len(x) < 40:
        for top in np.cumsum(columns, axis=0):
            ax.plot(x, top, ls="none", color="0.2", **_markers(x))
    return bands[::-1]


def _support(ax, document) -> bool:
    x, sv, trace = _series(document, "n_support", "sampled_at")
    if x is None or not sv.any():  # (a model that keeps no support vectors, FOGD's: an empty plot says nothing)
        return False
    names, start, before = trace["kernel_names"], document["window"][0], document.get("n_before", 0)
    if before == 0:  # a fresh model starts with no support vectors
        x, sv = np.r_[start, x], np.vstack([np.zeros(sv.shape[1]), sv])
    handles = _stack(ax, x, *_bands(sv, names))
    total = sv.sum(axis=1)
    top, note, m = max(total.max() * 1.15, 1.0), "", len(names)
    budget = document.get("budget") or {}
    bound = None
    if "slope" in budget:
        bound = m * budget["slope"] * (before + x - start)
    elif "cap" in budget:
        bound = np.full(len(x), m * budget["cap"], dtype=float)
    if bound is not None and bound.max() <= 3 * top:  # drawn only where it shares a scale with the SVs
        (line,) = ax.plot(x, bound, color="k", ls="--", lw=1, label=f"{budget['label']}, x {m} kernels")
        handles, top = [line, *handles], max(top, bound.max() * 1.05)
    elif bound is not None:  # far above: said in the title, not drawn
        note = f"\n({budget['label']}: {bound[-1]:,.0f} in all at the end, far above)"
    ax.set_ylim(0, top)
    _counts(ax.yaxis)
    if x[-1] > x[0]:  # (one block: matplotlib centres the point)
        ax.set_xlim(x[0], x[-1])
    return _label_axes(
        ax,
        _subject(document),
        f"support vectors, stacked by kernel: {int(total[-1]):,} at the end{note}",
        _ROWS,
        "support vectors",
        legend={**_OUTSIDE, "handles": handles},
    )


def _weights(ax, document) -> bool:
    x, w, trace = _series(document, "weights", "sampled_at")
    if x is None or w.ndim != 2 or w.shape[1] < 2:
        return False
    w = w / np.maximum(w.sum(axis=1, keepdims=True), np.finfo(float).tiny)  # shares, whatever the rule keeps
    names, lead = trace["kernel_names"], int(np.argmax(w[-1]))
    held = f"{names[lead]} holds {100 * w[-1, lead]:.0f} %"
    what = f"kernel weights, stacked (shares); at the end {held}"
    once = len(x) == 1 and x[0] > document["window"][0]
    if once:  # read once, at the end (a model read after every block, one block long): the shares drawn
        # over the rows they were learnt from, said to be the end's -- a lone column of dots drew nothing
        x, w = np.r_[document["window"][0], x], np.vstack([w, w])
        what = f"kernel weights (shares), read once at the end: {held}"
    handles = _stack(ax, x, *_bands(w, names, floor=1e-3, shares=True), dotted=not once)
    ax.set_ylim(0, 1)
    if x[-1] > x[0]:  # (one block: matplotlib centres the point)
        ax.set_xlim(x[0], x[-1])
    return _label_axes(
        ax,
        _subject(document),
        what,
        _ROWS,
        "share of the weight",
        legend={**_OUTSIDE, "handles": handles},
    )


def _speed(ax, document) -> bool:
    x, speed, trace = _series(document, "instances_per_second", "block_ends")
    if x is None:
        return False
    what = "learning speed (cumulative instances / learning second)"
    top = float(np.nanmax(speed, initial=0.0))
    start = document["window"][0] + trace.get("timed_from", 0)  # (a resumed cluster run: from its checkpoint)
    if len(x) == 1:  # a run learnt in one call has one measurement: over the rows it covers, not a lone dot
        ax.plot([start, x[0]], [speed[0], speed[0]], color="tab:green", lw=1.4, marker="o", markersize=3)
        what = f"learning speed over the run's one call: {speed[0]:,.0f} instances/s"
    elif len(trace.get("seconds", [])) == len(x):
        # the speed so far hides a slowdown (a run whose support vectors grow: 2,900 rows/s at its end
        # while the cumulative figure still read 5,400): the speed of each stretch of rows is drawn too
        mid, stretch = _stretch_speeds(np.r_[start, x], np.r_[0.0, trace["seconds"]])
        ax.plot(mid, stretch, color="tab:green", lw=1.4, label="each stretch of rows", **_markers(mid))
        ax.plot(x, speed, color="0.35", lw=1.2, ls="--", label="so far (cumulative)")
        top = max(top, float(np.nanmax(stretch, initial=0.0)))
        what = "learning speed: instances per learning second"
        ax.legend(fontsize=8, loc="best")
    else:
        ax.plot(x, speed, color="tab:green", lw=1.4, **_markers(x))
    ax.set_ylim(0, max(top * 1.1, 1.0))
    _counts(ax.yaxis)
    return _label_axes(ax, _subject(document), what, _ROWS, "instances/s")


def _stretch_speeds(rows, seconds, stretches: int = 100):
    """Rows per second over at most ``stretches`` consecutive stretches of blocks (``rows``,
    ``seconds``: at each block end, from 0), drawn at each stretch's middle row."""
    cut = np.unique(np.linspace(0, len(rows) - 1, min(stretches, len(rows) - 1) + 1).round().astype(int))
    rows, seconds = np.asarray(rows, dtype=float)[cut], np.asarray(seconds, dtype=float)[cut]
    elapsed = np.diff(seconds)
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = np.where(elapsed > 0, np.diff(rows) / elapsed, np.nan)
    return (rows[1:] + rows[:-1]) / 2, speed


def _history(ax, document) -> bool:
    versions = [h for h in document.get("history", []) if "version" in h]
    if not versions:
        return False
    v = np.array([h["version"] for h in versions])
    challenger = np.array([np.nan if h["challenger"] is None else 100 * h["challenger"] for h in versions])
    champion = np.array([np.nan if h["champion"] is None else 100 * h["champion"] for h in versions])
    promoted = np.array([h["promoted"] for h in versions])
    ax.plot(v, challenger, color="0.6", lw=1)
    # (a legend entry only for what is drawn: an empty series listed a red cross no version had)
    if promoted.any():
        ax.scatter(v[promoted], challenger[promoted], color="tab:green", zorder=3, s=40, label="version (promoted)")
    if not promoted.all():
        kept_out = {"color": "tab:red", "marker": "x", "zorder": 3, "s": 40, "label": "version (kept out by the gate)"}
        ax.scatter(v[~promoted], challenger[~promoted], **kept_out)
    if np.isfinite(champion).any():
        ax.scatter(v, champion, color="tab:blue", marker="_", s=160, zorder=2, label="its champion, same held-out rows")
    for h in versions:  # a version published without a gate (the first, or one imported) has no rate to draw
        if h["challenger"] is None:
            why = "imported" if h.get("imported") else "first version"
            ax.annotate(
                f"v{h['version']}: no gate\n({why})",
                (h["version"], 0),
                xytext=(0, 12),
                textcoords="offset points",
                ha="center",
                fontsize=8,
                color="0.3",
            )
    for i, h in enumerate(h for h in document["history"] if "rollback_to" in h):
        ax.axvline(h["rollback_to"], color="tab:purple", ls=":", label="rolled back to" if i == 0 else None)
    ax.set_xticks(v)
    ax.set_xlim(v.min() - 0.5, v.max() + 0.5)  # one version is a point in the middle, not at an edge
    ax.set_ylim(0, max(float(np.nanmax(np.r_[challenger, champion], initial=0.0)) * 1.15, 1.0))
    algos = sorted({h["algo"] for h in versions if h.get("algo")})
    subject = f"model {document.get('summary', {}).get('model', '?')}" + (f" ({', '.join(algos)})" if algos else "")
    return _label_axes(
        ax,
        f"{subject}: {len(versions)} version(s)",
        "held-out mistake rate of each version at its gate",
        "version",
        "held-out mistakes, %",
        legend=_OUTSIDE,  # (beside the axes: in their lower right it hid the newest version, a low rate)
    )
