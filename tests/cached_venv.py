"""A virtual environment with one pinned tool (Apache Airflow, an MLflow server), cached between runs
under ``~/.cache/omkl-dist`` and made once, by one installer at a time: what the tests that run that
tool as a separate program need (tests/airflow_env.py, tests/mlflow_env.py). The tool stays out of
the project's own environment, whose dependencies it would pin or downgrade."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


def venv_dir(name: str, version: str, env_var: str) -> Path:
    """``~/.cache/omkl-dist/NAME-VERSION-pyX.Y``, or the folder ``env_var`` names."""
    python = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    return Path(os.environ.get(env_var, Path.home() / ".cache" / "omkl-dist" / f"{name}-{version}-{python}"))


def ensure(venv: Path, requirement: str, check: list[str]) -> tuple[Path | None, str]:
    """``(venv, "")`` once ``venv`` holds ``requirement`` installed and ``check`` (a command of the
    venv's ``bin/``, with arguments) runs; ``(None, why)`` when it cannot be installed here."""
    ready = venv / ".omkl-ready"
    if ready.is_file():
        return venv, ""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others find it ready
        if ready.is_file():
            return venv, ""
        shutil.rmtree(venv, ignore_errors=True)
        base = getattr(sys, "_base_executable", sys.executable)
        steps = [
            [base, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", requirement],
            [str(venv / "bin" / check[0]), *check[1:]],
        ]
        for step in steps:
            proc = subprocess.run(step, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                return None, f"`{' '.join(step[-3:])}` failed: {(proc.stderr or proc.stdout)[-1500:]}"
        ready.write_text(requirement + "\n")
    return venv, ""


@dataclass(frozen=True)
class Tool:
    """A pinned tool's cached venv: ``pip install requirement``, checked by running ``check``."""

    title: str
    name: str
    version: str
    env_var: str  # a folder to use instead of the cache
    requirement: str
    check: tuple[str, ...]

    def ensure(self) -> tuple[Path | None, str]:
        """``(the venv, "")`` once the tool works there; ``(None, why)`` when it cannot be installed."""
        return ensure(venv_dir(self.name, self.version, self.env_var), self.requirement, list(self.check))

    def main(self) -> None:
        """``python tests/NAME_env.py``: make the venv now (``make airflow-env``, ``make mlflow-env``)."""
        path, why = self.ensure()
        print(f"{self.title} {self.version} ready in {path}" if path else f"{self.title} could not be installed: {why}")
        sys.exit(0 if path else 1)
