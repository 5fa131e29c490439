"""The defaults study's datasets: which registry files it streams (and which it skips, and why), two
generated stand-ins for UCI datasets the registry lacks, and each run's permuted, scaled stream."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from omkl_dist.defaults import SCALE_ROWS  # the scaler's window: the first rows of each permuted stream

from .defaults_plan import SEED

SKIP_RULE = (
    "One stream per dataset name of MANIFEST.json, the one `omkl run --data NAME` reads: the name's training "
    'split (the file whose role starts with "train"), else its only or first file; a multi-view name (mfeat) '
    "is read as all its views side by side. The other files of a name are skipped -- test splits (a9a.t, "
    "madelon.t, splice.test, svmguide1.test, svmguide3.t) so that no dataset counts twice, and a second copy "
    "of the same data (satimage's PMLB file beside its LIBSVM training split). A file with fewer than two "
    "classes (a regression target, a one-class split) is not a classification task and is skipped."
)


@dataclass(frozen=True, eq=False)
class StudyData:
    """One dataset as the study streams it: rows, internal labels, every class, a view's columns."""

    name: str
    source: str
    X: np.ndarray
    y: np.ndarray
    classes: list
    groups: dict | None = None


MAGIC_ROWS, MAGIC_SEED, MAGIC_NOISE, MAGIC_G = 19_020, 1904, 0.08, 0.65
# UCI MAGIC gamma telescope's ten features: (name, offset, scale) of the latent standard normals,
# so that the raw ranges differ as in the original (fLength ~10..300, fConc ~0..1, fAsym ~ +-500)
_MAGIC_FEATURES = (
    ("fLength", 0.0, 53.0),
    ("fWidth", 0.0, 22.0),
    ("fSize", 2.8, 0.47),
    ("fConc", 0.38, 0.18),
    ("fConc1", 0.21, 0.11),
    ("fAsym", -4.0, 59.0),
    ("fM3Long", 11.0, 51.0),
    ("fM3Trans", 0.25, 21.0),
    ("fAlpha", 0.0, 26.0),
    ("fDist", 193.0, 75.0),
)


def magic04_shaped() -> StudyData:
    """A stand-in for UCI MAGIC (not in the registry): 19,020 rows x 10 features of very different
    scales, classes g/h at ~65/35 %, labelled by a non-linear rule of the latent normals -- so a
    kernel on the raw features is ruled by the wide, uninformative ones and scaling matters.

    Latent Z ~ N(0, 1)^10 (default_rng(1904)), fWidth and fSize correlated with fLength. Feature j
    is offset + scale * z (fLength and fWidth: scale * exp(0.6 z); fAlpha: scale * |z|). The rule
    s = 0.9 z_conc - 1.5 |z_alpha| - 0.5 z_size^2 + 0.6 z_length z_width + 0.5 sin(2 z_m3long) is
    thresholded so that after flipping 8 % of the labels (noise) ~65 % are g (internal -1; h = +1,
    the larger label, as a file's would be).
    """
    rng = np.random.default_rng(MAGIC_SEED)
    z = rng.standard_normal((MAGIC_ROWS, len(_MAGIC_FEATURES)))
    z[:, 1] = 0.6 * z[:, 0] + 0.8 * z[:, 1]
    z[:, 2] = 0.5 * z[:, 0] + 0.5 * z[:, 1] + 0.7 * z[:, 2]
    X = np.empty_like(z)
    for j, (_, offset, scale) in enumerate(_MAGIC_FEATURES):
        X[:, j] = offset + scale * z[:, j]
    X[:, :2] = np.array([s for _, _, s in _MAGIC_FEATURES[:2]]) * np.exp(0.6 * z[:, :2])
    X[:, 8] = _MAGIC_FEATURES[8][2] * np.abs(z[:, 8])
    s = 0.9 * z[:, 3] - 1.5 * np.abs(z[:, 8]) - 0.5 * z[:, 2] ** 2 + 0.6 * z[:, 0] * z[:, 1] + 0.5 * np.sin(2 * z[:, 6])
    g_before_noise = (MAGIC_G - MAGIC_NOISE) / (1 - 2 * MAGIC_NOISE)
    is_g = s > np.quantile(s, 1 - g_before_noise)
    is_g ^= rng.random(MAGIC_ROWS) < MAGIC_NOISE
    return StudyData("magic04-shaped", "generated", X, np.where(is_g, -1, 1), [-1, 1])


LETTERS_ROWS, LETTERS_FEATURES, LETTERS_CLASSES, LETTERS_SCALE_SEED = 15_000, 16, 26, 26


