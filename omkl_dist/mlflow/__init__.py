"""MLflow for omkl-dist: runs tracked, store versions registered, a ``python_function`` flavor.

Optional: ``pip install 'omkl-dist[mlflow]'`` (the ``mlflow-skinny`` client). Nothing here imports
mlflow until it is used, so the core install stays light.
"""

from __future__ import annotations

from .pyfunc import log_model

__all__ = ["log_model"]
