"""The MKBoost paper's Tables 1-3 as data, its protocol, and how its datasets map onto ours.

Source: Xia & Hoi, "MKBoost: A Framework of Multiple Kernel Boosting", TKDE 25(7), 2013
(``/work/shared/papers/mkboost_multiple_kernel_boosting.md``), section 3:

* Table 1: the ten datasets (D1-D10) with classes, size and features;
* Table 2: MKBoost-D1, MKBoost-D2, MKL-SD, MKL-SILP, MKL-Level, Lp-MKL;
* Table 3: MKBoost-D1, MKBoost-D2, MKBoost-S1, MKBoost-S2.

The D1/D2 columns of both tables agree exactly, so :data:`PAPER` stores every algorithm once.
Every cell is accuracy mean, std over 20 random 50/50 splits, and training time in seconds (Matlab,
LIBSVM, 3 GHz CPU). MKL-SD is SimpleMKL [18]; MKL-SILP and MKL-Level are
:class:`~omkl_dist.algorithms.mkl.MKLSILP` and :class:`~omkl_dist.algorithms.mkl.MKLLevel`.

Protocol (section 3.3): per run, 50 % of the examples at random for training, the rest for test;
features standardised with the training half's mean and variance; C = 50 for every SVM and MKL
method; 17 kernels (gaussian σ = 2^-6..2^7, polynomial degree 1-3); T = 100, sampling ratio 0.2,
β = 2^-5; one-vs-one for multi-class data. The paper averaged the stochastic variants over 10
repetitions per split; we run each once per split. The MKL toolboxes' defaults include unit-trace
kernel normalisation (:data:`KERNEL_NORMALIZATION`), which the reproduction passes to our MKL
estimators explicitly, with every kernel of the pool (:data:`MIN_NEIGHBORS`; their own defaults are
unit diagonal, no kernel that only memorises the training rows and C by cross-validation).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_LABELS",
    "IMPLEMENTED",
    "DATASETS",
    "PAPER",
    "Cell",
    "PaperDataset",
    "DataSource",
    "TEST_SIZE",
    "C",
    "N_TRIALS",
    "RATIO",
    "BETA",
    "KERNELS",
    "KERNEL_NORMALIZATION",
    "MIN_NEIGHBORS",
    "RUNS",
    "SCALING",
]

TEST_SIZE = 0.5
C = 50.0
N_TRIALS = 100
RATIO = 0.2
BETA = 2.0**-5
KERNELS = "mkboost17"
KERNEL_NORMALIZATION = "trace"  # the MKL toolboxes' default (SimpleMKL's UnitTraceNormalization)
MIN_NEIGHBORS = 0.0  # the MKL baselines learn on every kernel of the pool (none dropped)
RUNS = 20
SCALING = "standard"

#: Algorithm keys in the paper's column order (Table 2, then Table 3's stochastic variants).
ALGORITHMS = ("mkboost-d1", "mkboost-d2", "mkboost-s1", "mkboost-s2", "mkl-sd", "mkl-silp", "mkl-level", "lp-mkl")
ALGORITHM_LABELS = {
    "mkboost-d1": "MKBoost-D1",
    "mkboost-d2": "MKBoost-D2",
    "mkboost-s1": "MKBoost-S1",
    "mkboost-s2": "MKBoost-S2",
    "mkl-sd": "MKL-SD (SimpleMKL)",
    "mkl-silp": "MKL-SILP",
    "mkl-level": "MKL-Level",
    "lp-mkl": "Lp-MKL (p=2)",
}
IMPLEMENTED = ALGORITHMS


@dataclass(frozen=True)
class Cell:
    """Accuracy mean ± std and time (seconds) of one algorithm on one dataset."""

    accuracy: float
    std: float
    seconds: float


@dataclass(frozen=True)
class PaperDataset:
    """One row of Table 1 and its cells from Tables 2-3."""

    key: str
    name: str
    source: str
    n_classes: int
    n: int
    d: int
    cells: dict


@dataclass(frozen=True)
class DataSource:
    """Which of our files stands in for a paper dataset (``registry`` None: we do not have it).

    ``positive`` (binarised datasets): the original labels that become +1, the rest -1.
    ``substitute``: our data or task differ from the paper's (explained in ``note``).
    """

    registry: str | None
    note: str
    substitute: bool = False
    positive: tuple | None = None


DATASETS = {
    "balance-scale": DataSource(None, "not among our datasets (UCI balance-scale without class B, 576 x 4)"),
    "german.numer": DataSource("german.numer", "LIBSVM german.numer, 1000 x 24, the paper's data"),
    "glass": DataSource(
        "glass",
        "the paper's binary glass (2 classes, 10 features) is undocumented; ours is LIBSVM glass.scale "
        "(6 classes, 9 features) binarised as window (UCI types 1-3) vs non-window (types 5-7)",
        substitute=True,
        positive=("1", "2", "3"),
    ),
    "ionosphere": DataSource("ionosphere", "UCI ionosphere via PMLB, 351 x 34, the paper's data"),
    "monks1": DataSource(None, "not among our datasets (UCI MONK's problem 1, 556 x 6)"),
    "sonar": DataSource("sonar", "UCI sonar via PMLB, 208 x 60, the paper's data"),
    "svmguide3": DataSource("svmguide3", "LIBSVM svmguide3 training split, 1243 x 21, the paper's data"),
    "wdbc": DataSource("wdbc", "UCI wdbc via PMLB, 569 x 30, the paper's data"),
    "segment": DataSource("segment", "Statlog segment (LIBSVM segment.scale), 2310 x 19, 7 classes"),
    "vehicle": DataSource("vehicle", "Statlog vehicle via PMLB, 846 x 18, 4 classes"),
}

# Table 1 (key, name, source, C, N, D), then per algorithm: accuracy, std, time (s) from Tables 2-3.
_TABLE = """
D1 balance-scale UCI 2 576 4
    mkboost-d1 0.9858 0.0079 0.7658 | mkboost-d2 0.9907 0.0057 0.8683 | mkboost-s1 0.9878 0.0067 0.4350
    mkboost-s2 0.9886 0.0061 0.3975 | mkl-sd 0.9464 0.0099 2.9520 | mkl-silp 0.9460 0.0132 1.3615
    mkl-level 0.9726 0.0102 5.175 | lp-mkl 0.9809 0.0078 4.1735
