"""The OMKC paper's Tables 3 and 4, transcribed as data, and how its datasets map onto ours.

Source: Hoi, Jin, Zhao & Yang, "Online Multiple Kernel Classification", Machine Learning 90(2),
2013 (``/work/shared/papers/omkc_online_multiple_kernel_classification.md``), section 5:

* Table 3: Perceptron (linear kernel), Perceptron(u), Perceptron(*), OM-2, OMKC(D,D);
* Table 4: OM-2, OMKC(D,D), OMKC(D,S), OMKC(S,D), OMKC(S,S).

Both tables repeat the OM-2 and OMKC(D,D) rows; they agree exactly (checked by
``tests/test_reproduce.py`` against the paper text), so :data:`PAPER` stores every algorithm once.
Every cell is ``mean ± std`` over 20 random permutations, one pass each: mistake rate in percent,
number of support vectors, learning time in seconds (Matlab, kernels precomputed, 2.3 GHz PC).

Setup (paper section 5.1): 16 kernels -- polynomial ``(x·y)^p``, p = 1, 2, 3, and Gaussian
``exp(-|x-y|^2 / 2σ^2)``, σ = 2^-6 .. 2^6 (our pool ``"omkc16"``); β = 0.8, δ = 0.01;
Perceptron(*) picks its kernel on the first 10 % of the stream.

:data:`DATASETS` says, per paper dataset, which of our files stands in for it and how faithfully
(``substitute=True`` marks a different dataset of the same family, e.g. w1a for w5a). dorothea and
spambase are not among our datasets and are skipped by the reproduction runner.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALGORITHMS", "ALGORITHM_LABELS", "DATASETS", "PAPER", "DataSource", "PaperDataset", "Cell", "IMPLEMENTED"]

#: Algorithm keys in the paper's column order (Table 3 then the rest of Table 4).
ALGORITHMS = ("perceptron", "perceptron-u", "perceptron-star", "om2", "omkc-dd", "omkc-ds", "omkc-sd", "omkc-ss")

ALGORITHM_LABELS = {
    "perceptron": "Perceptron",
    "perceptron-u": "Perceptron(u)",
    "perceptron-star": "Perceptron(*)",
    "om2": "OM-2",
    "omkc-dd": "OMKC(D,D)",
    "omkc-ds": "OMKC(D,S)",
    "omkc-sd": "OMKC(S,D)",
    "omkc-ss": "OMKC(S,S)",
}

#: Algorithms this package implements (all of the tables').
IMPLEMENTED = ALGORITHMS


@dataclass(frozen=True)
class Cell:
    """One ``mean ± std`` entry of the paper."""

    mean: float
    std: float


@dataclass(frozen=True)
class PaperDataset:
    """One dataset block of Tables 3/4: size, the paper's best single kernel, and the cells."""

    name: str
    n: int
    d: int
    best_kernel: str
    mistake: dict  # algorithm -> Cell, mistake rate in percent
    sv: dict  # algorithm -> Cell, number of support vectors
    time: dict  # algorithm -> Cell, seconds


@dataclass(frozen=True)
class DataSource:
    """Which of our datasets stands in for a paper dataset.

    ``registry`` is a name for :func:`omkl_dist.storage.resolve_dataset` (None: we do not have it);
    ``repair`` names a row/feature fix applied before scaling (see ``reproduce.load_paper_dataset``);
    ``substitute`` is True when the data are a different dataset, not a different copy.
    """

    registry: str | None
    note: str
    substitute: bool = False
    repair: str | None = None


