"""scikit-learn's own estimator checks (``parametrize_with_checks``) over every estimator.

Small kernel pools keep the ~55 checks per estimator fast; the parameters do not change what is
checked (the input validation, the fit/predict contract, multi-class handling, cloning, pickling).
Every estimator learns multi-class problems (the checks use three classes).
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from omkl_dist import (
    BOGD,
    BPAS,
    MKLSILP,
    OKS,
    OM2,
    OMKC,
    RBP,
    SPA,
    Forgetron,
    KernelPerceptron,
    LpMKL,
    MKBoost,
    MKLLevel,
    OKSRegressor,
    PerceptronStar,
    PerceptronU,
    SimpleMKL,
)

POOL = "gaussian:1;linear"
ESTIMATORS = [
    OMKC(kernels=POOL, block_size=16, random_state=0),
    OMKC(update="S", combination="S", kernels=POOL, block_size=16, random_state=0),
    OM2(kernels=POOL, block_size=16),
    KernelPerceptron(kernel="gaussian:1", block_size=16, random_state=0),
    PerceptronU(kernels=POOL, block_size=16, random_state=0),
    PerceptronStar(kernels=POOL, block_size=16, random_state=0),
    SPA(kernels=POOL, block_size=16, random_state=0),
    # (budget 30: with 10 support vectors per kernel BOGD's random removals, each rescaling the others by
    # B/(B − 1), leave 3-class training accuracy on the checks' 300 blobs at 0.81, under their 0.83)
    RBP(kernels=POOL, budget=30, block_size=16, random_state=0),
    Forgetron(kernels=POOL, budget=30, block_size=16, random_state=0),
    BOGD(kernels=POOL, budget=30, block_size=16, random_state=0),
    BPAS(kernels=POOL, budget=30, block_size=16, random_state=0),
    # (on the checks' random data a narrower pool would leave a first trial no better than chance,
    # which MKBoost refuses as AdaBoost.M1 does)
    MKBoost(n_trials=5, ratio=0.5, kernels="gaussian:0.1,0.5,2;polynomial:2", random_state=0),
    SimpleMKL(kernels=POOL, max_iter=10),
    LpMKL(kernels=POOL, max_iter=10),
    MKLSILP(kernels=POOL, max_iter=10),
    MKLLevel(kernels=POOL, max_iter=10),
    OKS(kernels=POOL, block_size=16, random_state=0),
    OKSRegressor(kernels=POOL, block_size=16, random_state=0),
]


# MKBoost learns each trial on a weighted *resample* (the paper's boosting by sampling): sample_weight
# sets the distribution the rows are drawn from, so weight 2 is not the same draw as a repeated row
# (equal in expectation only) -- the property these two checks test does not hold for sampling.
SAMPLING = (
    "MKBoost trains each boosting trial on a random weighted resample: equal to repeated rows in expectation only"
)
EXPECTED_FAILURES = {
    "MKBoost": {
        "check_sample_weight_equivalence_on_dense_data": SAMPLING,
        "check_sample_weight_equivalence_on_sparse_data": SAMPLING,
    }
}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES.get(type(est).__name__, {}))
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
