"""The examples in the documentation run: every public estimator's docstring example (river's
habit: a short runnable example per estimator) and the README's Python blocks, the latter on a
small generated dataset and an in-process cluster standing in for the README's paths and address."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import omkl_dist

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("name", omkl_dist.__all__)
def test_every_public_estimator_has_a_running_example(name):
    cls = getattr(omkl_dist, name)
    tests = doctest.DocTestFinder(recurse=False).find(cls, name, globs={name: cls})
    assert sum(len(t.examples) for t in tests) >= 3, f"{name}'s docstring has no runnable example"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, name


def readme_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def codrna_like(tmp_path_factory):
    """A small stand-in for the README's data/codrna (8 features, two classes)."""
    from omkl_dist.storage.synth import synthesize

    out = tmp_path_factory.mktemp("readme") / "codrna"
    synthesize(out, rows=3000, features=8, seed=1)
    return out


@pytest.mark.cluster
def test_the_readmes_python_blocks_run(codrna_like, tmp_path, monkeypatch):
    from distributed import LocalCluster

    blocks = readme_blocks()
    assert len(blocks) >= 3 and all("data/codrna" in b or "mfeat" in b for b in blocks)
    monkeypatch.chdir(tmp_path)
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
    ) as cluster:
        for block in blocks:
            code = block.replace('"data/codrna"', repr(str(codrna_like)))
            code = code.replace('"tcp://127.0.0.1:8786"', repr(cluster.scheduler_address))
            exec(compile(code, str(README), "exec"), {"__name__": "readme"})  # noqa: S102 - our own README
    assert (tmp_path / "models" / "omkc").is_dir()