# Transcribed from Tables 3 and 4 (header: dataset, n and d as printed in Table 3, best kernel expert;
# then one row per algorithm: mistake % mean std | #SV mean std | time s mean std).
_TABLE = """
ionosphere  n=351 d=34 best=gaussian(sigma=1)
    perceptron        26.82  1.63       94.2    5.7     0.004  0.000
    perceptron-u      18.73  1.23       65.8    4.3     0.003  0.000
    perceptron-star   22.07  6.77       77.5   23.7     0.042  0.002
    om2               17.41  1.20      128.5    4.4     0.113  0.001
    omkc-dd           16.07  1.42     1547.5   53.0     0.384  0.024
    omkc-ds           17.21  1.32      184.6   62.8     0.342  0.007
    omkc-sd           17.74  1.37      828.0   46.2     0.326  0.003
    omkc-ss           17.45  1.51      344.6  102.5     0.218  0.006
votes84  n=435 d=16 best=polynomial(p=1)
    perceptron         8.17  0.73       35.5    3.2     0.004  0.000
    perceptron-u       8.68  0.62       37.8    2.7     0.004  0.000
    perceptron-star    9.45  1.94       41.1    8.4     0.045  0.002
    om2                7.21  0.68       56.5    2.3     0.124  0.001
    omkc-dd            7.38  0.69      959.6   40.2     0.406  0.017
    omkc-ds            8.02  0.60      100.8   52.6     0.391  0.004
    omkc-sd            6.71  0.55      511.4   25.6     0.384  0.003
    omkc-ss            7.22  0.99      245.8   76.5     0.252  0.009
wdbc  n=569 d=30 best=gaussian(sigma=64)
    perceptron        34.51  1.82      196.3   10.3     0.007  0.000
    perceptron-u      41.52  3.70      236.3   21.0     0.008  0.000
    perceptron-star   12.29  1.01       70.0    5.7     0.065  0.001
    om2               41.70  4.06      237.3   23.1     0.214  0.007
    omkc-dd           11.70  1.01     3032.2   37.3     0.597  0.013
    omkc-ds           11.66  0.75      117.3   54.0     0.588  0.014
    omkc-sd           12.13  0.85      918.5   49.4     0.513  0.003
    omkc-ss           11.16  0.94      361.0  105.0     0.286  0.009
breast  n=683 d=9 best=gaussian(sigma=8)
    perceptron        26.73  1.19      182.6    8.1     0.008  0.000
    perceptron-u      41.90  3.40      286.1   23.2     0.009  0.001
    perceptron-star    6.12  0.79       41.8    5.4     0.068  0.001
    om2               44.33  3.88      303.4   26.4     0.276  0.015
    omkc-dd            4.86  0.51     1606.6   49.9     0.641  0.017
    omkc-ds            5.43  0.46       89.5   59.7     0.634  0.017
    omkc-sd            4.24  0.45      545.9   28.5     0.602  0.007
    omkc-ss            4.36  0.56      220.6   74.3     0.350  0.013
australian  n=690 d=14 best=gaussian(sigma=2)
    perceptron        39.54  1.51      272.9   10.4     0.010  0.001
    perceptron-u      39.50  2.70      272.6   18.6     0.010  0.001
    perceptron-star   38.04  2.38      262.4   16.4     0.091  0.003
    om2               39.62  2.88      273.4   19.9     0.266  0.006
    omkc-dd           37.67  1.20     4743.8   70.0     0.779  0.017
    omkc-ds           38.13  1.50      522.4  272.1     0.766  0.017
    omkc-sd           39.64  1.46     3020.4   82.2     0.731  0.006
    omkc-ss           38.60  1.38     1911.0  418.9     0.538  0.013
diabetes  n=768 d=8 best=gaussian(sigma=32)
    perceptron        44.14  1.86      339.0   14.3     0.012  0.001
    perceptron-u      45.18  2.19      347.0   16.8     0.012  0.001
    perceptron-star   35.55  2.07      273.0   15.9     0.099  0.006
    om2               45.35  2.18      348.3   16.7     0.321  0.014
    omkc-dd           33.69  1.29     4614.6   63.8     0.886  0.021
    omkc-ds           34.00  1.41      407.2  223.7     0.878  0.022
    omkc-sd           32.53  1.30     3084.7   81.1     0.833  0.018
    omkc-ss           33.01  1.26     2135.2  410.9     0.626  0.016
fourclass  n=862 d=2 best=gaussian(sigma=8)
    perceptron        36.29  1.09      312.8    9.4     0.013  0.001
    perceptron-u      35.82  1.56      308.8   13.4     0.012  0.001
    perceptron-star    3.78  0.76       32.6    6.6     0.092  0.001
    om2               35.92  1.65      309.6   14.2     0.348  0.005
    omkc-dd            3.19  0.38     3131.0   33.5     0.862  0.010
    omkc-ds            3.54  0.42       97.5   33.1     0.850  0.004
    omkc-sd            3.06  0.37      600.7   22.5     0.747  0.012
    omkc-ss            3.31  0.45      117.8   44.3     0.355  0.016
splice  n=1000 d=60 best=gaussian(sigma=4)
    perceptron        34.51  1.41      345.1   14.1     0.015  0.001
    perceptron-u      30.44  0.97      304.4    9.7     0.013  0.001
    perceptron-star   29.28  3.84      292.8   38.4     0.128  0.004
    om2               30.79  1.23      307.9   12.3     0.417  0.013
    omkc-dd           24.57  1.07     5830.9   90.6     1.122  0.018
    omkc-ds           25.03  0.89      251.6   61.1     1.086  0.015
    omkc-sd           26.86  1.27     3352.7   90.2     1.037  0.013
    omkc-ss           26.55  1.15     1627.2  633.8     0.696  0.018
dorothea  n=1150 d=10000 best=gaussian(sigma=8)
    perceptron        10.07  0.50      115.8    5.8     0.031  0.001
    perceptron-u      10.64  0.61      122.4    7.0     0.031  0.001
    perceptron-star   11.21  2.93      128.9   33.7     0.169  0.004
    om2               10.70  0.72      124.1    7.6     0.435  0.013
    omkc-dd            8.92  0.37     7855.3   69.9     1.647  0.071
    omkc-ds            9.92  0.50      230.3  127.6     1.597  0.020
    omkc-sd            8.03  0.46     1492.8   41.9     1.130  0.015
    omkc-ss            8.31  0.46      537.6   95.8     0.662  0.024
svmguide3  n=1243 d=22 best=gaussian(sigma=0.5)
    perceptron        32.98  0.62      410.0    7.7     0.018  0.001
    perceptron-u      27.73  0.85      344.7   10.5     0.016  0.000
    perceptron-star   27.18  2.36      337.9   29.4     0.163  0.004
    om2               22.84  0.50      812.1   10.3     0.695  0.004
    omkc-dd           26.00  0.78     6107.4  107.7     1.354  0.011
    omkc-ds           26.55  0.73      448.2  164.5     1.292  0.008
    omkc-sd           23.05  0.50     3900.0   68.3     1.273  0.008
    omkc-ss           23.91  0.95     2174.1  573.9     0.902  0.011
svmguide1  n=3089 d=4 best=gaussian(sigma=32)
    perceptron        23.12  0.34      714.3   10.4     0.071  0.002
    perceptron-u      19.12  0.56      590.5   17.4     0.060  0.002
    perceptron-star    5.68  0.74      175.3   22.8     0.331  0.007
    om2               19.32  0.61      596.7   18.9     2.116  0.193
    omkc-dd            5.31  0.29     7089.4   70.3     3.215  0.030
    omkc-ds            5.60  0.31      253.7  222.1     3.038  0.021
    omkc-sd            4.78  0.25     2286.6  104.6     2.770  0.030
    omkc-ss            4.90  0.30      970.4  239.5     1.493  0.040
a3a  n=3185 d=123 best=polynomial(p=3)
    perceptron        22.55  0.51      718.1   16.3     0.076  0.003
    perceptron-u      22.09  0.56      703.6   17.9     0.074  0.002
    perceptron-star   22.07  0.64      702.8   20.3     0.502  0.006
    om2               20.23  0.39      861.9   15.8     2.704  0.316
    omkc-dd           21.97  0.52    16233.6  120.3     4.355  0.042
    omkc-ds           22.57  0.52     1044.4  541.5     4.211  0.050
    omkc-sd           20.19  0.42     8361.4  143.7     3.590  0.021
    omkc-ss           20.49  0.50     4758.7  919.3     2.360  0.031
spambase  n=4601 d=57 best=gaussian(sigma=4)
    perceptron        47.37  0.66     2179.7   30.5     0.321  0.006
    perceptron-u      58.18  1.54     2677.1   71.0     0.385  0.018
    perceptron-star   26.22  2.09     1206.6   96.3     0.913  0.038
    om2               58.16  1.50     2676.1   69.0     5.184  0.239
    omkc-dd           24.36  0.45    27390.0  180.0     9.653  0.141
    omkc-ds           24.72  0.46     1169.3  269.5     9.445  0.097
    omkc-sd           24.34  0.40    14316.6  180.6     6.341  0.072
    omkc-ss           24.13  0.49     6324.3 2070.9     3.832  0.063
mushrooms  n=8124 d=112 best=gaussian(sigma=0.25)
    perceptron         1.38  0.10      112.2    8.4     0.074  0.003
    perceptron-u       0.51  0.04       41.4    3.6     0.053  0.002
    perceptron-star    0.38  0.02       30.6    1.4     0.777  0.004
    om2                0.37  0.04       47.1    2.8     8.691  0.070
    omkc-dd            0.32  0.04     9874.7   74.1     9.275  0.124
    omkc-ds            0.37  0.03      113.0   37.4     9.031  0.099
    omkc-sd            0.29  0.05      694.5   16.1     6.669  0.048
    omkc-ss            0.35  0.04      128.9   40.2     2.724  0.129
w5a  n=9888 d=300 best=gaussian(sigma=2)
    perceptron        12.71  0.14     1257.1   13.7     0.419  0.009
    perceptron-u       3.09  0.09      305.3    8.5     0.137  0.004
    perceptron-star    3.27  0.31      323.1   31.1     1.284  0.023
    om2                2.88  0.10     2007.6   58.6    17.548  2.325
    omkc-dd            3.19  0.10    28705.4  143.4    25.191  0.268
    omkc-ds            3.78  0.10      424.8  160.6    24.843  0.253
    omkc-sd            2.54  0.07     4403.0  127.3     9.449  0.079
    omkc-ss            2.71  0.10     1568.7  653.9     4.727  0.085
"""


