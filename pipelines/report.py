"""Reports of retrains and runs: ``report.json`` and PNG plots (``omkl report``).

A report document holds what the plots need, so ``omkl report`` redraws them from any saved
document: a retrain's ``report.json``, a run's trace (``omkl run --trace-out``), or a store
model's history. The plots use matplotlib's object API on the Agg backend (no display, no global
pyplot state); matplotlib is the optional ``plots`` extra (``pip install 'omkl-dist[plots]'``).

Plots: ``mistakes.png`` (running mistake rate vs instances: champion vs challenger, the gate's
held-out split and the drift alarms marked), ``support.png`` (support vectors per kernel, with
SPA's expected budget or a baseline's cap), ``weights.png`` (kernel weights over time),
``speed.png`` (instances/s) and ``history.png`` (the gate metric of every version, promotions and
rollbacks).

The report is one folder (:data:`~omkl_dist.storage.outputs.REPORT`), written whole in a work
folder and swapped into place: ``report.json`` is its marker, every PNG carries omkl-dist's marker
chunk, and an existing folder is replaced only if it holds nothing else. A document read back
(:func:`load_document`) is checked against the shape the plots need first, so a truncated or
edited file is one error naming the file and the key, never a traceback from the drawing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from omkl_dist.storage.errors import DataError
from omkl_dist.storage.outputs import REPORT, REPORT_MARKER, Inputs, atomic_output, draw_png, dump_json_report

from ._report_schema import check_report_document

POINTS = 600  # curves are thinned to about this many points: a report stays small for any stream
TOP_KERNELS = 8  # the weights plot shows the kernels that ever weighed most


def _thin(x, *ys):
    x = np.asarray(x)
    keep = np.unique(np.linspace(0, len(x) - 1, min(len(x), POINTS)).astype(int)) if len(x) else np.array([], int)
    return [x[keep].tolist(), *[np.asarray(y)[keep].tolist() for y in ys]]


def _running(mistakes) -> np.ndarray:
    m = np.asarray(mistakes, dtype=np.float64)
    return np.cumsum(m) / np.arange(1, len(m) + 1)


# ------------------------------------------------------------------------------------------------ documents
def retrain_report(summary: dict, watch: dict, fit, store) -> dict:
    """The report document of one retrain (see :func:`omkl_dist.pipelines.retrain.retrain`)."""
    start, stop = summary["window"]["rows"]
    split = summary["window"]["holdout_rows"][0]
    curves = {}
    if watch["mistakes"] is not None:
        rows, rate = _thin(np.arange(start + 1, stop + 1), _running(watch["mistakes"]))
        curves["champion"] = {"rows": rows, "rate": rate, "label": f"champion v{summary['parent']} (not learning)"}
    doc = {
        "kind": "retrain",
        "summary": summary,
        "window": [start, stop],
        "split": split,
        "alarms": watch["drift"]["alarms"],
        "curves": curves,
        "history": version_history(store),
    }
    if fit is not None:
        held = np.asarray(fit["holdout"])
        trace = fit["trace"]
        if fit.get("head_mistakes") is not None:  # online: prequential on the head, then not learning on the tail
            rows = np.arange(start + 1, stop + 1)
            rate = _running(np.r_[fit["head_mistakes"], held])
        elif trace is not None:  # the same from a cluster run's coarser history (one point per coordinator call)
            n_head = split - start
            head_rows = np.asarray(trace["n_seen"], dtype=np.int64)
            head_mistakes = np.rint(np.asarray(trace["mistake_rate"]) * head_rows)
            tail = (head_mistakes[-1] if len(head_mistakes) else 0) + np.cumsum(held)
            rows = np.r_[start + head_rows, split + np.arange(1, len(held) + 1)]
            rate = np.r_[np.asarray(trace["mistake_rate"]), tail / (n_head + np.arange(1, len(held) + 1))]
        else:  # batch: the refitted model on the tail only
            rows, rate = split + np.arange(1, len(held) + 1), _running(held)
        if trace is not None:
            doc["trace"] = {
                k: trace[k]
                for k in ("n_seen", "n_support", "weights", "instances_per_second", "kernel_names")
                if k in trace
            }
            doc["n_before"] = int(fit["model"].n_samples_seen_) - int(trace["n_seen"][-1]) if trace["n_seen"] else 0
            doc["budget"] = budget_line(fit["model"])
        rows, rate = _thin(rows, rate)
        curves["challenger"] = {"rows": rows, "rate": rate, "label": "challenger (learning on the head, then not)"}
    return doc


def run_report(document: dict) -> dict:
    """The report document of ``omkl run``'s trace file (``{"report": ..., "trace": ...}``)."""
    trace, report = document["trace"], document.get("report", {})
    rows, rate = _thin(trace["n_seen"], trace["mistake_rate"])
    return {
        "kind": "run",
        "summary": report,
        "window": [0, trace["n_seen"][-1] if trace["n_seen"] else 0],
        "split": None,
        "alarms": [],
        "n_before": 0,
        "history": [],
        "curves": {"run": {"rows": rows, "rate": rate, "label": f"{report.get('algo', 'model')} (prequential)"}},
        "trace": {k: trace[k] for k in ("n_seen", "n_support", "weights", "instances_per_second", "kernel_names")},
    }


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
            }
        )
    rollbacks = [e["version"] for e in store.events() if e.get("event") == "rollback"]
    return [*out, *({"rollback_to": v} for v in rollbacks)]