D2 german.numer Statlog 2 1000 24
    mkboost-d1 0.7361 0.0117 4.6168 | mkboost-d2 0.7263 0.0094 4.5845 | mkboost-s1 0.7355 0.0106 2.0623
    mkboost-s2 0.7359 0.0079 2.0320 | mkl-sd 0.7001 0.0004 51.8245 | mkl-silp 0.7003 0.0025 46.9960
    mkl-level 0.7 0.0000 8.4915 | lp-mkl 0.7065 0.0055 12.43
D3 glass UCI 2 214 10
    mkboost-d1 0.9885 0.0140 0.6058 | mkboost-d2 0.9890 0.0121 0.4497 | mkboost-s1 0.989 0.0138 0.2732
    mkboost-s2 0.9879 0.0137 0.2727 | mkl-sd 0.9462 0.0181 1.812 | mkl-silp 0.9448 0.0166 2.4105
    mkl-level 0.9458 0.0181 3.57 | lp-mkl 0.9646 0.0170 1.488
D4 ionosphere UCI 2 351 34
    mkboost-d1 0.9426 0.0139 0.697 | mkboost-d2 0.9453 0.0103 0.6048 | mkboost-s1 0.9469 0.0130 0.3547
    mkboost-s2 0.943 0.0152 0.3527 | mkl-sd 0.9306 0.0155 4.376 | mkl-silp 0.9249 0.0255 3.922
    mkl-level 0.93 0.0183 4.0235 | lp-mkl 0.9337 0.0200 2.683
D5 monks1 UCI 2 556 6
    mkboost-d1 0.9522 0.0154 1.163 | mkboost-d2 0.8829 0.0199 1.0960 | mkboost-s1 0.943 0.0153 0.5347
    mkboost-s2 0.8998 0.0221 0.5423 | mkl-sd 0.791 0.0251 8.6205 | mkl-silp 0.7932 0.0311 5.051
    mkl-level 0.7835 0.0232 6.527 | lp-mkl 0.8556 0.0221 5.0955
D6 sonar UCI 2 208 60
    mkboost-d1 0.8183 0.0396 0.5722 | mkboost-d2 0.8021 0.0338 0.4547 | mkboost-s1 0.8186 0.0356 0.2388
    mkboost-s2 0.8076 0.0338 0.2370 | mkl-sd 0.7752 0.0423 2.135 | mkl-silp 0.7791 0.0427 1.9425
    mkl-level 0.7684 0.0407 4.4125 | lp-mkl 0.8024 0.0406 1.012
D7 svmguide3 CWH03a 2 1243 21
    mkboost-d1 0.8158 0.0067 5.2625 | mkboost-d2 0.7923 0.0079 5.2193 | mkboost-s1 0.8132 0.0066 2.4548
    mkboost-s2 0.8065 0.0080 2.4192 | mkl-sd 0.7744 0.0038 62.118 | mkl-silp 0.7746 0.0040 25.4405
    mkl-level 0.7733 0.0036 33.147 | lp-mkl 0.7816 0.0057 16.7775
D8 wdbc UCI 2 569 30
    mkboost-d1 0.9663 0.0107 0.8688 | mkboost-d2 0.9741 0.0074 0.8285 | mkboost-s1 0.9673 0.0102 0.554
    mkboost-s2 0.9701 0.0087 0.5508 | mkl-sd 0.9595 0.0094 2.514 | mkl-silp 0.9595 0.0094 1.576
    mkl-level 0.9597 0.0097 4.9735 | lp-mkl 0.9692 0.0079 5.7715
D9 segment Statlog 7 2310 19
    mkboost-d1 0.9663 0.0030 16.7547 | mkboost-d2 0.9675 0.0026 17.5432 | mkboost-s1 0.9665 0.0034 9.366
    mkboost-s2 0.9677 0.0028 9.2138 | mkl-sd 0.9096 0.0075 171.386 | mkl-silp 0.9076 0.0115 91.966
    mkl-level 0.9101 0.0087 177.194 | lp-mkl 0.9406 0.0064 134.704
D10 vehicle Statlog 4 846 18
    mkboost-d1 0.7877 0.0085 4.1932 | mkboost-d2 0.7848 0.0115 4.5257 | mkboost-s1 0.786 0.0114 2.6175
    mkboost-s2 0.7853 0.0110 2.6172 | mkl-sd 0.6737 0.0191 28.208 | mkl-silp 0.6733 0.0199 21.383
    mkl-level 0.673 0.0186 25.9065 | lp-mkl 0.7371 0.0140 20.429
"""


def _parse(text: str) -> dict:
    table, current = {}, None
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            key, name, source, c, n, d = line.split()
            current = PaperDataset(key, name, source, int(c), int(n), int(d), {})
            table[name] = current
            continue
        for item in line.split("|"):
            algo, acc, std, secs = item.split()
            current.cells[algo] = Cell(float(acc), float(std), float(secs))
    return table


#: Paper dataset name -> :class:`PaperDataset`, in Table 1 order.
PAPER: dict[str, PaperDataset] = _parse(_TABLE)
