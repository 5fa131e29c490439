"""The OKS paper's kernel selectors (MuSVM, AlSVM, OKS-SVM, SOM-SVM, MuTron, OM-1, SOM) and the
`omkl reproduce oks` study, on real data."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from omkl_dist.algorithms import OKS, OMKC, KernelPerceptron
from omkl_dist.algorithms.selectors import OKSSVM, OM1, SOMSVM, AlSVM, MuSVM, MuTron
from omkl_dist.algorithms.selectors._common import C_GRID, gram, validation_split
from omkl_dist.algorithms.selectors.alsvm import centred_alignment
from omkl_dist.kernels import make_pool

from parity_data import subset

POOL = "linear;poly:2;gaussian:2^-1..2^1;chi2:1 @ 0:7;achi2 @ 7:14"


@pytest.fixture(scope="module")
def data(data_dir):
    X, y = subset(data_dir, "australian+minmax", 240)
    return X[:160], y[:160], X[160:], y[160:]


def test_musvm_picks_the_best_validated_kernel_in_process_and_on_dask(data):
    X, y, Xt, yt = data
    model = MuSVM(kernels=POOL, random_state=3).fit(X, y)
    train, val = validation_split(len(X), 3)
    for k, spec in enumerate(model.kernel_pool_):  # each kernel's best C on the split, by hand
        K, Kv = gram(spec, X[train]), gram(spec, X[val], X[train])
        accs = [np.mean(SVC(kernel="precomputed", C=C).fit(K, y[train]).predict(Kv) == y[val]) for C in C_GRID]
        assert model.validation_scores_[k] == max(accs) and model.C_per_kernel_[k] == C_GRID[int(np.argmax(accs))]
    assert model.selected_kernel_ == int(np.argmax(model.validation_scores_))
    svm = SVC(kernel="precomputed", C=model.C_).fit(gram(model.kernel_pool_[model.selected_kernel_], X), y)
    chosen = model.kernel_pool_[model.selected_kernel_]
    np.testing.assert_array_equal(model.predict(Xt), svm.predict(gram(chosen, Xt, X)))
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
        ) as cluster,
        Client(cluster) as client,
    ):
        on_dask = MuSVM(kernels=POOL, random_state=3, client=client).fit(X, y)
    np.testing.assert_array_equal(on_dask.validation_scores_, model.validation_scores_)
    assert on_dask.selected_kernel_ == model.selected_kernel_


def test_alsvm_alignment_is_the_centred_formula(data):
    X, y, _, _ = data
    model = AlSVM(kernels=POOL).fit(X, y)
    train, _ = validation_split(len(X), 0)
    n = len(train)
    H = np.eye(n) - np.ones((n, n)) / n
    yy = np.where(y[train] == np.unique(y)[1], 1.0, -1.0)
    for k, spec in enumerate(model.kernel_pool_):
        Kc, Tc = H @ gram(spec, X[train]) @ H, H @ np.outer(yy, yy) @ H
        expected = np.sum(Kc * Tc) / (np.linalg.norm(Kc) * np.linalg.norm(Tc))
        assert model.alignments_[k] == pytest.approx(expected, rel=1e-10)
    assert model.selected_kernel_ == int(np.argmax(model.alignments_))
    three = np.repeat([0, 1, 2], 10)  # one-hot target for several classes
    assert centred_alignment(np.equal.outer(three, three).astype(float), three) == pytest.approx(1.0)


def test_online_selectors_then_svm(data):
    X, y, Xt, yt = data
    oks_svm = OKSSVM(kernels=POOL, random_state=2).fit(X, y)
    oks = OKS(kernels=POOL, n_epochs=2, shuffle=False, random_state=2).fit(X, y)  # (OKS-SVM's passes)
    assert oks_svm.selected_kernel_ == oks.selected_kernel_
    np.testing.assert_array_equal(oks_svm.selector_.kernel_weights_, oks.kernel_weights_)
    som_svm = SOMSVM(kernels=POOL, betas=(0.3, 0.7), random_state=2).fit(X, y)
    som = som_svm.selector_
    assert som.beta_ in (0.3, 0.7) and som_svm.selected_kernel_ == int(np.argmax(som.kernel_weights_))
    direct = OMKC(kernels=som.kernel_pool_, update="S", combination="S", beta=som.beta_, random_state=2)
    for _ in range(2):
        direct.partial_fit(X, y, classes=np.unique(y))
    np.testing.assert_array_equal(direct.weights_, som.kernel_weights_)
    assert oks_svm.score(Xt, yt) > 0.7 and som_svm.score(Xt, yt) > 0.6


def test_mutron_and_om1(data):
    X, y, Xt, yt = data
    model = MuTron(kernels=POOL, random_state=1).fit(X, y)
    train, val = validation_split(len(X), 1)
    for k, spec in enumerate(model.kernel_pool_):  # each kernel's own Perceptron on the training part
        alone = KernelPerceptron(kernel=spec, n_epochs=1, shuffle=False).fit(X[train], y[train])
        assert model.validation_scores_[k] == pytest.approx(np.mean(alone.predict(X[val]) == y[val]))
    om1 = OM1(kernels=POOL, betas=(0.2, 0.6)).fit(X, y)
    assert om1.beta_ in (0.2, 0.6) and om1.score(Xt, yt) > 0.6
    assert om1.selected_kernel_name_ == make_pool(POOL).names[int(np.argmax(om1.kernel_weights_))]


def test_reproduce_oks_prints_the_papers_tables_and_checks_claims(data_dir):
    from omkl_dist.pipelines.reproduce_oks import format_oks_report, run_reproduce_oks

    report = run_reproduce_oks(studies=["testbed"], tasks=["sonar"], seeds=2, data_dir=data_dir, show_progress=False)
    text = format_oks_report(report)
    assert "animal vs vehicle (n=3434)" in text and "0.8675 ± 0.0155" in text  # the paper's Table 1
    cells = report["studies"][0]["tasks"]["sonar"]
    assert set(cells) >= {"MuTron", "OM-1", "OM-2", "AlSVM", "MuSVM", "SIPMKL", "SOM-SVM", "OKS-SVM"}
    assert len(cells["OKS-SVM"]["opt_k"]) == 2 and all(1 <= k <= 16 for k in cells["OKS-SVM"]["opt_k"])
    assert len(report["studies"][0]["claims"]) == 3
    assert text.count("[holds]") + text.count("[DOES NOT HOLD]") == 3
