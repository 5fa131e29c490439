"""Naive MKBoost (Xia & Hoi, TKDE 2013), Algorithms 1-4, straight from the paper, for ±1 labels.

One loop per trial and one SVM per kernel: each kernel's Gram matrices come from the formulas in
plain numpy (‖x-y‖² summed directly, no shared products, no distinct-row shortcut), each SVM is a
scikit-learn ``SVC(kernel="precomputed")`` trained on the resample's Gram matrix and applied to the
whole training set. No executors, no sparse bookkeeping.

The random numbers are the library's definition (the only thing shared with the fast path): trial t
of one-vs-one pair p draws from ``np.random.default_rng([seed, p, t])`` -- first the resample
(``rng.choice`` with p = D_t; redrawn up to 10 more times while it lacks a class, then the heaviest
example of each missing class is appended), then, for S1/S2, one uniform per kernel (kernel j is
trained iff u_j < S_t(j)). Conventions of the library, also followed here: errors are clipped to
[1e-10, 1 - 1e-10] inside the logs, sign(0) = +1 (an SVM decision value within 1e-10 (|b| + Σ|y α|) of
0 is a 0), boosting stops on ε_t = 0 (trial kept) or
ε_t >= 0.5 (trial dropped).
"""

from __future__ import annotations

import numpy as np
from sklearn.svm import SVC
from sklearn.utils.multiclass import _ovr_decision_function

EPS = 1e-10


def gram(spec, A, B):
    """κ(A[i], B[j]) from the formulas (reads only the spec's kind and parameter)."""
    if spec.kind == "gaussian":
        sq = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1)
        return np.exp(-sq / (2.0 * spec.sigma**2))
    if spec.kind == "polynomial":
        return (A @ B.T) ** spec.p
    if spec.kind == "linear":
        return A @ B.T
    raise ValueError(spec.kind)


def half_log_odds(e):
    e = min(max(e, EPS), 1.0 - EPS)
    return 0.5 * np.log((1.0 - e) / e)


def sign(v):
    return np.where(v >= 0.0, 1.0, -1.0)


def svm_predict(svm, K):
    """±1 of the SVM's decision values; |f| <= 1e-10 (|b| + Σ|y α|) is rounding noise and counts as 0."""
    f = svm.decision_function(K)
    scale = abs(svm.intercept_[0]) + np.abs(svm.dual_coef_).sum()
    return sign(np.where(np.abs(f) <= 1e-10 * scale, 0.0, f))


def naive_mkboost(X, y, specs, *, variant, n_trials, ratio, beta, C, seed, pair=0):
    """Boost on (X, y ±1); returns a dict with the trials (α_t, kernels, α_t^j, ε_t, the SVMs)."""
    N, M = len(y), len(specs)
    D = np.full(N, 1.0 / N)  # D_1(i) = 1/N
    S = np.ones(M)  # S_1(j) = 1
    n = max(2, int(round(ratio * N)))
    trials = []
    for t in range(n_trials):
        rng = np.random.default_rng([seed, pair, t])
        # sample n examples using distribution D_t
        for _ in range(11):
            idx = rng.choice(N, size=n, replace=True, p=D)
            if set(y[idx].tolist()) == {-1.0, 1.0}:
                break
        else:
            for label in (-1.0, 1.0):
                if label not in y[idx]:
                    heaviest = max((i for i in range(N) if y[i] == label), key=lambda i: (D[i], -i))
                    idx = np.append(idx, heaviest)
        # sample a set of kernels K_t by sampling probability S_t (S1/S2)
        if variant in ("S1", "S2"):
            u = rng.random(M)
            K_t = [j for j in range(M) if u[j] < S[j]]
        else:
            K_t = list(range(M))
        h, eps, svms = {}, {}, {}
        for j in K_t:
            # train weak classifier with kernel k_j on the sample
            svm = SVC(kernel="precomputed", C=C).fit(gram(specs[j], X[idx], X[idx]), y[idx])
            svms[j] = svm
            h[j] = svm_predict(svm, gram(specs[j], X, X[idx]))
            # training error over D_t on the whole training set
            eps[j] = np.sum(D * (h[j] != y))
            if variant in ("S1", "S2"):
                S[j] = S[j] * beta ** eps[j]
        if variant in ("S1", "S2"):
            S = S / S.max()
        if variant in ("D1", "S1"):
            best = min(K_t, key=lambda j: (eps[j], j))
            members, member_alpha = [best], {best: 1.0}
            h_t = h[best]
        else:
            members = K_t
            member_alpha = {j: half_log_odds(eps[j]) for j in K_t}
            score = np.zeros(N)
            for j in K_t:
                score = score + member_alpha[j] * h[j]
            h_t = sign(score)
        eps_t = np.sum(D * (h_t != y))
        if eps_t >= 0.5:
            break
        alpha_t = half_log_odds(eps_t)
        trials.append(
            {
                "alpha": alpha_t,
                "error": eps_t,
                "kernels": tuple(members),
                "kernel_alphas": np.array([member_alpha[j] for j in members]),
                "svms": [(specs[j], X[idx], svms[j], member_alpha[j]) for j in members],
            }
        )
        if eps_t == 0.0:
            break
        D = D * np.exp(-alpha_t * y * h_t)
        D = D / D.sum()
    return {"trials": trials}


def naive_decision(model, X):
    """Σ_t α_t h_t(x), with h_t the kept SVM (D1/S1) or the signed α_t^j-vote of the SVMs (D2/S2)."""
    total = np.zeros(len(X))
    for trial in model["trials"]:
        vote = np.zeros(len(X))
        for spec, Xs, svm, a in trial["svms"]:
            vote = vote + a * svm_predict(svm, gram(spec, X, Xs))
        total = total + trial["alpha"] * sign(vote)
    return total


def naive_ovo(X, codes, n_classes, specs, X_test, **params):
    """One-vs-one over class indices ``codes``: pair p = (i, j), +1 = class j, stream pair index p.

    Returns (models per pair, predicted class indices on X_test via scikit-learn's OvO vote).
    """
    models, predictions, confidences = [], [], []
    p = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            rows = np.flatnonzero((codes == i) | (codes == j))
            y = np.where(codes[rows] == j, 1.0, -1.0)
            model = naive_mkboost(X[rows], y, specs, pair=p, **params)
            score = naive_decision(model, X_test)
            models.append(model)
            predictions.append((score >= 0.0).astype(int))
            confidences.append(score)
            p += 1
    decision = _ovr_decision_function(np.array(predictions).T, np.array(confidences).T, n_classes)
    return models, np.argmax(decision, axis=1)
