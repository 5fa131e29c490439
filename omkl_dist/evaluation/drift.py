"""Page-Hinkley drift detection on a stream of mistakes (0/1) or losses.

The test (Page 1954; the form of Gama et al., "Learning with drift detection", 2004) watches for an
*increase* of the stream's mean: with x̄_t the running mean of x_1..x_t,

    m_t = Σ_{i≤t} (x_i − x̄_i − δ),   M_t = min_{i≤t} m_i,   alarm when m_t − M_t > λ

and only once ``min_instances`` values have been seen since the last alarm. Given a ``reference``
mean (a model's mistake rate when it was validated), x̄_i is that fixed value instead of the running
mean (Page's original CUSUM with a known mean before the change): a window that is worse than the
reference from its first row is then signalled too, which the running mean cannot see. After an alarm the
test starts again from the next value (the model is expected to adapt, or to be retrained). δ is
the magnitude of change tolerated (a mean that rises by less is not drift); λ trades detection
delay for false alarms: a rise of the mistake rate by r is signalled after about λ / (r − δ) rows.
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
    """Page-Hinkley test for an increase in the mean of a stream.

    Parameters
    ----------
    delta : float, default 0.005
        Rise of the mean tolerated without an alarm.
    threshold : float, default 50.0
        λ: the accumulated excess that raises an alarm.
    min_instances : int, default 30
        Values needed (since the start or the last alarm) before an alarm may be raised.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mistakes = np.r_[rng.random(2000) < 0.05, rng.random(2000) < 0.30].astype(float)
    >>> alarms = PageHinkley().alarms(mistakes)
    >>> len(alarms) >= 1 and 2000 < int(alarms[0]) < 2400
    True
    """

    def __init__(self, delta: float = 0.005, threshold: float = 50.0, min_instances: int = 30):
        self.delta = delta
        self.threshold = threshold
        self.min_instances = min_instances

    def alarms(self, values, reference: float | None = None) -> np.ndarray:
        """Positions (0-based) in ``values`` at which drift was signalled; ``reference``: the mean
        expected before any change (None: the running mean)."""
        self.check()
        x = np.ascontiguousarray(values, dtype=np.float64)
        if x.ndim != 1 or not np.isfinite(x).all():
            raise ValueError("PageHinkley: values must be a 1-D array of finite numbers (e.g. 0/1 mistakes)")
        if reference is not None and not np.isfinite(reference):
            raise ValueError(f"PageHinkley: reference must be a finite mean or None, got {reference!r}")
        return _page_hinkley(
            x,
            float(self.delta),
            float(self.threshold),
            int(self.min_instances),
            np.nan if reference is None else float(reference),
        )

    def check(self) -> "PageHinkley":
        """Raise a ValueError naming a parameter out of its range; returns the detector."""
        if not (np.isfinite(self.delta) and self.delta >= 0):
            raise ValueError(f"PageHinkley: delta must be a finite number >= 0, got {self.delta!r}")
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"PageHinkley: threshold must be a finite number > 0, got {self.threshold!r}")
        if int(self.min_instances) != self.min_instances or self.min_instances < 1:
            raise ValueError(f"PageHinkley: min_instances must be an integer >= 1, got {self.min_instances!r}")
        return self

    def to_dict(self) -> dict:
        return {
            "test": "page-hinkley",
            "delta": self.delta,
            "threshold": self.threshold,
            "min_instances": self.min_instances,
        }
