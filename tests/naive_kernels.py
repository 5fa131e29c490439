"""Naive reference kernels for the tests: a plain double loop over pairs, straight from the
formulas, with exactly rounded sums (``math.fsum``) so the reference is as accurate as float64
allows. Deliberately independent of ``omkl_dist.kernels`` except for reading a spec's kind and
parameter in :func:`naive_kernel`."""

from __future__ import annotations

import math

import numpy as np


def _pairwise(A, B, kappa) -> np.ndarray:
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    K = np.empty((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            K[i, j] = kappa(A[i].tolist(), B[j].tolist())
    return K


def dot(x, y) -> float:
    return math.fsum(a * b for a, b in zip(x, y, strict=True))


def sqdist(x, y) -> float:
    return math.fsum((a - b) ** 2 for a, b in zip(x, y, strict=True))


def l1dist(x, y) -> float:
    return math.fsum(abs(a - b) for a, b in zip(x, y, strict=True))


def chi2sum(x, y) -> float:
    return math.fsum((a - b) ** 2 / (a + b) for a, b in zip(x, y, strict=True) if a + b != 0)


def achi2sum(x, y) -> float:
    return math.fsum(2.0 * a * b / (a + b) for a, b in zip(x, y, strict=True) if a + b != 0)


def linear(A, B):
    return _pairwise(A, B, dot)


def polynomial(A, B, p: int):
    return _pairwise(A, B, lambda x, y: dot(x, y) ** p)


def gaussian(A, B, sigma: float):
    return _pairwise(A, B, lambda x, y: math.exp(-sqdist(x, y) / (2.0 * sigma**2)))


def laplacian(A, B, sigma: float):
    return _pairwise(A, B, lambda x, y: math.exp(-l1dist(x, y) / sigma))


def chi2(A, B, gamma: float):
    if (np.asarray(A) < 0).any() or (np.asarray(B) < 0).any():
        raise ValueError("chi2 needs non-negative input")
    return _pairwise(A, B, lambda x, y: math.exp(-gamma * chi2sum(x, y)))


def achi2(A, B):
    if (np.asarray(A) < 0).any() or (np.asarray(B) < 0).any():
        raise ValueError("achi2 needs non-negative input")
    return _pairwise(A, B, achi2sum)


def naive_kernel(spec, A, B) -> np.ndarray:
    """Reference matrix for one spec (reads only ``spec.kind``, its parameter, its columns and
    whether it is normalised: κ(a, b) / sqrt(κ(a, a) κ(b, b)), 0 where a self-value is 0)."""
    if getattr(spec, "normalize", False):
        raw = spec.normalized(False)
        K = naive_kernel(raw, A, B)
        da = np.array([naive_kernel(raw, a[None, :], a[None, :])[0, 0] for a in np.asarray(A, dtype=float)])
        db = np.array([naive_kernel(raw, b[None, :], b[None, :])[0, 0] for b in np.asarray(B, dtype=float)])
        denom = np.sqrt(np.outer(da, db))
        return np.where(denom > 0, K / np.where(denom > 0, denom, 1.0), 0.0)
    if spec.columns is not None:
        cols = list(spec.columns)
        A, B = np.asarray(A, dtype=float)[:, cols], np.asarray(B, dtype=float)[:, cols]
    if spec.kind == "achi2":
        return achi2(A, B)
    if spec.kind == "linear":
        return linear(A, B)
    if spec.kind == "polynomial":
        return polynomial(A, B, spec.p)
    if spec.kind == "gaussian":
        return gaussian(A, B, spec.sigma)
    if spec.kind == "laplacian":
        return laplacian(A, B, spec.sigma)
    if spec.kind == "chi2":
        return chi2(A, B, spec.gamma)
    raise ValueError(f"no naive reference for {spec.kind}")


def naive_pool(pool, A, B) -> np.ndarray:
    return np.stack([naive_kernel(spec, A, B) for spec in pool])
