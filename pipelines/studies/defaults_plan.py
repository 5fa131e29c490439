"""The defaults study's grid (``omkl study defaults``): its settings, the algorithms it runs with their
kernels raw and normalised, the scalings, and every run of the grid in the order the workers take them."""

from __future__ import annotations

from dataclasses import dataclass

from omkl_dist._validation import did_you_mean

MAX_ROWS = 3_000  # rows of each permutation a run learns (default of --max-rows)
WHOLE = None  # --max-rows all: every row of the permuted stream (a record's max_rows is then null)
# a run records its cumulative mistakes after these rows (those below its length, then its end), so that a
# rule deciding on a stream's head (a race of the settings over its first H rows) is evaluated offline
PREFIXES = (250, 500, 1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 50_000, 100_000)
PERMUTATIONS = 5
WORKERS = 2
BUDGET = 100  # support vectors per kernel of the budget baselines
BLOCK_SIZE = 256  # omkl run's default
SEED = 0  # permutation p of a dataset is default_rng([SEED, p]); the learner's random_state is p
NEAR = 0.5  # points: a combination within this of a row's best counts as "best or within"
LOSS = 1.0  # points: a row where the most frequent winner is worse by more than this is listed as a loss


SCALINGS = ("none", "minmax", "standard")
FORMS = ("raw", "norm")
COMBINATIONS = tuple(scaling + ("+norm" if form == "norm" else "") for form in FORMS for scaling in SCALINGS)


# study name -> (omkl run --algo, its parameters); kernels are each estimator's default pool
STUDY_ALGORITHMS = {
    "omkc-dd": ("omkc", {"update": "D", "combination": "D"}),
    "omkc-ds": ("omkc", {"update": "D", "combination": "S"}),
    "omkc-sd": ("omkc", {"update": "S", "combination": "D"}),
    "omkc-ss": ("omkc", {"update": "S", "combination": "S"}),
    "perceptron": ("perceptron", {}),
    "perceptron-u": ("perceptron-u", {}),
    "perceptron-star": ("perceptron-star", {}),
    "spa": ("spa", {}),
    "om2": ("om2", {}),
    "oks": ("oks", {}),
    "rbp": ("rbp", {"budget": BUDGET}),
    "forgetron": ("forgetron", {"budget": BUDGET}),
    "bogd": ("bogd", {"budget": BUDGET}),
    "bpas": ("bpas", {"budget": BUDGET}),
}


BUDGET_ALGORITHMS = ("rbp", "forgetron", "bogd", "bpas")


@dataclass(frozen=True)
class Axis:
    """A default beside scaling x normalisation that a study varies (``--axes``): the study's value of
    ``param`` (what every other run uses) and the values it also measures, each with all six
    combinations, on the algorithms the axis applies to. ``param`` None: the kernels' parameter."""

    name: str
    param: str | None
    default: object
    alternatives: tuple
    algorithms: tuple
    what: str


# One axis at a time: a run varies at most one axis from its default (a cross product would multiply
# the cost for interactions the study does not ask about). A run's record holds the axes it varies in
# ``settings`` ({} for the default); the kernels' form (raw or +norm) applies to every pool.
AXES = {
    axis.name: axis
    for axis in (
        Axis(
            "hedge_loss",
            "hedge_loss",
            "hinge",
            ("mistake",),
            ("spa",),
            "SPA's Hedge loss: the hinge loss as Algorithm 1 writes it (the default) or mistakes (the authors' C++)",
        ),
        Axis(
            "budget",
            "budget",
            BUDGET,
            (4 * BUDGET,),
            BUDGET_ALGORITHMS,
            "the budget learners' support vectors per kernel",
        ),
        Axis(
            "pool",
            None,
            "omkc16",
            ("gaussian:2^-6..2^6",),
            tuple(a for a in STUDY_ALGORITHMS if a != "perceptron"),  # the Perceptron has one kernel
            "the kernel pool: the default omkc16 or its 13 gaussians alone (FOGD's default pool; mkboost17, the "
            "other named pool, is omkc16 with one more width)",
        ),
    )
}


def cap_text(max_rows: int | None) -> str:
    """A row cap as reports print it: ``3,000`` or ``all`` (the whole stream)."""
    return "all" if max_rows is WHOLE else f"{max_rows:,}"


def variants(algorithm: str, axes) -> list[dict]:
    """The settings a study runs ``algorithm`` with: the defaults ({}), then each applicable axis of
    ``axes`` moved to each of its other values, one axis at a time."""
    return [{}] + [
        {name: value} for name in axes if algorithm in AXES[name].algorithms for value in AXES[name].alternatives
    ]


def variant_label(settings: dict) -> str:
    """``"default"`` or ``"hedge_loss=mistake"``: how a report names a run's settings."""
    return ",".join(f"{k}={v}" for k, v in sorted(settings.items())) or "default"


def kernel_param(algorithm: str) -> tuple[str, str]:
    """(parameter name, unnormalised default spec) of a study algorithm's kernels: its default pool
    (or for the Perceptron its default single kernel) without its ``+norm`` -- the papers' kernels."""
    from omkl_dist.algorithms.registry import ALGORITHMS
    from omkl_dist.kernels.grammar import strip_norm

    params = ALGORITHMS[STUDY_ALGORITHMS[algorithm][0]]().get_params()
    name = "kernel" if "kernel" in params else "kernels"
    return name, strip_norm(params[name])[0]


def normalized_spec(spec: str) -> str:
    """The spec string of ``spec`` with every kernel normalised (``KernelPool.normalized``)."""
    from omkl_dist.kernels import make_pool

    return make_pool(spec, normalize=True).to_spec_string()


def resolve_names(text, known: list[str], what: str) -> list[str]:
    """Comma-separated ``text`` as names of ``known`` (all when None), each once, in ``known``'s order."""
    if text is None:
        return list(known)
    names = [part.strip() for part in str(text).split(",") if part.strip()]
    for name in names:
        if name not in known:
            hint = did_you_mean(name, known, quote=False)
            hint = f" ({hint})" if hint else ""
            raise ValueError(f"unknown {what} {name!r}{hint}; choose from {', '.join(known)}")
    if not names:
        raise ValueError(f"no {what} given; choose from {', '.join(known)}")
    return [k for k in known if k in names]


def study_spec(algorithm: str, settings: dict, form: str) -> str | None:
    """The kernels a run uses: the pool its settings name (else the algorithm's default, None for raw
    so that the estimator's own spec is recorded), normalised for the ``norm`` form."""
    pool = settings.get("pool")
    if pool is None and form == "raw":
        return None
    pool = pool or kernel_param(algorithm)[1]
    return normalized_spec(pool) if form == "norm" else pool


def plan_runs(algorithms, datasets, permutations: int, max_rows: int | None, axes=()) -> list[dict]:
    """Every run of the grid, ordered by dataset (a worker keeps the dataset it parsed), then
    algorithm and its settings (the defaults first, then each of ``axes``, see :func:`variants`)."""
    tasks = []
    for dataset in datasets:
        for algorithm in algorithms:
            for settings in variants(algorithm, axes):
                for form in FORMS:
                    spec = study_spec(algorithm, settings, form)
                    tasks += [
                        {
                            "algorithm": algorithm,
                            "dataset": dataset,
                            "scaling": scaling,
                            "kernels": form,
                            "kernel_spec": spec,
                            "permutation": p,
                            "max_rows": max_rows,
                            "settings": settings,
                        }
                        for scaling in SCALINGS
                        for p in range(permutations)
                    ]
    return tasks
