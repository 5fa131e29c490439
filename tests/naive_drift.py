"""Naive Page-Hinkley test, one value at a time, straight from the definition (Gama et al. 2004):
m_t = Σ (x_i − x̄_i − δ), M_t = min m_i, alarm when m_t − M_t > λ after min_instances values;
everything restarts after an alarm. With a known ``reference`` mean, x̄_i is that value."""

from __future__ import annotations


def page_hinkley_alarms(values, delta, threshold, min_instances, reference=None):
    alarms = []
    seen = []
    m, lowest = 0.0, 0.0
    for t, x in enumerate(values):
        seen.append(float(x))
        mean = sum(seen) / len(seen) if reference is None else reference
        m += float(x) - mean - delta
        lowest = min(lowest, m)
        if len(seen) >= min_instances and m - lowest > threshold:
            alarms.append(t)
            seen, m, lowest = [], 0.0, 0.0
    return alarms
