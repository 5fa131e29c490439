"""Random feature draws fixed at a model's start: per-(seed, kernel) gaussian projections.

FOGD's random Fourier features (Rahimi & Recht 2007) need, for kernel k, a projection matrix drawn
once: ``D`` directions ``u_i ~ N(0, σ_k^{-2} I)``. They come from numpy's
``default_rng([seed, kernel, FEATURE_STREAM]).standard_normal((D, d))`` scaled by ``1/σ_k``: a shard
owning kernel k, a resumed job (which saves no projection: it regenerates it) and a naive reference
all draw the same matrix, bit for bit, from (seed, kernel id) alone. ``FEATURE_STREAM`` keeps these
keys apart from the per-(seed, block, kernel) uniform streams (a three-word key and the same key
with a zero fourth word are the same ``SeedSequence``, hence a non-zero tag).
"""

from __future__ import annotations

import numpy as np

FEATURE_STREAM = 0x52464631  # "RFF1"


def gaussian_projection(seed: int, kernel: int, n_components: int, n_features: int, sigma: float) -> np.ndarray:
    """Kernel ``kernel``'s ``n_components`` random Fourier directions for the gaussian kernel of width
    ``sigma`` (``exp(−‖x−y‖²/(2σ²))``), one per row: ``(n_components, n_features)``, C-contiguous.

    >>> a = gaussian_projection(0, 3, 4, 2, 0.5)
    >>> a.shape, bool((a == gaussian_projection(0, 3, 4, 2, 0.5)).all())
    ((4, 2), True)
    """
    rng = np.random.default_rng([int(seed), int(kernel), FEATURE_STREAM])
    return np.ascontiguousarray(rng.standard_normal((int(n_components), int(n_features))) / float(sigma))
