"""Hostile sizes for the generators: a width, a row count or a density whose data cannot be made
in bounded memory (or stored at all) is refused, arithmetically, before anything is allocated."""

from __future__ import annotations

import tracemalloc

import pytest
from click.testing import CliRunner

from omkl_dist.pipelines.cli import main
from omkl_dist.storage.synth import synthesize
from omkl_dist.storage.synth_sparse import write_sparse_libsvm


def _refused_without_allocating(make, match):
    tracemalloc.start()
    with pytest.raises(ValueError, match=match):
        make()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * 2**20


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rows=10, features=10**9), "features must be an integer from 1 to 65,536"),
        (dict(rows=10**6, features=60_000), "chunk of 65,536 rows x 60,000 features"),
        (dict(rows=10**12, features=2_000, chunk_rows=64), "rows x 2,000 features .* more than the 1 TiB"),
    ],
)
def test_synth_sizes_beyond_the_bounds_are_refused_before_allocating(tmp_path, kwargs, match):
    _refused_without_allocating(lambda: synthesize(tmp_path / "s", **kwargs), match)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(rows=10, features=10**9), "features must be an integer from 1 to 33,554,432"),
        (dict(rows=10, features=10**6, density=0.5), "500,000 non-zeros per row, more than 512"),
    ],
)
def test_sparse_synth_sizes_beyond_the_bounds_are_refused_before_allocating(tmp_path, kwargs, match):
    _refused_without_allocating(lambda: write_sparse_libsvm(tmp_path / "w.svm", **kwargs), match)


def test_the_command_line_says_which_size_is_too_large(tmp_path):
    result = CliRunner().invoke(
        main, ["data", "synth", "--rows", "10", "--features", "1000000000", "--out", str(tmp_path / "s")]
    )
    assert result.exit_code == 2 and "error: features must be an integer from 1 to 65,536" in result.output
