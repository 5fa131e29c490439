"""The BOMKL/SPA paper's Tables 1 and 2, transcribed as data, and how its datasets map onto ours.

Source: "Budget Online Multiple Kernel Learning" with the Sparse Passive Aggressive (SPA) algorithm
(``/work/shared/papers/bomkl_budget_online_mkl_spa.md``), section 4:

* Table 1 (non-budget comparison): Perceptron(*), OMKC(U), OMKC(DD), OMKC(SD), BOMKC(SPA) on german,
  madelon, a9a, magic04, KDD08, svmguide3. We reproduce german, svmguide3, madelon and a9a (magic04
  and KDD08 are not among our datasets).
* Table 2 (budget comparison): RBP, Forgetron, BOGD, BPAS, SPA on a9a, magic04, KDD08, ijcnn1, codrna,
  SUSY. We reproduce a9a, ijcnn1, codrna and SUSY. (The paper's appendix table of dataset statistics
  is also called "Table 3"; the budget results are all in Table 2.)

Cells are ``mean ± std`` over 10 random permutations for mistake rate (%) and #SV (the total over
all 16 component classifiers); the time (s, C++ on a 3.2 GHz Windows PC) is printed without a std,
so its ``std`` is ``None`` here. The SPA row of a9a is printed in both tables with the same numbers.

Settings (section 4.4): 16 kernels (our ``"omkc16"``), discount γ = 0.99 for every multiple-kernel
algorithm, smoothing δ = 0.001, learning rate η = 0.1, SPA α = 1, β = 3 (β = 300 on the
million-row SUSY). The budget baselines get a per-kernel budget B with 16 B ≈ SPA's #SV.

OMKC(U) is OMKC with a fixed uniform vote of the 16 kernel Perceptrons (``OMKC(combination="U")``;
not Perceptron(u), which is one Perceptron on the averaged kernel). The budget baselines RBP,
Forgetron, BOGD and BPAS (:mod:`omkl_dist.algorithms.baselines`) run with budget B per kernel,
``B = round(paper SPA #SV / 16)`` for the dataset (:data:`BASELINE_BUDGET`: 16 B is the #SV the paper
prints for them), every kernel learning from every instance and Hedge (γ = 0.99) combining them.
"""

from __future__ import annotations

from dataclasses import dataclass

from omkl_dist.reproduction.tables.omkc import Cell

__all__ = [
    "ALGORITHM_LABELS",
    "BASELINE_BUDGET",
    "BUDGET_BASELINES",
    "DATASETS",
    "FLAG_NOTES",
    "IMPLEMENTED",
    "NOT_IMPLEMENTED_NOTE",
    "PAPER_SCALING",
    "TABLES",
    "TABLE_ALGORITHMS",
    "TABLE_TITLES",
    "BomklDataset",
    "BomklSource",
    "Cell",
    "PaperBlock",
    "SPA_BETA",
]

#: Algorithm keys per table, in the paper's row order.
TABLE_ALGORITHMS = {
    "table1": ("perceptron-star", "omkc-u", "omkc-dd", "omkc-sd", "spa"),
    "table2": ("rbp", "forgetron", "bogd", "bpas", "spa"),
}

TABLE_TITLES = {
    "table1": "Table 1 -- comparison with non-budget OMKL algorithms",
    "table2": "Table 2 -- comparison with budget OMKL algorithms",
}

ALGORITHM_LABELS = {
    "perceptron-star": "Perceptron(*)",
    "omkc-u": "OMKC(U)",
    "omkc-dd": "OMKC(DD)",
    "omkc-sd": "OMKC(SD)",
    "spa": "SPA",
    "rbp": "RBP",
    "forgetron": "Forgetron",
    "bogd": "BOGD",
    "bpas": "BPAS",
}

#: Algorithms this package implements.
IMPLEMENTED = ("perceptron-star", "omkc-u", "omkc-dd", "omkc-sd", "spa", "rbp", "forgetron", "bogd", "bpas")

#: Algorithm -> note shown instead of our numbers (none left).
NOT_IMPLEMENTED_NOTE: dict[str, str] = {}

#: The Table 2 budget baselines (budget B per kernel).
BUDGET_BASELINES = ("rbp", "forgetron", "bogd", "bpas")

#: SPA's β per paper dataset (section 4.4: 3 on the first 8 datasets, 300 on the million-row SUSY).
SPA_BETA = {"german": 3.0, "svmguide3": 3.0, "madelon": 3.0, "a9a": 3.0, "ijcnn1": 3.0, "codrna": 3.0, "SUSY": 300.0}


