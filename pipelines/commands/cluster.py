"""``omkl cluster``: start, inspect and stop a local Dask cluster."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from ..cli_base import (
    LOCAL_PATH,
    CommandGroup,
)


@click.group(cls=CommandGroup)
def cluster():
    """Start, inspect and stop a local Dask cluster (real scheduler and worker processes)."""


_RUN_DIR = click.option(
    "--run-dir",
    type=LOCAL_PATH,
    default=Path("runs") / "cluster",
    show_default=True,
    help="Where the cluster keeps its state, logs and pid files.",
)


@cluster.command("up")
@_RUN_DIR
@click.option("--workers", default=2, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Threads per worker (also numba's and BLAS's).",
)
@click.option("--memory-limit", default="auto", show_default=True, help="Per worker, e.g. 4GB.")
@click.option(
    "--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Scheduler port (0: any free)."
)
@click.option(
    "--tls-dir",
    type=LOCAL_PATH,
    default=None,
    help="Use mutual TLS with the certificates in this directory (see `omkl cluster certs`).",
)
@click.option(
    "--warm",
    "warm",
    multiple=True,
    metavar="NAME",
    help="Compile this algorithm's kernels while the cluster starts (repeatable; `all`: every one). "
    "[default: every algorithm, unless `omkl warmup` already did]",
)
@click.option("--no-warm", is_flag=True, help="Start without compiling: each worker compiles on its first use.")
def cluster_up(run_dir, workers, threads, memory_limit, port, tls_dir, warm, no_warm):
    """Start a scheduler and worker processes on 127.0.0.1.

    numba compiles each kernel on its first use, in every process that has not found it in the
    shared cache: a job's first round would wait on each worker. So the kernels are compiled here,
    once per installation, while the processes start (the workers on this machine share the cache).
    """
    from omkl_dist.cluster.local import DEFAULT_RUN_DIR, up

    from ..warmup import Background, algorithms_in_order, warmed_up

    names = [] if "all" in warm else list(warm)
    try:
        algorithms_in_order(names)  # (the names checked before any process starts)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--warm") from None
    warming = None if no_warm or (not names and warmed_up()) else Background(names)
    with warming or contextlib.nullcontext():
        state = up(run_dir, workers=workers, threads=threads, memory_limit=memory_limit, port=port, tls_dir=tls_dir)
    if warming is not None:
        line = warming.summary()
        click.echo(line, err=warming.failed)
    address = state["scheduler_address"]
    click.echo(f"scheduler  {address}")
    click.echo(f"dashboard  {state['dashboard']}")
    click.echo(f"workers    {workers} x {threads} thread(s); logs and pids in {state['run_dir']}")
    if Path(run_dir).expanduser().absolute() == DEFAULT_RUN_DIR.absolute():
        click.echo(f"submit with: omkl submit ALGO --data ... from this folder (elsewhere: --scheduler {address})")
    else:
        click.echo(f"submit with: omkl submit ALGO --scheduler {address} --data ...")


@cluster.command("status")
@_RUN_DIR
@click.option("--json", "as_json", is_flag=True)
def cluster_status(run_dir, as_json):
    """Show the cluster's processes and the workers its scheduler knows."""
    from omkl_dist.cluster.local import status

    info = status(run_dir)
    if as_json:
        click.echo(json.dumps(info))
        return
    click.echo(f"scheduler  {info['scheduler_address']} ({'reachable' if info['reachable'] else 'NOT reachable'})")
    click.echo(f"dashboard  {info['dashboard']}")
    for pid, alive in info["processes"].items():
        gone = "gone (its pid is now another process's)" if int(pid) in info["not_ours"] else "gone"
        click.echo(f"process    {pid} {'running' if alive else gone}")
    for w in info["workers"]:
        click.echo(f"worker     {w['name']} {w['address']} threads={w['nthreads']}")


@cluster.command("down")
@_RUN_DIR
def cluster_down(run_dir):
    """Stop the cluster and every process it started."""
    from omkl_dist.cluster.local import down

    result = down(run_dir)
    for pid in result["not_ours"]:
        click.echo(f"left alone: pid {pid} runs another program now (not a process of this cluster)")
    if not result["stopped"]:
        click.echo(f"no cluster is running from {run_dir}")
        return
    forced = f" ({len(result['killed'])} needed SIGKILL)" if result["killed"] else ""
    click.echo(f"stopped {len(result['stopped'])} process group(s){forced}")


@cluster.command("certs")
@click.option("--out", "out", required=True, type=LOCAL_PATH)
def cluster_certs(out):
    """Create a private CA and a node certificate for a TLS cluster on 127.0.0.1."""
    from omkl_dist.cluster.tls import make_certificates

    click.echo(f"wrote ca.pem, node.pem, node-key.pem to {make_certificates(out)}")
