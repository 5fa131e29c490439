"""``/metrics`` in Prometheus' text format (version 0.0.4), written here (no client library needed):
requests and latency histograms per endpoint, and the model's gauges (rows learnt, the running
mistake rate, support vectors, the model version)."""

from __future__ import annotations

import math
import threading
from collections import defaultdict

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: latency buckets (seconds): a single-row predict is ~1 ms, a 100,000-row batch seconds
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class RequestMetrics:
    """Request counts by (endpoint, status) and a latency histogram per endpoint; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, int], int] = defaultdict(int)
        self._buckets: dict[str, list[int]] = {}
        self._sums: dict[str, float] = defaultdict(float)
        self._rows: dict[str, int] = defaultdict(int)

    def observe(self, endpoint: str, status: int, seconds: float, rows: int = 0) -> None:
        with self._lock:
            self._counts[endpoint, status] += 1
            buckets = self._buckets.setdefault(endpoint, [0] * (len(BUCKETS) + 1))
            for k, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    buckets[k] += 1
            buckets[-1] += 1  # +Inf
            self._sums[endpoint] += seconds
            self._rows[endpoint] += rows

    def render(self, gauges: dict[str, tuple[str, float | None]]) -> str:
        """The text exposition: these counters and histograms, then ``gauges`` (name -> (help, value);
        a None value is left out)."""
        lines = [
            "# HELP omkl_requests_total HTTP requests answered, by endpoint and status.",
            "# TYPE omkl_requests_total counter",
        ]
        with self._lock:
            counts, buckets = dict(self._counts), {k: list(v) for k, v in self._buckets.items()}
            sums, rows = dict(self._sums), dict(self._rows)
        for (endpoint, status), n in sorted(counts.items()):
            lines.append(f'omkl_requests_total{{endpoint="{_label(endpoint)}",status="{status}"}} {n}')
        lines += [
            "# HELP omkl_request_seconds Time to answer a request, by endpoint.",
            "# TYPE omkl_request_seconds histogram",
        ]
        for endpoint, counts_le in sorted(buckets.items()):
            name = _label(endpoint)
            for bound, n in zip([*map(_number, BUCKETS), "+Inf"], counts_le, strict=True):
                lines.append(f'omkl_request_seconds_bucket{{endpoint="{name}",le="{bound}"}} {n}')
            lines.append(f'omkl_request_seconds_sum{{endpoint="{name}"}} {_number(sums[endpoint])}')
            lines.append(f'omkl_request_seconds_count{{endpoint="{name}"}} {counts_le[-1]}')
        lines += [
            "# HELP omkl_rows_total Rows received in accepted requests, by endpoint.",
            "# TYPE omkl_rows_total counter",
        ]
        for endpoint, n in sorted(rows.items()):
            lines.append(f'omkl_rows_total{{endpoint="{_label(endpoint)}"}} {n}')
        for name, (help_text, value) in gauges.items():
            if value is not None:
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {_number(value)}"]
        return "\n".join(lines) + "\n"