def _parse(text: str) -> dict:
    out, head, cells = {}, None, None

    def close():
        if head is not None:
            name, n, d, best = head
            out[name] = PaperDataset(name, n, d, best, *({a: Cell(*c[i]) for a, c in cells.items()} for i in range(3)))

    for line in text.strip().splitlines():
        if not line.startswith(" "):
            close()
            name, n, d, best = line.split()
            head = (name, int(n.removeprefix("n=")), int(d.removeprefix("d=")), best.removeprefix("best="))
            cells = {}
        else:
            algo, *v = line.split()
            values = [float(x) for x in v]
            cells[algo] = [(values[0], values[1]), (values[2], values[3]), (values[4], values[5])]
    close()
    return out


#: paper dataset name -> :class:`PaperDataset`, in the paper's order.
PAPER: dict[str, PaperDataset] = _parse(_TABLE)

#: paper dataset name -> :class:`DataSource` (what we run instead, and why).
DATASETS: dict[str, DataSource] = {
    "ionosphere": DataSource("ionosphere", "UCI ionosphere via PMLB, 351 x 34 -- same data as the paper."),
    "votes84": DataSource(
        "votes84",
        "UCI house-votes-84 via PMLB, 435 x 16 -- same rows. PMLB label-encodes each vote as "
        "0 = '?', 1 = 'n', 2 = 'y'; we recode it as n = -1, ? = 0, y = +1 (the paper does not state its "
        "coding; this one matches its numbers best).",
        repair="votes-signed",
    ),
    "wdbc": DataSource("wdbc", "UCI WDBC via PMLB, 569 x 30 -- same data as the paper."),
    "breast": DataSource(
        "breast-cancer",
        "UCI breast-cancer-wisconsin via PMLB has 699 rows; PMLB label-encoded "
        "Bare_Nuclei as text (codes 0..10 = '1','10','2',...,'9','?'). We decode it and drop the 16 "
        "rows with a missing value: 683 x 9, the paper's size (= LIBSVM breast-cancer without its "
        "sample-ID column).",
        repair="breast-missing",
    ),
    "australian": DataSource("australian", "LIBSVM australian (unscaled), 690 x 14 -- same data as the paper."),
    "diabetes": DataSource(
        "diabetes",
        "UCI Pima diabetes via PMLB, 768 x 8 -- same data (Table 2 of the paper says 9 dimensions, Table 3 says 8).",
    ),
    "fourclass": DataSource(
        "fourclass",
        "LIBSVM fourclass_scale, 862 x 2: the [-1, 1]-scaled copy; the unscaled LIBSVM "
        "fourclass is not among our datasets.",
    ),
    "splice": DataSource(
        "splice",
        "LIBSVM splice training split (splice.train, 1,000 x 60) -- matches the paper's "
        "n = 1000; the 2,175-row test split is not used.",
    ),
    "dorothea": DataSource(None, "not available (KDD Cup 2001 dorothea is not in the datasets folder)."),
    "svmguide3": DataSource(
        "svmguide3",
        "LIBSVM svmguide3 training split, 1,243 x 21 -- matches the paper's n = 1243. The "
        "paper lists 22 dimensions, this dense conversion has 21 columns (if the missing one is a "
        "feature that is zero in every row, no kernel value changes).",
    ),
    "svmguide1": DataSource(
        "svmguide1", "LIBSVM svmguide1 training split (unscaled), 3,089 x 4 -- matches the paper's n."
    ),
    "a3a": DataSource(
        "a1a",
        "a3a is not available: a1a (1,605 x 123, a smaller subset of the same Adult data "
        "with the same 123 binary features) stands in.",
        substitute=True,
    ),
    "spambase": DataSource(None, "not available (UCI spambase is not in the datasets folder)."),
    "mushrooms": DataSource("mushrooms", "LIBSVM mushrooms, 8,124 x 112 -- same data as the paper."),
    "w5a": DataSource(
        "w1a",
        "w5a (9,888 rows) is not available: w1a (2,477 x 300, a smaller subset of the same "
        "web-page data with the same 300 binary features) stands in.",
        substitute=True,
    ),
}
