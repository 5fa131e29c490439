"""Dask's worker profiler can hang a worker process on Python 3.11 (cluster/profiler.py): the clusters omkl
starts run without it there, and a job on workers that profile on 3.11 warns, once per client, naming
the setting that turns it off. (``omkl cluster up``'s real worker processes: test_cluster_integration.py.)"""

from __future__ import annotations

import sys
import warnings

import dask
import pytest

from omkl_dist.cluster.profiler import CONFIG_KEY, ENVIRON_KEY, profiler_hangs, safe_worker_config

pytestmark = pytest.mark.cluster


def _profiling(client) -> set[bool]:
    return set(client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks).values())


def test_only_python_311_profiles_into_a_hang():
    assert profiler_hangs((3, 11, 7)) and profiler_hangs((3, 11, 14))
    assert not profiler_hangs((3, 12, 1)) and not profiler_hangs((3, 13, 0))
    assert safe_worker_config() == ({CONFIG_KEY: False} if profiler_hangs(sys.version_info) else {})


def test_local_cluster_workers_run_without_the_profiler_where_it_hangs():
    from distributed import Client

    from omkl_dist.distributed.mkboost import local_cluster

    with dask.config.set({CONFIG_KEY: True}):  # even where the caller's config has it on
        with local_cluster(n_workers=1, threads_per_worker=1) as cluster, Client(cluster) as client:
            assert _profiling(client) == {not profiler_hangs()}


@pytest.mark.skipif(not profiler_hangs(), reason="Dask's profiler hangs workers on Python 3.11 only")
def test_a_job_on_workers_that_profile_on_311_warns_once_naming_the_setting(tmp_path):
    from distributed import Client, LocalCluster

    from omkl_dist import OMKC
    from omkl_dist.distributed import fit_on_cluster
    from omkl_dist.storage.synth import synthesize

    data = tmp_path / "data"
    synthesize(data, rows=300, features=4, seed=1)
    fit = dict(seed=0, scaling="none", limit=200)
    kwargs = dict(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    with dask.config.set({CONFIG_KEY: True}), LocalCluster(**kwargs) as cluster, Client(cluster) as client:
        assert _profiling(client) == {True}
        with pytest.warns(RuntimeWarning, match=f"{ENVIRON_KEY}=False") as caught:
            fit_on_cluster(client, OMKC(kernels=["gaussian:1"], block_size=50), data, **fit)
        assert "cpython#106883" in str(caught[0].message) and cluster.workers[0].address in str(caught[0].message)
        assert caught[0].filename == __file__  # it points at the caller's line, not into the package
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # told once per client
            fit_on_cluster(client, OMKC(kernels=["gaussian:1"], block_size=50), data, **fit)
    with LocalCluster(**kwargs) as cluster, Client(cluster) as client:  # the tests' config: profiler off
        assert _profiling(client) == {False}
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            fit_on_cluster(client, OMKC(kernels=["gaussian:1"], block_size=50), data, **fit)