def letters_shaped() -> StudyData:
    """A stand-in for UCI letter recognition: 26 classes, 15,000 x 16 --
    ``make_classification(n_samples=15000, n_features=16, n_informative=12, n_redundant=0,
    n_classes=26, n_clusters_per_class=1, class_sep=2.0, random_state=0)`` with feature j then
    multiplied by 10**u_j, u ~ uniform(-1, 2) (default_rng(26)): scales from 0.1 to 100, so an
    unscaled kernel sees mostly the widest features."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=LETTERS_ROWS,
        n_features=LETTERS_FEATURES,
        n_informative=12,
        n_redundant=0,
        n_classes=LETTERS_CLASSES,
        n_clusters_per_class=1,
        class_sep=2.0,
        random_state=0,
    )
    X = X * 10 ** np.random.default_rng(LETTERS_SCALE_SEED).uniform(-1, 2, LETTERS_FEATURES)
    return StudyData("letters-shaped", "generated", X, y.astype(np.int64), list(range(LETTERS_CLASSES)))


GENERATED = {
    "magic04-shaped": (magic04_shaped, MAGIC_ROWS, len(_MAGIC_FEATURES), 2),
    "letters-shaped": (letters_shaped, LETTERS_ROWS, LETTERS_FEATURES, LETTERS_CLASSES),
}


def plan_datasets(data_dir=None) -> tuple[list[dict], list[dict]]:
    """(the study's datasets, the registry files it skips with why) by :data:`SKIP_RULE`; each
    dataset ``{name, source, rows, features, classes}``."""
    from omkl_dist.storage import list_datasets
    from omkl_dist.storage.views import is_multiview

    by_name: dict[str, list[dict]] = {}
    for row in list_datasets(data_dir, verify=False):
        by_name.setdefault(row["name"], []).append(row)
    chosen, skipped = [], []
    for name, files in by_name.items():
        if is_multiview(name, data_dir=data_dir):
            chosen.append(
                {
                    "name": name,
                    "source": f"{len(files)} views side by side",
                    "rows": files[0]["rows"],
                    "features": sum(f["features"] for f in files),
                    "classes": files[0]["classes"],
                }
            )
            continue
        default = next(f for f in files if f["default"])
        for f in files:
            if f is not default:
                skipped.append({"file": f["file"], "why": _skip_reason(f, default)})
            elif (f["classes"] or 0) < 2:
                skipped.append({"file": f["file"], "why": "fewer than two classes: not a classification task"})
            else:
                chosen.append(
                    {
                        "name": name,
                        "source": f["file"],
                        "rows": f["rows"],
                        "features": f["features"],
                        "classes": f["classes"],
                    }
                )
    chosen += [
        {"name": name, "source": "generated", "rows": rows, "features": d, "classes": k}
        for name, (_, rows, d, k) in GENERATED.items()
    ]
    return chosen, skipped


def _skip_reason(row: dict, default: dict) -> str:
    if str(row["role"]).strip().lower().startswith("test"):
        return f"test split of {row['name']} (its training split {default['file']} is studied)"
    return f"another file of {row['name']} (the registry's {row['name']} is {default['file']})"


@lru_cache(maxsize=2)  # runs come ordered by dataset: each worker parses a dataset once
def load_data(name: str) -> StudyData:
    """A study dataset by name: generated, a multi-view registry name, or a registry file."""
    from omkl_dist.storage import read_dataset, resolve_dataset
    from omkl_dist.storage.views import is_multiview, read_views

    if name in GENERATED:
        return GENERATED[name][0]()
    groups = None
    if is_multiview(name):
        ds, groups = read_views(name)
    else:
        ds = read_dataset(resolve_dataset(name))
    classes = sorted(internal for _, internal in ds.label_map)
    return StudyData(
        name, Path(str(ds.path)).name, np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y), classes, groups
    )


def permuted_stream(data: StudyData, permutation: int, max_rows: int, scaling: str):
    """Permutation ``permutation`` of the rows, its first ``max_rows``, scaled by a Scaler fitted on
    the first min(SCALE_ROWS, n) of them -- the rule ``omkl run`` applies to a stream."""
    from omkl_dist.preprocessing import Scaler

    order = _order(data, permutation, max_rows)
    X, y = data.X[order], data.y[order]
    return Scaler(scaling).fit(X[:SCALE_ROWS]).transform(X), y


def _order(data: StudyData, permutation: int, max_rows: int | None) -> np.ndarray:
    """Permutation ``permutation`` of the rows (``default_rng([SEED, permutation])``), its first ``max_rows``."""
    return np.random.default_rng([SEED, permutation]).permutation(len(data.y))[:max_rows]


def permuted_head(data: StudyData, permutation: int, max_rows: int | None) -> np.ndarray:
    """The rows a run's scaler is fitted on (:func:`permuted_stream`'s head), unscaled."""
    return data.X[_order(data, permutation, max_rows)[:SCALE_ROWS]]


def zero_one_heads(records: list[dict], max_rows: int | None) -> list[str] | None:
    """The datasets of the ``max_rows`` records on which a job's defaults leave the features unscaled
    (the 0/1 rule: every feature value of the scaler's head is 0 or 1), decided by the function the
    runners call (:func:`omkl_dist.preprocessing.fit_head`) on the head of every permutation the
    records ran; None when a dataset cannot be read here (no registry)."""
    from omkl_dist.defaults import resolve_settings
    from omkl_dist.preprocessing import fit_head

    permutations: dict = {}
    for r in records:
        if r["max_rows"] == max_rows:
            permutations.setdefault(r["dataset"], set()).add(r["permutation"])
    default = resolve_settings()
    try:
        return sorted(
            name
            for name, perms in permutations.items()
            if all(
                fit_head(default, permuted_head(load_data(name), p, max_rows), SCALE_ROWS)[0].origin
                == "defaults-zero-one"
                for p in sorted(perms)
            )
        )
    except (OSError, ValueError):  # a registry file that is not here (a DataError is a ValueError)
        return None