@dataclass(frozen=True)
class PaperBlock:
    """One dataset block of Table 1 or Table 2: algorithm -> Cell for mistake %, #SV and time."""

    table: str
    name: str
    mistake: dict
    sv: dict
    time: dict


@dataclass(frozen=True)
class BomklDataset:
    """A paper dataset: size as in the paper's statistics table."""

    name: str
    n: int
    d: int


@dataclass(frozen=True)
class BomklSource:
    """Which of our files stands in for a paper dataset.

    ``registry``: name for :func:`omkl_dist.storage.resolve_dataset`; ``rows``: use only the first ``rows`` rows
    of the file (None: all); ``substitute``: the rows differ from the paper's (a subset or another
    split), so a deviation there is counted separately.
    """

    registry: str
    note: str
    substitute: bool = False
    rows: int | None = None


# Transcribed from Tables 1 and 2: "<table> <dataset>" header, then one row per algorithm:
# mistake % mean std | #SV mean std | time s (no std printed).
_TABLE = """
table1 german
    perceptron-star  32.07 0.90     320.7     9.0     0.031
    omkc-u           35.37 1.17    6912.4    87.7     0.388
    omkc-dd          31.05 1.13    6912.4    87.7     0.383
    omkc-sd          34.80 1.25    5724.5   128.6     0.341
    spa              30.19 0.29    1688.1    90.7     0.120
table1 svmguide3
    perceptron-star  25.98 0.51     323       6.3     0.03
    omkc-u           28.25 0.80    6166.9   100.1     0.36
    omkc-dd          25.41 0.95    6166.9   100.1     0.37
    omkc-sd          24.65 0.46    5550.8    95.8     0.36
    spa              23.53 0.24    1663     109.63    0.13
table1 madelon
    perceptron-star  48.65 1.57     973.0    31.45    0.81
    omkc-u           50.00 0.00   26498.2    92.62   35.27
    omkc-dd          41.15 0.50   26498.2    92.62   35.46
    omkc-sd          50.00 0.00   13872.3   150.61   20.67
    spa              36.62 0.61    8685.2    93.5    11.7
table1 a9a
    perceptron-star  20.43 0.13    9980.1    67.4    22.5
    omkc-u           20.60 0.10  234008.7   373.8  1178.5
    omkc-dd          19.20 0.12  234008.7   373.8  1171.6
    omkc-sd          18.93 0.10  155393.9   560.9   778.9
    spa              16.10 0.12    7092.3   328.0    22.1
table2 a9a
    rbp              20.46 0.24    7088       0      38.2
    forgetron        20.78 0.35    7088       0      54.9
    bogd             19.27 0.08    7088       0      42.1
    bpas             17.09 0.10    7088       0      42.4
    spa              16.10 0.12    7092.3   328.0    22.1
table2 ijcnn1
    rbp               8.75 0.76    5648       0      18.4
    forgetron         8.74 0.59    5648       0      21.6
    bogd              9.71 0.01    5648       0      21.6
    bpas              9.68 0.04    5648       0      21.3
    spa               7.75 0.61    5653     369.2    12.9
table2 codrna
    rbp               9.44 0.27   12624       0     188.9
    forgetron         9.73 0.24   12624       0     241.4
    bogd             16.91 0.05   12624       0     225.2
    bpas              5.62 0.06   12624       0     239.7
    spa               4.34 0.03   12631     196.5    94.7
table2 SUSY
    rbp              41.45 0.33    1984       0     158.2
    forgetron        41.65 0.05    1984       0     227.3
    bogd             41.56 0.02    1984       0     171.6
    bpas             35.09 0.48    1984       0     167.6
    spa              34.57 0.36    1978.8   170.9    70.9
"""


def _parse(text: str) -> dict:
    out, key, cells = {}, None, None

    def close():
        if key is not None:
            out[key] = PaperBlock(key[0], key[1], *({a: c[i] for a, c in cells.items()} for i in range(3)))

    for line in text.strip().splitlines():
        if not line.startswith(" "):
            close()
            key, cells = tuple(line.split()), {}
        else:
            algo, m, ms, s, ss, t = line.split()
            cells[algo] = (Cell(float(m), float(ms)), Cell(float(s), float(ss)), Cell(float(t), None))
    close()
    return out


#: (table, paper dataset name) -> :class:`PaperBlock`, in the paper's order.
TABLES: dict[tuple[str, str], PaperBlock] = _parse(_TABLE)

