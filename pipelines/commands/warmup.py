"""``omkl warmup``: compile numba's kernels once, ahead of the first run."""

from __future__ import annotations

import os
import time

import click


@click.command("warmup")
@click.option(
    "--algo",
    "algorithms",
    multiple=True,
    metavar="NAME",
    help="Warm only this algorithm (repeatable; default: every one, batch classifiers included).",
)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=None,
    help="Interpreters compiling at once  [default: the cores present]",
)
@click.option("--no-cluster", is_flag=True, help="Skip the shards' rounds (only `omkl run` and Python fits warmed).")
@click.option(
    "--if-cold",
    is_flag=True,
    help="Do nothing when a complete warm-up already ran for this version (`make test` warms up this way).",
)
@click.option("--quiet", is_flag=True, help="Print only the summary line.")
def warmup(algorithms, processes, no_cluster, if_cold, quiet):
    """Compile (or load) every kernel into numba's cache, once per installation and version.

    The first run of each code path otherwise waits 10-20 s for the compiler; the cache is shared
    by `omkl run`, `omkl submit`'s workers on this machine and Python. A warm cache loads in seconds.
    """
    from ..warmup import algorithms_in_order, cache_entries, warm_up, warmed_up

    try:
        algorithms_in_order(algorithms)  # (the names checked before any work)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--algo") from None
    if if_cold and warmed_up():
        click.echo(f"numba's cache is warm: {os.environ['NUMBA_CACHE_DIR']}")
        return
    started = time.perf_counter()
    before = cache_entries()

    def show(warmed):
        if not quiet:
            click.echo(f"{warmed.algorithm:16s} {warmed.seconds:6.1f} s")

    done = warm_up(list(algorithms) or None, processes=processes, cluster=not no_cluster, on_done=show)
    compiled = cache_entries() - before
    click.echo(
        f"warmed {len(done)} algorithm(s) in {time.perf_counter() - started:.1f} s: "
        + (f"{compiled} kernel(s) compiled into {os.environ['NUMBA_CACHE_DIR']}" if compiled else "all from the cache")
    )
