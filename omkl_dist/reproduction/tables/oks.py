"""Tables 1 and 2 of the OKS paper (Yang, Mahdavi, Jin, Yi & Hoi, AAAI 2012), transcribed.

Per task: running time (RT, with the unit of the table), test accuracy (ACC; SOM-SVM and OKS-SVM
as mean ± std over 5 seeds) and the returned kernel id(s) (opt-K; one per seed for SOM/OKS, "NA"
for OM-2, which has no kernel weights). Kernel ids are 1-based over 60 kernels: 15 INRIA feature
types × (linear, polynomial 2, chi-square, gaussian). Pascal07 and Corel5k with the INRIA features
are not available here; ``omkl reproduce oks`` prints these beside the same study on mfeat.
"""

from __future__ import annotations

ALGORITHMS = ("MuTron", "OM-1", "OM-2", "AlSVM", "MuSVM", "SIPMKL", "SOM-SVM", "OKS-SVM")

# task -> algorithm -> (RT text, ACC, ACC std or None, opt-K text)
TABLE1 = {  # Pascal07, RT in hours
    "animal vs vehicle (n=3434)": {
        "MuTron": ("7.2h", 0.8502, None, "11"),
        "OM-1": ("4.7h", 0.8360, None, "13"),
        "OM-2": ("2.5h", 0.8279, None, "NA"),
        "AlSVM": ("0.56h", 0.8812, None, "11"),
        "MuSVM": ("1.3h", 0.8818, None, "15"),
        "SIPMKL": ("53h", 0.8806, None, "34"),
        "SOM-SVM": ("0.03h+0.02h", 0.7603, 0.0732, "1,6,14,20,48"),
        "OKS-SVM": ("0.013h+0.02h", 0.8675, 0.0155, "10,10,11,11,13"),
    },
    "animal vs person (n=2776)": {
        "MuTron": ("5.5h", 0.8193, None, "15"),
        "OM-1": ("3.6h", 0.7783, None, "11"),
        "OM-2": ("2.4h", 0.8402, None, "NA"),
        "AlSVM": ("0.45h", 0.8285, None, "11"),
        "MuSVM": ("0.9h", 0.8285, None, "11"),
        "SIPMKL": ("36h", 0.7435, None, "10"),
        "SOM-SVM": ("0.02h+0.02h", 0.7628, 0.0553, "1,13,25,36,50"),
        "OKS-SVM": ("0.010h+0.02h", 0.8251, 0.0083, "10,11,13,14,16"),
    },
    "person vs vehicle (n=2584)": {
        "MuTron": ("4.1h", 0.8773, None, "16"),
        "OM-1": ("2.7h", 0.7646, None, "15"),
        "OM-2": ("1.4h", 0.8562, None, "NA"),
        "AlSVM": ("0.43h", 0.9049, None, "11"),
        "MuSVM": ("0.8h", 0.9064, None, "15"),
        "SIPMKL": ("31h", 0.8662, None, "14"),
        "SOM-SVM": ("0.015h+0.01h", 0.8678, 0.0332, "9,9,9,29,51"),
        "OKS-SVM": ("0.008h+0.01h", 0.8954, 0.0098, "9,11,13,16,33"),
    },
}
TABLE2 = {  # Corel5k, RT in seconds
    "sky vs people (n=1471)": {
        "MuTron": ("1621s", 0.7126, None, "10"),
        "OM-1": ("997s", 0.8563, None, "16"),
        "OM-2": ("767s", 0.8683, None, "NA"),
        "AlSVM": ("924s", 0.8563, None, "43"),
        "MuSVM": ("1187s", 0.8922, None, "59"),
        "SIPMKL": ("19493s", 0.8503, None, "14"),
        "SOM-SVM": ("14s+18s", 0.7856, 0.0292, "1,7,18,37,54"),
        "OKS-SVM": ("9s+18s", 0.8874, 0.0155, "9,10,11,16,39"),
    },
    "water vs tree (n=1572)": {
        "MuTron": ("2506s", 0.7351, None, "15"),
        "OM-1": ("1470s", 0.7405, None, "15"),
        "OM-2": ("915s", 0.7676, None, "NA"),
        "AlSVM": ("785s", 0.7784, None, "11"),
        "MuSVM": ("1458s", 0.8108, None, "16"),
        "SIPMKL": ("25124s", 0.8324, None, "14"),
        "SOM-SVM": ("17s+24s", 0.7589, 0.0293, "6,12,41,44,52"),
        "OKS-SVM": ("12s+24s", 0.7892, 0.0220, "9,11,13,15,16"),
    },
    "sky vs grass (n=1187)": {
        "MuTron": ("817s", 0.8200, None, "13"),
        "OM-1": ("572s", 0.6933, None, "11"),
        "OM-2": ("447s", 0.8667, None, "NA"),
        "AlSVM": ("493s", 0.9067, None, "11"),
        "MuSVM": ("725s", 0.8867, None, "10"),
        "SIPMKL": ("10808s", 0.8800, None, "14"),
        "SOM-SVM": ("8s+12s", 0.8093, 0.0678, "7,28,28,38,43"),
        "OKS-SVM": ("8s+12s", 0.8920, 0.0098, "11,12,13,15,16"),
    },
}
TABLES = {
    "Table 1: Pascal07 (INRIA features, 60 kernels)": TABLE1,
    "Table 2: Corel5k (INRIA features, 60 kernels)": TABLE2,
}
