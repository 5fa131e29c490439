"""numba's cache directory is named after the package's sources (see ``omkl_dist._numba_cache``):
a kernel that inlines a helper from another module cannot be loaded stale after that module
changes."""

from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from numba.core import types
from numba.core.dispatcher import Dispatcher

from omkl_dist import _numba_cache
from omkl_dist.algorithms import OKS, SPA, Forgetron
from omkl_dist.scoring import scan as _scores


def test_kernels_are_cached_under_the_sources_digest():
    name = f"numba-{_numba_cache.sources_digest()}"
    assert Path(os.environ["NUMBA_CACHE_DIR"]).name == name
    assert name in Path(_scores._accumulate_sparse_direct._cache._cache_path).parts


def test_digest_changes_when_an_inlined_helper_changes(tmp_path, monkeypatch):
    copy = tmp_path / "omkl_dist"
    shutil.copytree(_numba_cache.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_numba_cache, "ROOT", copy)
    before = _numba_cache.sources_digest()
    assert before == _numba_cache.sources_digest()  # deterministic
    helper = copy / "scoring" / "_vexp.py"
    helper.write_text(helper.read_text() + "\n# changed\n")
    assert _numba_cache.sources_digest() != before


def test_worker_processes_use_the_same_directory():
    """A child process inherits the directory and does not nest another one inside it."""
    code = "import omkl_dist, numba; print(numba.config.CACHE_DIR)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ.copy()
    ).stdout.strip()
    assert out == os.environ["NUMBA_CACHE_DIR"]


# ------------------------------------------------------------------------------ a read-only install
def _read_only_install(tmp_path: Path) -> Path:
    """A package folder whose __pycache__ cannot be written, even by root: it is a file."""
    root = tmp_path / "site-packages" / "omkl_dist"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "__pycache__").write_text("not a folder")
    return root


