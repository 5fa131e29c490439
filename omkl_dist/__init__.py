"""omkl-dist: online multiple kernel learning, in-process and on Dask."""

from ._numba_cache import use_versioned_cache

use_versioned_cache()  # before any njit kernel is defined (see _numba_cache)
