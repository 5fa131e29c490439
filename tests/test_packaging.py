"""One import namespace: the built wheel installs only ``omkl_dist`` (the repository's ``storage/``,
``pipelines/`` and ``cluster/`` folders become ``omkl_dist.storage`` etc.), so it coexists with
other distributions that own the top-level names ``storage`` and ``pipelines`` -- here a dummy
one installed beside it in a fresh virtual environment, where the CLI ingests and runs a job on a
real two-process Dask cluster (the same model as this checkout's in-process run).

The fresh environment gets the wheel without its dependencies: it sees the test environment's
installed packages through a ``.pth`` file (after its own site-packages, so the wheel's
``omkl_dist`` is the one imported, and without running that environment's ``.pth`` files, so not
its editable checkout), and ``pip check`` confirms they satisfy the wheel's requirements --
downloading and unpacking numpy, scipy, numba, dask... again took most of this file's time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from omkl_cli import last_json, omkl_here

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL_OTHERS = ("storage", "pipelines", "cluster")


pytestmark = pytest.mark.slow  # builds a wheel; the second test installs it in a fresh environment


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


def _dummy_wheel(folder: Path) -> Path:
    """The wheel of a distribution that owns top-level ``storage`` and ``pipelines`` (as the package
    index has), written directly: building it needs a newer setuptools than a fresh environment has."""
    info = "dummy_storage_pipelines-1.0.dist-info"
    files = {f"{name}/__init__.py": f"OWNER = 'dummy-{name}'\n" for name in ("storage", "pipelines")}
    files[f"{info}/METADATA"] = "Metadata-Version: 2.1\nName: dummy-storage-pipelines\nVersion: 1.0\n"
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    wheel = folder / "dummy_storage_pipelines-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def _console_script(venv: Path, name: str) -> None:
    """The script pip writes into ``venv/bin`` for an installed distribution's console entry point."""
    (entry,) = entry_points(group="console_scripts", name=name)
    module, function = entry.value.split(":")
    script = venv / "bin" / name
    script.write_text(  # (guarded: multiprocessing's spawned children import it as their __main__)
        f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom {module} import {function}\n"
        f"if __name__ == '__main__':\n    sys.exit({function}())\n"
    )
    script.chmod(0o755)


@pytest.mark.cluster
def test_installed_wheel_coexists_with_top_level_storage_and_pipelines(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], timeout=300)
    python, omkl = venv / "bin" / "python", venv / "bin" / "omkl"
    site_packages = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    ours = [p for p in sys.path if p.endswith("site-packages")]  # the dependencies, as installed for these tests
    (site_packages / "test_dependencies.pth").write_text("\n".join(ours) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python]  # this pip, installing into the fresh environment
    _run([*pip, "install", "--quiet", "--no-deps", wheel, _dummy_wheel(tmp_path)], timeout=300)
    _run([*pip, "check"], timeout=120)  # the wheel's requirements are met
    _console_script(venv, "dask")  # (what installing dask there would write: `omkl cluster up` runs it)
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
    # the in-process reference by this checkout (its numba cache is warm; the installed copy compiles
    # its kernels from scratch, once, in the cluster's workers: its own sources, its own cache)
    report = last_json(
        omkl_here("run", "spa", "--data", work / "d", "--quiet", "--json", "--model-out", work / "local")
    )
    assert report["n"] == 6000
    # (--no-warm: the workers compile only the dense path this job takes, not every variant of SPA)
    up = _run([omkl, "cluster", "up", "--run-dir", "c", "--workers", 2, "--no-warm"], cwd=work, env=env, timeout=180)
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
