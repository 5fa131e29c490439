"""Scoring: a block of rows against the support-vector pool, every kernel at once (docs/design.md).

- :mod:`.program`: a kernel pool compiled to flat arrays the njit code can evaluate per pair.
- :mod:`._pairs`: njit per-pair evaluation of all m kernels from one dot product / distance.
- :mod:`.pool`: the shared support-vector pool (rows + one coefficient column per kernel).
- :mod:`.rows`: rows kept dense or as CSR (wide sparse data), read alike by the njit evaluators.
- :mod:`._scores`: njit fused scoring of a block against the pool (BLAS dot tiles + prange).
"""
