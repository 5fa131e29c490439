"""The options of ``run`` and ``submit`` that say which algorithm learns, and with what parameters."""

from __future__ import annotations

import click

from ..cli_base import (
    FiniteFloat,
    given_kernel_spec,
)

ALGORITHM_PARAMS = (
    "update",
    "combination",
    "kernels",
    "kernel",
    "beta",
    "delta",
    "gamma",
    "eta",
    "alpha",
    "budget",
    "block_sync",
    "lam",
    "hedge_loss",
    "p",
    "norm",
    "loss",
)


def algorithm_options(command):
    """The options shared by ``run`` and ``submit``: the algorithm and its parameters."""
    options = [
        click.option(
            "--algo",
            required=True,
            help="omkc, om2, perceptron, perceptron-u, perceptron-star, spa, oks; budget baselines rbp, "
            "forgetron, bogd, bpas (--budget = support vectors per kernel, --gamma, --eta for bogd/bpas, "
            "--lam). Every algorithm learns multi-class data.",
        ),
        click.option("--data", required=True, help="Registry name (e.g. codrna), data file, or ingested directory."),
        click.option(
            "--update", type=click.Choice(["D", "S"]), default=None, help="OMKC: kernel selection for updates."
        ),
        click.option(
            "--combination",
            type=click.Choice(["D", "S", "U"]),
            default=None,
            help="OMKC: selection for combining (U: fixed uniform vote, OMKC(U)).",
        ),
        click.option(
            "--kernels",
            default=None,
            callback=given_kernel_spec,
            help="Kernel pool: omkc16, mkboost17 or a spec such as 'poly:1,2;gaussian:2^-2..2^2'; oks: "
            "kernels may see a feature group, 'linear,poly:2,chi2,gaussian:1 @ fourier; ... @ zernike' "
            "(a multi-view dataset's views, or column ranges @ 0:76).",
        ),
        click.option(
            "--kernel",
            default=None,
            callback=given_kernel_spec,
            help="perceptron: the single kernel (default linear).",
        ),
        click.option(
            "--beta",
            type=FiniteFloat(),
            default=None,
            help="OMKC: Hedge discount in (0,1). SPA: support-vector sampling divisor (>= alpha).",
        ),
        click.option(
            "--delta",
            type=FiniteFloat(),
            default=None,
            help="Sampling smoothing in (0,1] (SPA, OKS: (0,1); OKS default 0.5).",
        ),
        click.option(
            "--gamma", type=FiniteFloat(), default=None, help="SPA: Hedge discount per unit of loss, in (0,1)."
        ),
        click.option(
            "--hedge-loss",
            type=click.Choice(["hinge", "mistake"]),
            default=None,
            help="SPA: discount Hedge weights by the hinge loss (Algorithm 1, default) or by mistakes.",
        ),
        click.option(
            "--eta",
            type=FiniteFloat(),
            default=None,
            help="SPA: aggressiveness (learning rate) > 0. OKS: the weights' step (default "
            "sqrt(2(1-delta) ln m / (m T)) for m kernels and T instances).",
        ),
        click.option("--alpha", type=FiniteFloat(), default=None, help="SPA: sampling cap, min(alpha, loss)/beta."),
        click.option(
            "--budget",
            type=click.IntRange(min=1),
            default=None,
            help="SPA: expected support vectors per kernel (sets beta = alpha T / budget).",
        ),
        click.option(
            "--block-sync",
            is_flag=True,
            default=None,
            help="Stochastic updates sample with block-start weights instead of the current ones "
            "(the same model in run and submit).",
        ),
        click.option(
            "--lam",
            type=FiniteFloat(),
            default=None,
            help="BOGD: regulariser lambda >= 0 (eta * lam < 1). OKS: the predictors' step (default 1).",
        ),
        click.option(
            "--loss",
            type=click.Choice(["mistake", "hinge", "logistic"]),
            default=None,
            help="OKS: Algorithm 2 (mistake, default) or Algorithm 1 with the hinge or logistic loss.",
        ),
        click.option(
            "--p",
            "p",
            type=FiniteFloat(),
            default=None,
            help="OM-2: the group norm's p in (1, 2] (default 2 ln F / (2 ln F - 1) for F kernels).",
        ),
        click.option(
            "--norm",
            type=click.Choice(["exact", "bound"]),
            default=None,
            help="OM-2: the step's norm, Algorithm 1's exact one (default) or its bound 2 F^(2/q).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def algorithm_params(kwargs) -> dict:
    return {name: kwargs.pop(name) for name in ALGORITHM_PARAMS}