#: paper dataset statistics (appendix "Table 3": T and d).
PAPER_DATASETS = {
    "german": BomklDataset("german", 1000, 24),
    "svmguide3": BomklDataset("svmguide3", 1243, 21),
    "madelon": BomklDataset("madelon", 2000, 500),
    "a9a": BomklDataset("a9a", 48842, 123),
    "ijcnn1": BomklDataset("ijcnn1", 49990, 22),
    "codrna": BomklDataset("codrna", 271617, 8),
    "SUSY": BomklDataset("SUSY", 1000000, 18),
}

#: paper dataset name -> :class:`BomklSource` (what we run instead, and why).
DATASETS: dict[str, BomklSource] = {
    "german": BomklSource(
        "german.numer",
        "LIBSVM german.numer (unscaled), 1,000 x 24 -- same data as the paper; the file carries "
        "the authors' 20 random permutations (ID_all), we use its first ones.",
    ),
    "svmguide3": BomklSource("svmguide3", "LIBSVM svmguide3 training split, 1,243 x 21 -- same data as the paper."),
    "madelon": BomklSource("madelon", "MADELON training split, 2,000 x 500 -- the paper's T = 2,000."),
    "a9a": BomklSource(
        "a9a",
        "LIBSVM a9a training split only, 32,561 x 123; the paper's T = 48,842 is train + test (Adult). "
        "Subset of the paper's rows.",
        substitute=True,
    ),
    "ijcnn1": BomklSource(
        "ijcnn1",
        "LIBSVM ijcnn1: the first 49,990 rows of ijcnn1_all (= the training split, verified in "
        "SOURCES.md) -- the paper's T = 49,990.",
        rows=49990,
    ),
    "codrna": BomklSource(
        "codrna",
        "cod-rna: only the 59,535-row LIBSVM training split is available; the paper's T = 271,617 "
        "(the cod-rna test split). Different rows of the same problem.",
        substitute=True,
    ),
    "SUSY": BomklSource(
        "susy",
        "SUSY: only a 30,000-row subsample (raw features) is available; the paper used a 1,000,000-row "
        "subsample of UCI SUSY, with beta = 300. We keep beta = 300, so SPA stores far fewer SVs than the "
        "paper's 1,979: at most T/300 per kernel. On a generated 18-feature stream SPA goes from 301 SVs and 44.1 % "
        "mistakes at 30,000 rows to 1,772 SVs and 29.8 % at 1,000,000 (docs/reproduction.md, "
        "python -m omkl_dist.pipelines.studies.susy).",
        substitute=True,
    ),
}


#: What ``scaling="paper"`` means per paper dataset (the outcome of the scaling study in
#: docs/reproduction.md; the scaler is fitted on the whole dataset).
PAPER_SCALING: dict[str, str] = {name: "none" for name in DATASETS}


# the cod-rna rows' common explanation (the numbers differ per algorithm)
_CODRNA_RAW = (
    "measured (seed 0, permutations 0-2): on raw features -- column 1 spans -1,868..0, column 2 67..133, the "
    "other six lie in [0.08, 0.48] -- the kernels see mostly column 1 and learning stalls ({raw}); with the features "
    "standardised (--scaling standard) {standard}. The paper does not say how it scaled cod-rna, and its rows are "
    "the 271,617 of the test split, 4.6x this substitute's 59,535: a rate still falling at the end of ours is "
    "likely to end lower on a stream that long (docs/reproduction.md's scaling study: every scaling helps, none "
    "reaches the paper's)."
)


