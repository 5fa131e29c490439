"""Kernel Perceptron (Rosenblatt; Freund & Schapire): on a mistake ``y f(x) <= 0`` add ``y κ(x, ·)``."""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def perceptron_mistake(y, f):
    """z = I(y f(x) <= 0): a zero score is a mistake (the classifier has no opinion)."""
    return y * f <= 0.0


@njit(cache=True, inline="always")
def perceptron_coef(y, mistaken, selected):
    """Coefficient of x_t in the kernel classifier: y if it erred and was selected for update."""
    return y if (mistaken and selected) else 0.0