def budget_line(model) -> dict | None:
    """SPA: expected support vectors per kernel α t / β after t rows; a budget baseline: its cap."""
    params = model.get_params()
    if hasattr(model, "beta_") and "alpha" in params:
        return {"slope": float(params["alpha"]) / float(model.beta_), "label": "SPA expected SVs per kernel, α t/β"}
    if params.get("budget") is not None:
        return {"cap": int(params["budget"]), "label": f"budget {params['budget']} per kernel"}
    return None


_SOURCE_FIX = "give a retrain's report.json or a trace from `omkl run --trace-out`, as written"
_MAX_DOCUMENT_BYTES = 512 * 2**20  # far above any report of ours (curves are thinned to POINTS)


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
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RuntimeError(
            "the report's plots need matplotlib: pip install 'omkl-dist[plots]', "
            "or pass --no-plots for report.json only"
        ) from None
    folder = Path(folder)
    drawers = [
        ("mistakes.png", _mistakes),
        ("support.png", _support),
        ("weights.png", _weights),
        ("speed.png", _speed),
        ("history.png", _history),
    ]
    written = []
    for name, draw in drawers:
        fig = Figure(figsize=(8, 4.5), layout="constrained")
        if draw(fig.add_subplot(), document):
            draw_png(folder / name, lambda path, fig=fig: fig.savefig(path, format="png", dpi=110))
            written.append(name)
    return written


def _title(document: dict, what: str) -> str:
    s = document.get("summary", {})
    name = s.get("model") or s.get("algo") or "model"
    version = f" v{s['version']}" if s.get("version") is not None else ""
    return f"{name}{version}: {what}"


def _mistakes(ax, document) -> bool:
    curves = document["curves"]
    if not curves:
        return False
    colors = {"champion": "tab:blue", "challenger": "tab:orange", "run": "tab:orange"}
    for key, curve in curves.items():
        ax.plot(curve["rows"], 100 * np.asarray(curve["rate"]), color=colors.get(key), label=curve["label"], lw=1.6)
    if document.get("split") is not None:
        ax.axvline(document["split"], color="0.3", ls="--", lw=1, label="gate: held-out tail from here")
    for i, row in enumerate(document.get("alarms", [])):
        ax.axvline(row, color="tab:red", lw=1, alpha=0.7, label="drift alarm (Page-Hinkley)" if i == 0 else None)
    gate = document.get("summary", {}).get("gate")
    what = "running mistake rate"
    if gate and gate.get("champion") is not None and gate.get("challenger") is not None:
        what += f" (held out: challenger {100 * gate['challenger']:.2f} %, champion {100 * gate['champion']:.2f} %)"
    return _label_axes(ax, document, what, "mistakes so far, %", legend={"fontsize": 8, "loc": "best"})


def _trace_x(document):
    trace = document.get("trace")
    if not trace or not trace.get("n_seen"):
        return None, None
    return np.asarray(trace["n_seen"]) + document["window"][0], trace