#: Why a row stays flagged where the paper's cell is not simply a majority-class classifier's rate
#: (that case is recognised from the data, see ``reproduce.explain_bomkl_flag``): (dataset, algorithm) -> text.
FLAG_NOTES: dict[tuple[str, str], str] = {
    ("german", "perceptron-star"): (
        "measured over the file's 10 permutations (the authors' ID_all), raw features: the best fixed kernel's "
        "Perceptron averages 35.12 % (gaussian sigma = 8; sigma = 16 35.30 %, sigma = 4 35.88 %), single permutations "
        "reach 32.6 % at best -- no kernel chosen in advance gives the paper's 32.07 ± 0.90 on average."
    ),
    ("madelon", "spa"): (
        "measured on raw madelon, permutation 0: the gaussians with sigma <= 16 give exactly 0 between distinct rows "
        "(exp underflow at squared distances ~1e5-1e6), so their classifiers never score; the sigma = 64 component "
        "alone makes 710/2000 = 35.5 % mistakes (sigma = 32: 39 %), the paper's 36.62 % -- the paper's SPA ended up "
        "voting with sigma = 64. Ours does not: passive-aggressive steps keep the polynomial components' scores O(1) "
        "with hinge losses as small as the gaussians' (~1 each), so Hedge keeps all weights within 0.04-0.07 and the "
        "polynomial scores, far above the gaussians' e^-12-sized ones, decide the vote (hedge_loss='mistake' puts "
        "weight 0.54 on sigma = 32 but still votes at chance, 49.1 %); no scaling reproduces it (47.3-50.6 %)."
    ),
    ("codrna", "spa"): _CODRNA_RAW.format(
        raw="12.98 % over the stream, 12.74-12.96 % over its last quarter",
        standard="SPA makes 6.85 ± 0.26 %, falling from 8.4-10.0 % in the stream's first quarter to 5.6-5.9 % in its "
        "last (the paper: 4.34)",
    ),
    ("codrna", "bpas"): _CODRNA_RAW.format(
        raw="12.68 % over the stream, 12.0-12.7 % over its last quarter",
        standard="BPAS makes 7.66 ± 0.10 %, falling from 8.2-8.8 % in the first quarter to 7.0-7.7 % in the last "
        "(the paper: 5.62)",
    ),
    ("codrna", "rbp"): _CODRNA_RAW.format(
        raw="24.31 % over the stream, 23.5-24.4 % over its last quarter",
        standard="RBP makes 11.19 ± 0.25 %, falling from 13.5-14.1 % in the first quarter to 9.9-11.9 % in the last "
        "(the paper: 9.44)",
    ),
    ("codrna", "forgetron"): _CODRNA_RAW.format(
        raw="23.87 % over the stream", standard="Forgetron makes 11.30 ± 0.17 % (the paper: 9.73)"
    ),
    **{
        ("a9a", algorithm): (
            f"not the substitute's rows: on the paper's own 48,842 (a9a's training and test splits together, its T), "
            f"{label} makes {rates} % (seed 0, permutations 0-2) against the paper's {paper}, as on the training split "
            "alone; its rate is flat along the stream. The rest of the gap is not explained."
        )
        for algorithm, label, rates, paper in (
            ("rbp", "RBP", "21.50-21.72", "20.46 ± 0.24"),
            ("forgetron", "Forgetron", "21.47-21.82", "20.78 ± 0.35"),
        )
    },
    ("a9a", "bogd"): (
        "the paper gives no lambda for BOGD; ours is 1/T^2 (9.4e-10 on a9a), which makes 23.06-23.17 % on "
        "permutations 0-1; measured on the same permutations, lambda = 0.01 makes 19.74-19.81 %, within tolerance "
        "of the paper's 19.27 (lambda = 1e-4: 21.9-23.7 %, 0.1, the C++ toolbox's default: 24.1 %): a lambda near "
        "0.01 reproduces the paper's row, which does not state its own."
    ),
    ("SUSY", "spa"): (
        "SPA stores about 150 support vectors here (151 on permutation 0) against the paper's 1,979: with beta = 300 "
        "it keeps at most T/300 per kernel, and T is this subsample's 30,000 rows, not the paper's 1,000,000 (see the "
        "dataset's note: on a generated 18-feature stream SPA goes from 44.1 % mistakes at 30,000 rows to 29.8 % at "
        "1,000,000); no scaling brings it within tolerance (36.2-46.0 %, docs/reproduction.md's scaling study)."
    ),
    **{
        ("SUSY", algorithm): (
            f"this 30,000-row subsample's raw features give {raw} % (3 permutations); with the features scaled to "
            f"[-1, 1] (--scaling minmax-sym) it makes {sym} % against the paper's {paper} %, within tolerance "
            "(docs/reproduction.md's scaling study): the paper does not say how it scaled SUSY, and its rows are "
            "1,000,000 others, so raw features stay the reproduction's choice, as on the paper's own datasets."
        )
        for algorithm, raw, sym, paper in (
            ("rbp", "36.20", "41.61", "41.45"),
            ("forgetron", "35.75", "41.53", "41.65"),
            ("bogd", "35.96", "42.29", "41.56"),
            ("bpas", "26.83", "34.63", "35.09"),
        )
    },
}


#: Budget per kernel of the Table 2 baselines: the paper sets 16 B ≈ SPA's #SV (section 4.4); its
#: printed baseline #SV is exactly 16 B (a9a 7088 = 16 x 443, ijcnn1 5648, codrna 12624, SUSY 1984).
BASELINE_BUDGET: dict[str, int] = {
    name: int(round(block.sv["spa"].mean / 16)) for (table, name), block in TABLES.items() if table == "table2"
}
