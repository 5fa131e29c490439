"""Scoring: a block of rows against the support-vector store, every kernel at once (docs/design.md).

- :mod:`.program`: a kernel pool compiled to flat arrays, and the records the compiled loops take.
- :mod:`.values`: kernel values from a pair's parts (dot product, distances): the one arithmetic of every path.
- :mod:`._pairs`: njit per-pair evaluation of all m kernels from one dot product / distance.
- :mod:`.support_vectors`: the shared support-vector store (rows + one coefficient column per kernel).
- :mod:`.rows`: rows kept dense or as CSR (wide sparse data), read alike by the njit evaluators.
- :mod:`.scan`: scoring a block against the pool (BLAS dot tiles + row loops on threads), with its tile loops in
  :mod:`._dense`, :mod:`._sparse`, :mod:`._general` and the tile layouts in :mod:`.tiles`.
- :mod:`.gram`: kernel values between the rows of one block (the engine's in-block Gram).
"""
