"""The defaults study's grid (``omkl study defaults``): its settings, the algorithms it runs with their
kernels raw and normalised, the scalings, and every run of the grid in the order the workers take them."""

from __future__ import annotations

from omkl_dist._validation import did_you_mean

MAX_ROWS = 3_000  # rows of each permutation a run learns (default of --max-rows)
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


def plan_runs(algorithms, datasets, permutations: int, max_rows: int, norm_specs: dict) -> list[dict]:
    """Every run of the grid, ordered by dataset (a worker keeps the dataset it parsed)."""
    tasks = []
    for dataset in datasets:
        for algorithm in algorithms:
            for form in FORMS:
                tasks += [
                    {
                        "algorithm": algorithm,
                        "dataset": dataset,
                        "scaling": scaling,
                        "kernels": form,
                        "kernel_spec": norm_specs[algorithm] if form == "norm" else None,
                        "permutation": p,
                        "max_rows": max_rows,
                    }
                    for scaling in SCALINGS
                    for p in range(permutations)
                ]
    return tasks
