"""Page-Hinkley drift detection on a stream of mistakes (0/1) or losses.

The test (Page 1954; the form of Gama et al., "Learning with drift detection", 2004) watches for an
*increase* of the stream's mean: with x̄_t the running mean of x_1..x_t,

    m_t = Σ_{i≤t} (x_i − x̄_i − δ),   M_t = min_{i≤t} m_i,   alarm when m_t − M_t > λ

and only once ``min_instances`` values have been seen since the last alarm. Given a ``reference``
mean (a model's mistake rate when it was validated), x̄_i is that fixed value instead of the running
mean (Page's original CUSUM with a known mean before the change): a window that is worse than the
reference from its first row is then signalled too, which the running mean cannot see. After an alarm the
test starts again from the next value (the model is expected to adapt, or to be retrained).

δ (the rise tolerated) and λ (the excess that alarms) are given in standard deviations σ of one
value before the change -- for 0/1 mistakes at a rate p, σ = √(p(1 − p)) -- so one setting holds at
a mistake rate of 1 % and of 30 %: with raw constants (the literature's δ = 0.005, λ = 50, river's
defaults too) a high-rate stream raises alarms by chance and a low-rate one is watched with a
tolerance of half its own rate. On a stream without change the statistic m_t − M_t is a random walk
drifting down by δ per value (in σ), and Siegmund's approximation gives the mean run length to a
false alarm as about e^{2δ(λ + 1.17)} / (2δ²) values; a rise of the mean by r (in σ) is signalled
after about λ / (r − δ) values. A reference estimated from n values is itself off by about σ/√n: it
is raised by ``confidence`` such standard errors, so that a model validated on a lucky sample is not
taken for a model that got worse. The defaults (δ = 0.025 σ, λ = 150 σ, 3 standard errors) come from
``benchmarks/drift_defaults.py`` (``benchmarks/results/drift-defaults.json``; BENCHMARKS.md).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _page_hinkley(x, delta, threshold, min_instances, reference):
    alarms = np.empty(len(x), dtype=np.int64)
    n_alarms = 0
    n, mean, cumulative, minimum = 0, 0.0, 0.0, 0.0
    for t in range(len(x)):
        n += 1
        mean += (x[t] - mean) / n
        cumulative += x[t] - (mean if np.isnan(reference) else reference) - delta
        if cumulative < minimum:
            minimum = cumulative
        if n >= min_instances and cumulative - minimum > threshold:
            alarms[n_alarms] = t
            n_alarms += 1
            n, mean, cumulative, minimum = 0, 0.0, 0.0, 0.0
    return alarms[:n_alarms]


class PageHinkley:
    """Page-Hinkley test for an increase in the mean of a stream, in units of its standard deviation.

    Parameters
    ----------
    delta : float, default 0.025
        δ: rise of the mean tolerated without an alarm, in standard deviations of one value.
    threshold : float, default 150.0
        λ: the accumulated excess that raises an alarm, in standard deviations of one value.
    min_instances : int, default 30
        Values needed (since the start or the last alarm) before an alarm may be raised.
    confidence : float, default 3.0
        Standard errors by which a reference mean estimated from ``reference_rows`` values is raised.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mistakes = np.r_[rng.random(2000) < 0.05, rng.random(2000) < 0.30].astype(float)
    >>> alarms = PageHinkley().alarms(mistakes, reference=0.05, reference_rows=2000)
    >>> len(alarms) >= 1 and 2000 < int(alarms[0]) < 2400
    True
    """

    def __init__(
        self, delta: float = 0.025, threshold: float = 150.0, min_instances: int = 30, confidence: float = 3.0
    ):
        self.delta = delta
        self.threshold = threshold
        self.min_instances = min_instances
        self.confidence = confidence

    def calibrate(self, values, reference: float | None = None, reference_rows: int | None = None, scale=None) -> dict:
        """The test in the units of ``values``: their ``scale`` (σ), the ``reference`` mean used
        (raised by ``confidence`` standard errors when ``reference_rows`` is given) and the raw
        ``delta`` and ``threshold``.

        Parameters
        ----------
        values : array_like, shape (n,)
            The stream: 0/1 mistakes or losses.
        reference : float, optional
            The mean expected before any change (None: the running mean).
        reference_rows : int, optional
            How many values ``reference`` was estimated from (None: it is exact).
        scale : float, optional
            σ of one value before a change. None: √(m(1 − m)) for 0/1 values, m the reference or
            else the values' mean (at least 1 / (1 + the values it is estimated from), so that a model
            that made no mistakes is not watched with σ = 0); the values' standard deviation for
            other values (1 if they are constant).
        """
        self.check()
        x = _checked(values)
        if reference is not None and not np.isfinite(reference):
            raise ValueError(f"PageHinkley: reference must be a finite mean or None, got {reference!r}")
        if reference_rows is not None and (
            reference is None or int(reference_rows) != reference_rows or reference_rows < 1
        ):
            raise ValueError(
                f"PageHinkley: reference_rows must be an integer >= 1 given with a reference, got {reference_rows!r}"
            )
        if scale is None:
            scale = _scale(x, reference, reference_rows)
        elif not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"PageHinkley: scale must be a finite number > 0 or None, got {scale!r}")
        if reference is not None and reference_rows is not None:
            reference = reference + self.confidence * scale / np.sqrt(reference_rows)
        return {
            "scale": float(scale),
            "reference": None if reference is None else float(reference),
            "delta": float(self.delta * scale),
            "threshold": float(self.threshold * scale),
        }

    def alarms(self, values, reference: float | None = None, reference_rows: int | None = None, scale=None):
        """Positions (0-based) in ``values`` at which drift was signalled (the arguments of
        :meth:`calibrate`)."""
        raw = self.calibrate(values, reference, reference_rows, scale)
        return _page_hinkley(
            _checked(values),
            raw["delta"],
            raw["threshold"],
            int(self.min_instances),
            np.nan if raw["reference"] is None else raw["reference"],
        )

    def check(self) -> "PageHinkley":
        """Raise a ValueError naming a parameter out of its range; returns the detector."""
        if not (np.isfinite(self.delta) and self.delta >= 0):
            raise ValueError(f"PageHinkley: delta must be a finite number >= 0, got {self.delta!r}")
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"PageHinkley: threshold must be a finite number > 0, got {self.threshold!r}")
        if int(self.min_instances) != self.min_instances or self.min_instances < 1:
            raise ValueError(f"PageHinkley: min_instances must be an integer >= 1, got {self.min_instances!r}")
        if not (np.isfinite(self.confidence) and self.confidence >= 0):
            raise ValueError(f"PageHinkley: confidence must be a finite number >= 0, got {self.confidence!r}")
        return self

    def to_dict(self) -> dict:
        return {
            "test": "page-hinkley",
            "units": "standard deviations of one value",
            "delta": self.delta,
            "threshold": self.threshold,
            "min_instances": self.min_instances,
            "confidence": self.confidence,
        }


def _checked(values) -> np.ndarray:
    x = np.ascontiguousarray(values, dtype=np.float64)
    if x.ndim != 1 or not np.isfinite(x).all():
        raise ValueError("PageHinkley: values must be a 1-D array of finite numbers (e.g. 0/1 mistakes)")
    return x


def _scale(x: np.ndarray, reference: float | None, reference_rows: int | None) -> float:
    """σ of one value before a change (see :meth:`PageHinkley.calibrate`)."""
    if len(x) and np.isin(x, (0.0, 1.0)).all():
        rate = x.mean() if reference is None else reference
        floor = 1.0 / ((reference_rows or len(x)) + 1)
        rate = min(max(rate, floor), 1.0 - floor)
        return float(np.sqrt(rate * (1.0 - rate)))
    spread = float(x.std()) if len(x) else 0.0
    return spread if spread > 0 else 1.0
