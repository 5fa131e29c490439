"""``make bench-cxx``'s machinery (benchmarks/bench_cxx.py) without the C++ toolbox: the LIBSVM file it
writes holds the benches' permuted rows, and a toolbox's run is called with its ``-opt`` name and
parameters and read back (a stand-in program prints what the toolbox prints)."""

import stat

import numpy as np
import pytest

from benchmarks.bench_budget import FILES
from benchmarks.bench_cxx import CXX_PARAMS, cxx_name, run_cxx, write_libsvm


def test_the_libsvm_file_holds_the_benches_rows_in_their_order(data_dir, tmp_path):
    from omkl_dist.storage import read_dataset

    path = tmp_path / "a9a.libsvm"
    assert write_libsvm("a9a", path) == 32561
    ds = read_dataset(data_dir / FILES["a9a"])
    X = np.asarray(ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X, dtype=np.float64)
    y = np.asarray(ds.y)
    order = np.random.default_rng(0).permutation(len(X))
    lines = path.read_text().splitlines()
    assert len(lines) == len(X)
    for i in (0, 1, 17, len(X) - 1):  # (row i of the file: row order[i] of the data set)
        label, *pairs = lines[i].split()
        assert label == ("+1" if y[order[i]] == y.max() else "-1")
        row = np.zeros(X.shape[1])
        indices = [int(p.split(":")[0]) for p in pairs]
        assert indices == sorted(indices) and min(indices) >= 1
        for p in pairs:
            j, v = p.split(":")
            row[int(j) - 1] = float(v)
        assert np.array_equal(row, X[order[i]])


def _stand_in(tmp_path, printed: str):
    """A program that records its arguments and prints ``printed``, as the toolbox's binary."""
    program = tmp_path / "omkl_cxx"
    program.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "args"}\nprintf "{printed}"\n')
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return program


def test_a_toolbox_run_is_called_with_its_names_and_parameters_and_read_back(tmp_path):
    program = _stand_in(tmp_path, "#SV: 1600\\nLearn errRate: 0.19170173\\nLearning time: 3.43 s\\n")
    out = run_cxx(program, "kernel-bpas-sd", tmp_path / "a9a.libsvm")
    assert out["seconds"] == 3.43 and out["mistake_rate"] == 0.19170173 and out["cpu_seconds"] >= 0.0
    args = (tmp_path / "args").read_text().split()
    assert args[:4] == ["-i", str(tmp_path / "a9a.libsvm"), "-opt", "kernel-bpas_sd"]
    assert args[4:] == CXX_PARAMS
    assert cxx_name("kernel-fogd") == "kernel-fogd"


def test_a_toolbox_run_that_prints_no_result_is_an_error_naming_the_learner(tmp_path):
    program = _stand_in(tmp_path, "ERROR: unrecgonized optimization method\\n")
    with pytest.raises(RuntimeError, match="kernel-nogd"):
        run_cxx(program, "kernel-nogd", tmp_path / "a9a.libsvm")
