"""One import namespace: the built wheel installs only ``omkl_dist`` (the repository's ``storage/``,
``pipelines/`` and ``cluster/`` folders become ``omkl_dist.storage`` etc.), so it coexists with
other distributions that own the top-level names ``storage`` and ``pipelines`` -- here a dummy
one installed beside it in a fresh virtual environment, where the CLI ingests, learns and runs a
job on a real two-process Dask cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL_OTHERS = ("storage", "pipelines", "cluster")


pytestmark = pytest.mark.slow  # builds a wheel; the second test installs it with its dependencies


def _run(cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", out, ROOT], timeout=600)
    return next(out.glob("omkl_dist-*.whl"))


def test_wheel_holds_only_the_omkl_dist_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"omkl_dist", wheel.name.split("-py")[0] + ".dist-info"}, sorted(tops)
    for sub in TOP_LEVEL_OTHERS:  # the folders are inside the namespace, with their data files
        assert f"omkl_dist/{sub}/__init__.py" in names
    assert "omkl_dist/cluster/dask.yaml" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "omkl = omkl_dist.pipelines.entry:main" in entry_points


def _dummy_distribution(path: Path) -> Path:
    """A distribution that owns top-level ``storage`` and ``pipelines`` (as the package index has)."""
    for name in ("storage", "pipelines"):
        (path / name).mkdir(parents=True)
        (path / name / "__init__.py").write_text(f"OWNER = 'dummy-{name}'\n")
    (path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "dummy-storage-pipelines"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["storage", "pipelines"]\n'
    )
    return path


@pytest.mark.cluster
def test_installed_wheel_coexists_with_top_level_storage_and_pipelines(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], timeout=300)
    python, omkl = venv / "bin" / "python", venv / "bin" / "omkl"
    _run([python, "-m", "pip", "install", "--quiet", wheel], timeout=900)  # with its dependencies
    _run([python, "-m", "pip", "install", "--quiet", _dummy_distribution(tmp_path / "dummy")], timeout=300)
    work = tmp_path / "work"  # away from the checkout: nothing of the repository is on sys.path
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    check = (
        "import storage, pipelines, omkl_dist.storage, omkl_dist.pipelines.cli, omkl_dist.cluster.local; "
        "assert storage.OWNER == 'dummy-storage' and pipelines.OWNER == 'dummy-pipelines'; "
        "import importlib.util as u; assert u.find_spec('cluster') is None; "
        "print(omkl_dist.storage.__file__)"
    )
    where = _run([python, "-c", check], cwd=work, env=env).stdout.strip()
    assert where.startswith(str(venv)) and "site-packages/omkl_dist/storage" in where
    _run([omkl, "data", "synth", "--rows", 6000, "--features", 4, "--out", "d"], cwd=work, env=env)
    report = json.loads(
        _run(
            [omkl, "run", "spa", "--data", "d", "--quiet", "--json", "--model-out", "local"],
            cwd=work,
            env=env,
        ).stdout.splitlines()[-1]
    )
    assert report["n"] == 6000
    up = _run([omkl, "cluster", "up", "--run-dir", "c", "--workers", 2], cwd=work, env=env, timeout=180)
    try:
        address = next(line.split()[1] for line in up.stdout.splitlines() if line.startswith("scheduler"))
        job = _run(
            [
                omkl,
                "submit",
                "spa",
                "--scheduler",
                address,
                "--data",
                "d",
                "--out",
                "m",
                "--block-size",
                256,
                "--quiet",
                "--json",
            ],
            cwd=work,
            env=env,
            timeout=300,
        )
        submitted = json.loads(job.stdout.splitlines()[-1])
    finally:
        _run([omkl, "cluster", "down", "--run-dir", "c"], cwd=work, env=env, timeout=120)
    assert submitted["n"] == 6000 and submitted["workers"] == 2
    assert submitted["mistakes"] == report["mistakes"]  # the same job in-process and on the cluster