def _label_axes(ax, document, what: str, ylabel: str, *, legend: dict | None = None) -> bool:
    """Title, axis labels, grid and (``legend``: its keyword arguments) legend of a plot over instances."""
    ax.set_title(_title(document, what), fontsize=10)
    ax.set_xlabel("instance (row of the data)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if legend is not None:
        ax.legend(**legend)
    return True


def _markers(x) -> dict:
    """Dots on a curve of few points (a learner's rounds can be long), so each measurement shows."""
    return {"marker": "o", "markersize": 3} if len(x) < 40 else {}


def _support(ax, document) -> bool:
    x, trace = _trace_x(document)
    if x is None or not trace.get("n_support"):
        return False
    sv = np.asarray(trace["n_support"], dtype=float)
    names = trace["kernel_names"]
    order = np.argsort(-sv[-1])
    for k in order[:TOP_KERNELS]:
        ax.plot(x, sv[:, k], lw=1.3, label=names[k], **_markers(x))
    budget = document.get("budget")
    if budget and "slope" in budget:
        bound = budget["slope"] * (document.get("n_before", 0) + np.asarray(trace["n_seen"]))
        far = bound[-1] > sv.max() * 1.3
        ax.plot(
            x,
            bound,
            color="k",
            ls="--",
            lw=1,
            label=budget["label"] + (f" (above the plot: {bound[-1]:,.0f} at the end)" if far else ""),
        )
    elif budget and "cap" in budget:
        ax.axhline(budget["cap"], color="k", ls="--", lw=1, label=budget["label"])
    if budget:  # the axis follows the support vectors; a far-off bound is cut at the top
        ax.set_ylim(0, max(sv.max() * 1.3, budget.get("cap", 0) * 1.1, 1))
    more = f" (the {TOP_KERNELS} largest of {len(names)})" if len(names) > TOP_KERNELS else ""
    return _label_axes(
        ax,
        document,
        f"support vectors per kernel{more}",
        "support vectors",
        legend={"fontsize": 7, "ncol": 2, "loc": "upper left"},
    )


def _weights(ax, document) -> bool:
    x, trace = _trace_x(document)
    if x is None or not trace.get("weights"):
        return False
    w = np.asarray(trace["weights"], dtype=float)
    if w.ndim != 2 or w.shape[1] < 2:
        return False
    names = trace["kernel_names"]
    shown = [k for k in np.argsort(-w.max(axis=0))[:TOP_KERNELS] if w[:, k].max() > 1e-3]
    for k in shown:
        ax.plot(x, w[:, k], lw=1.3, label=names[k], **_markers(x))
    rest = len(names) - len(shown)
    ax.set_ylim(-0.02, 1.02)  # (a weight of exactly 1 would hide under the frame)
    return _label_axes(
        ax,
        document,
        "kernel weights (normalised)" + (f"; {rest} other kernel(s) never above 0.001" if rest else ""),
        "weight",
        legend={"fontsize": 7, "ncol": 2, "loc": "upper left"},
    )


def _speed(ax, document) -> bool:
    x, trace = _trace_x(document)
    if x is None or not trace.get("instances_per_second"):
        return False
    ax.plot(x, trace["instances_per_second"], color="tab:green", lw=1.4, **_markers(x))
    ax.set_ylim(bottom=0)
    return _label_axes(ax, document, "learning speed (cumulative instances / learning second)", "instances/s")


def _history(ax, document) -> bool:
    versions = [h for h in document.get("history", []) if "version" in h]
    if not versions:
        return False
    v = np.array([h["version"] for h in versions])
    challenger = np.array([np.nan if h["challenger"] is None else 100 * h["challenger"] for h in versions])
    champion = np.array([np.nan if h["champion"] is None else 100 * h["champion"] for h in versions])
    promoted = np.array([h["promoted"] for h in versions])
    ax.plot(v, challenger, color="0.6", lw=1)
    ax.scatter(v[promoted], challenger[promoted], color="tab:green", zorder=3, s=40, label="version (promoted)")
    ax.scatter(
        v[~promoted],
        challenger[~promoted],
        color="tab:red",
        marker="x",
        zorder=3,
        s=40,
        label="version (kept out by the gate)",
    )
    ax.scatter(v, champion, color="tab:blue", marker="_", s=160, zorder=2, label="its champion, same held-out rows")
    for i, h in enumerate(h for h in document["history"] if "rollback_to" in h):
        ax.axvline(h["rollback_to"], color="tab:purple", ls=":", label="rolled back to" if i == 0 else None)
    ax.set_xticks(v)
    ax.set_title(_title(document, "versions: held-out mistake rate at their gate"), fontsize=10)
    ax.set_xlabel("version")
    ax.set_ylabel("held-out mistakes, %")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return True