def test_a_package_folder_that_cannot_be_written_falls_back_to_the_user_cache(tmp_path, monkeypatch):
    import numba

    monkeypatch.setattr(_numba_cache, "ROOT", _read_only_install(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    chosen = Path(_numba_cache.use_versioned_cache())
    assert chosen == tmp_path / "xdg" / "omkl-dist" / f"numba-{_numba_cache.sources_digest()}"
    assert chosen.is_dir() and os.environ["NUMBA_CACHE_DIR"] == str(chosen)


def test_without_a_writable_home_the_cache_goes_to_a_private_temp_folder(tmp_path, monkeypatch):
    (tmp_path / "home-is-a-file").write_text("")
    monkeypatch.setattr(_numba_cache, "ROOT", _read_only_install(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-is-a-file" / ".cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    chosen = _numba_cache.choose_cache_dir(_numba_cache.cache_dir_candidates("numba-x"))
    assert chosen == tmp_path / "tmp" / f"omkl-dist-{os.getuid()}" / "numba-x"
    assert (chosen.parent.stat().st_mode & 0o777) == 0o700


def test_a_temp_folder_others_can_write_is_not_trusted(tmp_path, monkeypatch):
    """numba's cache files are pickles: a folder another user can write to is never used."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"omkl-dist-{os.getuid()}"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    assert _numba_cache._private_temp_dir() is None
    planted.rmdir()
    planted.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    assert _numba_cache._private_temp_dir() is None


def test_the_caches_of_old_sources_are_pruned_when_new_sources_first_run(tmp_path):
    """An edit or an upgrade in place makes a new numba-<hash> folder: the 3 changed last are kept,
    older ones deleted -- never a folder that holds other files, nor one a process is saving to."""
    import fcntl

    def cache(name, age, extra=()):
        folder = tmp_path / name
        inner = folder / f"learners_{'ab' * 20}"  # numba's folder per source folder
        inner.mkdir(parents=True)
        for f in ("scan.f-12.py311.nbi", "scan.f-12.py311.1.nbc"):
            (inner / f).write_bytes(b"x")
        for f in (_numba_cache.SAVE_LOCK, "omkl-warmup-done", "compiled-ahead-spa", *extra):
            (folder / f).write_bytes(b"x")
        os.utime(folder, (1e9 + age, 1e9 + age))
        return folder

    old = [cache(f"numba-{i:016x}", age=i) for i in range(6)]  # numba-...5 changed last
    foreign = cache("numba-00000000000000ff", age=-1, extra=("notes.txt",))
    other_name = cache("numba-cache", age=-2)
    busy = cache("numba-00000000000000fe", age=-3)
    current = tmp_path / "numba-0123456789abcdef"
    current.mkdir()
    with open(busy / _numba_cache.SAVE_LOCK, "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a process saving to it
        removed = _numba_cache.prune_other_caches(current)
    assert sorted(removed) == old[:3]
    assert all(f.exists() for f in [*old[3:], foreign, other_name, busy, current])


def test_a_new_cache_folder_prunes_the_old_ones_once(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    olds = []
    for i in range(5):
        folder = tmp_path / f"numba-{i:016x}"
        folder.mkdir()
        (folder / "k.nbi").write_bytes(b"x")
        os.utime(folder, (1e9 + i, 1e9 + i))
        olds.append(folder)
    code = "import omkl_dist, os; print(os.environ['NUMBA_CACHE_DIR'])"
    used = Path(
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()
    )
    assert used.parent == tmp_path and (used / _numba_cache.FIRST_USE).exists()
    assert [f.exists() for f in olds] == [False, False, True, True, True]


def test_the_package_folder_stays_first_when_writable(tmp_path, monkeypatch):
    monkeypatch.setattr(_numba_cache, "ROOT", tmp_path / "pkg")
    chosen = _numba_cache.choose_cache_dir(_numba_cache.cache_dir_candidates("numba-x"))
    assert chosen == tmp_path / "pkg" / "__pycache__" / "numba-x"


def test_another_user_can_run_a_kernel(tmp_path):
    """A real run as `nobody` of a package installed by root: kernels compile and cache."""
    runner = shutil.which("runuser") or shutil.which("setpriv")
    if os.getuid() != 0 or runner is None:
        pytest.skip("needs root and runuser or setpriv to run a process as nobody")
    as_nobody = (
        [runner, "-u", "nobody", "--"]
        if runner.endswith("runuser")
        else [runner, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    )
    probe = subprocess.run([*as_nobody, sys.executable, "-c", "pass"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this Python cannot be run by nobody here ({probe.stderr.strip()[:120]})")
    code = (
        "import numpy as np, omkl_dist, numba; from omkl_dist.scoring._vexp import vexp_neg; "
        "x = np.linspace(0.0, 9.0, 64); vexp_neg(x, np.empty(64), np.empty(64)); print(numba.config.CACHE_DIR)"
    )
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent"}
    done = subprocess.run([*as_nobody, sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "omkl-dist-" in done.stdout


def test_a_read_only_install_caches_in_the_users_folder(tmp_path):
    """The package run from a read-only file system (a system install, an image layer): root
    cannot write there either, so its kernels compile and cache under the user's ~/.cache. (One
    small kernel is compiled: the folder is chosen on import, whatever compiles; an estimator's
    fit would compile its whole engine, ~10 s of this test.)"""
    root = str(_numba_cache.ROOT)
    mount = f"mount --bind {root} {root} && mount -o remount,ro,bind {root} {root}"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && ! touch {root}/.w"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("needs unshare -m and mount (root in a mount namespace) to make the package read-only")
    code = (
        "import numpy as np, omkl_dist, numba; from omkl_dist.scoring._vexp import vexp_neg; "
        "x = np.linspace(0.0, 9.0, 64); vexp_neg(x, np.empty(64), np.empty(64)); print(numba.config.CACHE_DIR)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f'{mount} && exec "$0" -c "$1"', sys.executable, code],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cache = Path(done.stdout.strip().splitlines()[-1])
    assert cache.parent == tmp_path / ".cache" / "omkl-dist" and any(cache.rglob("*.nbi"))


def test_warmup_loads_the_cache_and_if_cold_skips_a_completed_warmup(tmp_path):
    """`omkl warmup` on this version's cache loads (or compiles) what it needs; `--if-cold` does
    nothing once a complete warm-up has marked the cache (`make test` fills it first that way)."""
    from omkl_dist.pipelines.warmup import DONE_MARK

    warm = [sys.executable, "-m", "omkl_dist.pipelines.cli", "warmup"]
    first = subprocess.run([*warm, "--algo", "perceptron", "--no-cluster"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.startswith("perceptron ") and "warmed 1 algorithm(s) in" in first.stdout
    cache = tmp_path / f"numba-{_numba_cache.sources_digest()}"
    cache.mkdir()
    (cache / DONE_MARK).touch()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    again = subprocess.run([*warm, "--if-cold", "--quiet"], capture_output=True, text=True, env=env)
    assert again.returncode == 0 and again.stdout == f"numba's cache is warm: {cache}\n", again.stderr[-2000:]


def test_a_failed_background_warmup_warns_and_lets_the_caller_go_on():
    """`cluster up` and the demo start `omkl warmup` beside the cluster: its failure is a warning
    line naming the error (the cluster is up all the same), not an exception."""
    from omkl_dist.pipelines.warmup import Background

    warming = Background(["no-such-algorithm"])
    line = warming.summary()
    assert warming.failed and line.startswith("warning: compiling the kernels ahead failed (omkl warmup exited 2")
    assert "no-such-algorithm" in line and "compiles them on its first use" in line


# ------------------------------------------------------------------------------ one compile per kernel
KERNEL_PACKAGES = ("combiners", "engine", "kernels", "learners", "randomness", "scoring")
# kernels that were compiled twice (a literal or a prange index as an argument)
KNOWN_TWICE = ("learners.forgetron.forgetron_mc_step", "learners.oks.add_scores", "scoring._dense.row_sqdist")
# compiled for a literal on purpose, once more: the literal is what the hot loop passes (the budget
# learners' scores, _budget_scores_range: kernel_values from slot 0); with an int64 there instead
# BPAS's decision_function on cod-rna took 7-11 % longer (session 53, one thread, alternately).
# (BPA-S's _least_degradation is inlined into its steps, K = 1 a constant in the binary one.)
SPECIALISED = ("omkl_dist.learners._budget.kernel_values",)


def _package_kernels() -> dict[str, Dispatcher]:
    """Every njit function defined in the packages that hold kernels, by qualified name."""
    found = {}
    for package in KERNEL_PACKAGES:
        root = importlib.import_module(f"omkl_dist.{package}")
        for info in pkgutil.iter_modules(root.__path__, f"{root.__name__}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
                    found[f"{module.__name__}.{name}"] = value
    return found


def _as_called(argument):
    """An argument's type as the kernel uses it: a literal as its plain type, an unsigned index
    (what ``prange`` gives inside a parallel loop) as int64."""
    plain = types.unliteral(argument)
    return types.int64 if plain == types.uint64 else plain


def test_no_kernel_is_compiled_twice_for_the_same_arguments():
    """numba compiles a function once per argument types, and a literal (``f(0)``; a variable that
    starts as ``-1`` and grows in a loop is typed literal first) or a ``prange`` index (uint64 in the
    parallel body) is a type of its own: each such call compiled a kernel a second time, seconds of
    ``omkl warmup`` for nothing (benchmarks/compile_times.py). The signatures come from the cache's
    index, which holds every compile of these sources (``omkl warmup`` compiles them all before the
    suite); the small fits below make sure those of the known cases are there."""
    X = np.random.default_rng(0).uniform(-1.0, 1.0, size=(60, 4))
    binary, classes = np.where(X[:, 0] > 0, 1, -1), np.arange(60) % 3
    common = {"kernels": "gaussian:1;linear", "block_size": 16, "random_state": 0}
    Forgetron(budget=10, **common).fit(X, classes).predict(X)
    OKS(n_epochs=1, **common).fit(X, classes)
    SPA(**common).fit(X, binary)
    compiled = {name: [key[0] for key in f._cache._cache_file._load_index()] for name, f in _package_kernels().items()}
    for known in KNOWN_TWICE:  # the fits above compiled (or loaded) them
        assert compiled[f"omkl_dist.{known}"], known
    twice = {
        name: sorted(map(str, signatures))
        for name, signatures in compiled.items()
        if name not in SPECIALISED and len({tuple(map(_as_called, s)) for s in signatures}) < len(set(signatures))
    }
    assert not twice, f"compiled more than once for the same arguments: {twice}"


def test_warmup_gives_the_algorithms_of_one_engine_to_one_interpreter():
    """The budget baselines compile one engine: two interpreters warming two of them at once would
    both compile it, so they are one task, warmed in turn. With as many interpreters as kernel
    families or more, every other algorithm is a task of its own."""
    from omkl_dist.pipelines.warmup import FAMILIES, ONE_ENGINE, algorithms_in_order, interpreter_tasks

    order = algorithms_in_order()
    tasks = interpreter_tasks(order, processes=len(FAMILIES))
    assert sorted(name for task in tasks for name in task) == sorted(order)  # each algorithm once
    assert sorted(next(task for task in tasks if "rbp" in task)) == sorted(ONE_ENGINE[0])
    assert all(len(task) == 1 for task in tasks if "rbp" not in task)
    assert tasks[0][0] == "rbp" and tasks[1] == ["omkc"] and tasks[2] == ["nogd"]  # the costliest first
    four = interpreter_tasks(["spa", "forgetron", "oks", "bpas"], processes=8)
    assert four == [["spa"], ["forgetron", "bpas"], ["oks"]]


def test_warmup_on_few_cores_gives_each_kernel_family_to_one_interpreter():
    """With fewer interpreters than kernel families (2 cores), the algorithms that share compiled
    kernels are one task each, warmed in turn: OMKC's interpreter compiles the scoring kernels SPA,
    OKS and OM-2 then load, instead of two interpreters compiling them at once."""
    from omkl_dist.pipelines.warmup import FAMILIES, algorithms_in_order, interpreter_tasks

    order = algorithms_in_order()
    assert sorted(name for family in FAMILIES for name in family) == sorted(order)  # every algorithm has its family
    tasks = interpreter_tasks(order, processes=2)
    assert sorted(name for task in tasks for name in task) == sorted(order)
    assert sorted(map(sorted, tasks)) == sorted(map(sorted, FAMILIES))
    pool = next(task for task in tasks if "omkc" in task)
    assert pool[0] == "omkc" and {"spa", "oks", "om2"} <= set(pool)  # the costliest compiles what the others share
    assert interpreter_tasks(["fogd", "spa", "nogd", "bpas", "omkc"], processes=2) == [
        ["fogd", "nogd"],
        ["spa", "omkc"],
        ["bpas"],
    ]  # (each task where its first algorithm comes in the order given, its algorithms in that order)


def test_online_kernels_have_no_prange_loops():
    """The online learners' compiled loops run rows (kernels) on threads (``scoring.row_threads``),
    not numba parallel loops, which compile about three times as long for the same bits (issue 39);
    only the batch kernels' pairwise matrices (``kernels._numba``) stay parallel."""
    parallel = []
    for package in ("omkl_dist.engine", "omkl_dist.learners", "omkl_dist.scoring", "omkl_dist.combiners"):
        for info in pkgutil.iter_modules(importlib.import_module(package).__path__, f"{package}."):
            module = importlib.import_module(info.name)
            parallel += [
                f"{info.name}.{name}"
                for name, obj in vars(module).items()
                if isinstance(obj, Dispatcher)
                and obj.py_func.__module__ == info.name
                and obj.targetoptions.get("parallel")
            ]
    assert parallel == []
