"""Which heavy packages importing a module pulls in (the layering rules of the design tests)."""

from __future__ import annotations

import json
import subprocess
import sys

STACK = ("dask", "zarr", "pyarrow", "distributed")


def stack_modules_imported_by(modules: str) -> list[str]:
    """The distributed-stack packages that importing ``modules`` (comma-separated) adds to those
    scikit-learn brings itself (it imports pandas when installed, and pandas imports pyarrow)."""
    code = (
        f"import json, sys; import sklearn.base, sklearn.utils.validation, sklearn.utils.multiclass; "
        f"stack = set({STACK!r}); before = {{m.split('.')[0] for m in sys.modules}} & stack; "
        f"import {modules}; "
        f"print(json.dumps(sorted(({{m.split('.')[0] for m in sys.modules}} & stack) - before)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])
