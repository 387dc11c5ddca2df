"""Experiment 4 (rotated MNIST) at small scale: the features, the shared statistics, the
noise-variance rule, the OLS baseline, the selection against a straightforward one, and the
``--quick`` reproduction end to end on the real MNIST files (``$BAM_RL_MNIST``, else the shared
data folder ``../shared/data/mnist``; the tests that need them skip, saying so, without)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.ndimage
from scipy.stats import multivariate_normal

from bam_rl.cli import main
from bam_rl.datasets import MNIST_ENV, load_mnist
from bam_rl.experiments import REPRODUCTIONS
from bam_rl.experiments.mnist import (
    METHODS,
    _posterior,
    parallel_readout,
    reproduce,
    run_seed,
)
from bam_rl.experiments.mnist_domains import (
    DomainMoments,
    domain_features,
    domain_spectra,
    evidence_noise_var,
    log_evidence,
    ols_weights,
    pooling_operator,
    rotation_operator,
)
from bam_rl.families import BayesianLinearRegression, BayesianLinearRegressionNIG
from bam_rl.memory import Memory
from bam_rl.readout import select

#: The tests that read MNIST skip, saying how to provide the files, without them: the
#: ``mnist_dir`` fixture (tests/conftest.py) reads ``$BAM_RL_MNIST``, else the shared data
#: folder ``../shared/data/mnist`` beside the repository.
needs_mnist = pytest.mark.usefixtures("mnist_dir")


@pytest.fixture(scope="module")
def mnist(mnist_dir):
    return load_mnist(mnist_dir)


# ------------------------------------------------------------------------------ features
@pytest.mark.parametrize("side", [28, 9])
def test_rotation_operator_is_scipy_ndimage_rotate(side):
    rng = np.random.default_rng(0)
    images = rng.random((5, side, side))
    for angle in (*rng.uniform(0, np.pi, 6), 0.0, np.pi / 2):
        want = scipy.ndimage.rotate(images, np.degrees(angle), axes=(1, 2), order=1, reshape=False)
        got = (images.reshape(5, -1) @ rotation_operator(angle, side).T).reshape(want.shape)
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_features_pool_and_append_a_bias():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(3, 28, 28), dtype=np.uint8)
    pooled = (images.reshape(3, 14, 2, 14, 2) / 255.0).mean(axis=(2, 4)).reshape(3, -1)
    np.testing.assert_allclose(domain_features(images, 0.0, side=14)[:, :-1], pooled, atol=1e-12)
    features = domain_features(images, 1.0)
    assert features.shape == (3, 785) and np.all(features[:, -1] == 1.0)
    assert features[:, :-1].min() >= 0 and features[:, :-1].max() <= 1 + 1e-12
    assert pooling_operator(28, 7).shape == (49, 784)
    with pytest.raises(ValueError, match="out_side"):
        pooling_operator(28, 5)


# ------------------------------------------------------------------ shared statistics
def _toy_domains(rng, count=4, n=40, d=6, p=3):
    xs = [np.c_[rng.random((n, d - 1)), np.ones(n)] for _ in range(count)]
    ys = [np.eye(p)[rng.integers(0, p, n)] for _ in range(count)]
    return xs, ys


def test_moment_stats_equal_the_family_stats():
    rng = np.random.default_rng(2)
    xs, ys = _toy_domains(rng)
    xs[0][:, 2] = 0.0  # an all-zero feature
    moments = DomainMoments(xs, ys)
    for model in (
        BayesianLinearRegression(6, 3, prior_precision=0.1, noise_var=0.03),
        BayesianLinearRegressionNIG(6, 3, prior_precision=0.1, a=1.0, b=1.0),
    ):
        for j in range(len(xs)):
            want = model.stats(xs[j], ys[j])
            got = moments.stats(model, j)
            assert got.allclose(want, rtol=1e-12)
            np.testing.assert_allclose(got.log_h, want.log_h, rtol=1e-12)
        memory = moments.memory(model)
        s_t = model.stats(xs[0][:5], ys[0][:5])
        for weights in ([1, 0, 1, 1], [0, 0, 0, 0], [0.5, 0, 1, 0.25]):
            want = memory.weighted_sum(weights, base=model.prior) + s_t
            assert _posterior(model, memory, np.asarray(weights, float), s_t).allclose(want)
    with pytest.raises(ValueError, match="model"):
        moments.stats(object(), 0)
    model = BayesianLinearRegression(6, 3)
    with pytest.raises(ValueError, match="symmetric"):
        model.stats_from_moments(np.triu(np.ones((6, 6))), moments.cross[0], 1.0, 5)
    with pytest.raises(ValueError, match="shapes"):
        model.stats_from_moments(moments.gram[0], moments.cross[0][:, :2], 1.0, 5)
    with pytest.raises(ValueError, match=">= 0"):
        model.stats_from_moments(moments.gram[0], moments.cross[0], -1.0, 5)


def test_log_evidence_matches_the_family_and_the_rule_maximises_it():
    rng = np.random.default_rng(3)
    xs, ys = _toy_domains(rng, count=3, n=30)
    xs[1][:, 0] = 0.0
    moments = DomainMoments(xs, ys)
    spectra = domain_spectra(moments)
    for noise in (1e-4, 0.05, 2.0):
        model = BayesianLinearRegression(6, 3, prior_precision=0.1, noise_var=noise)
        want = sum(model.log_marginal(model.prior, moments.stats(model, j)) for j in range(3))
        got = log_evidence(noise, spectra, moments.yy, moments.n, 0.1, 3)
        assert got == pytest.approx(want, rel=1e-9)
    best = evidence_noise_var(moments, 0.1)
    value = log_evidence(best, spectra, moments.yy, moments.n, 0.1, 3)
    for factor in (0.98, 1.02, 0.5, 2.0):
        assert value >= log_evidence(best * factor, spectra, moments.yy, moments.n, 0.1, 3)


def test_ols_is_minimum_norm_least_squares():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((200, 7))
    x[:, 3] = 0.0  # rank deficient, as with corner pixels
    y = rng.standard_normal((200, 2))
    want = np.linalg.lstsq(x, y, rcond=None)[0].T
    np.testing.assert_allclose(ols_weights(x.T @ x, x.T @ y), want, rtol=1e-9, atol=1e-12)


# -------------------------------------------------------------- selection vs reference
def _reference_log_marginal(model, belief_fields, x_t, y_t):
    """``log p(Y_t | belief)`` straight from the predictive density: each output column is
    ``N(X_t m̄_i, σ² I + X_t Λ⁻¹ X_tᵀ)`` independently (explicit dense algebra)."""
    precision, b = belief_fields["precision"], belief_fields["B"]
    mean = np.linalg.solve(precision, b)  # (d, p)
    cov = model.noise_var * np.eye(len(x_t)) + x_t @ np.linalg.solve(precision, x_t.T)
    return sum(
        multivariate_normal(x_t @ mean[:, i], cov).logpdf(y_t[:, i]) for i in range(y_t.shape[1])
    )


def _reference_greedy(model, stats_list, x_t, y_t):
    """Algorithm 1 loop by loop: add the best unselected record while J strictly improves."""
    prior = {k: v.copy() for k, v in model.prior.fields.items()}
    current, chosen = prior, []
    best = _reference_log_marginal(model, current, x_t, y_t)
    while len(chosen) < len(stats_list):
        scores = {
            j: _reference_log_marginal(
                model, {k: current[k] + stats_list[j].fields[k] for k in current}, x_t, y_t
            )
            for j in range(len(stats_list))
            if j not in chosen
        }
        pick = max(scores, key=lambda j: (scores[j], -j))
        if not scores[pick] > best:
            break
        best = scores[pick]
        chosen.append(pick)
        current = {k: current[k] + stats_list[pick].fields[k] for k in current}
    return sorted(chosen), best


@needs_mnist
@pytest.mark.parametrize(
    ("side", "n_train", "noise_var"), [(7, 6, None), (7, 6, 1e-4), (28, 4, None), (28, 4, 1e-4)]
)
def test_select_equals_a_straightforward_greedy_on_rotated_mnist(mnist, side, n_train, noise_var):
    """The library's ``select`` (whatever fast path it takes) against Alg. 1 evaluated
    candidate by candidate with dense predictive densities, at the experiment's shapes
    (a 10-row datum, one-hot targets, prior precision 0.1, λ = 0), including σ² = 1e-4."""
    rng = np.random.default_rng(5)
    angles = np.array([0.2, 0.5, 1.4, 2.0, 2.9, 0.35])[:n_train]
    index = rng.permutation(60000)[: n_train * 300].reshape(n_train, 300)
    xs = [
        domain_features(mnist.train_images[i], a, side) for i, a in zip(index, angles, strict=True)
    ]
    ys = [np.eye(10)[mnist.train_labels[i]] for i in index]
    moments = DomainMoments(xs, ys)
    if noise_var is None:
        noise_var = evidence_noise_var(moments, 0.1)
    d = side * side + 1
    model = BayesianLinearRegression(d, 10, prior_precision=0.1, noise_var=noise_var)
    memory = moments.memory(model)
    stats_list = [moments.stats(model, j) for j in range(n_train)]
    test = rng.permutation(10000)[:10]
    x_t = domain_features(mnist.test_images[test], 0.3, side)
    y_t = np.eye(10)[mnist.test_labels[test]]
    s_t = model.stats(x_t, y_t)

    fast = select(model, memory, s_t, lam=0.0, method="greedy")
    chosen, best = _reference_greedy(model, stats_list, x_t, y_t)
    np.testing.assert_array_equal(fast.selected, chosen)
    assert fast.objective == pytest.approx(best, rel=1e-7, abs=1e-6)
    if n_train <= 6:  # the greedy answer never beats the exhaustive optimum
        exhaustive = select(model, memory, s_t, lam=0.0, method="exhaustive")
        assert fast.objective <= exhaustive.objective + 1e-6 * abs(exhaustive.objective)
    singles = [
        _reference_log_marginal(
            model, {k: model.prior.fields[k] + s.fields[k] for k in s.fields}, x_t, y_t
        )
        for s in stats_list
    ]
    parallel = select(model, memory, s_t, lam=0.0, method="parallel")
    np.testing.assert_allclose(parallel.scores[0], singles, rtol=1e-7)
    # the experiment's Alg. 2 reuses the greedy's first round: the same readout
    np.testing.assert_allclose(fast.scores[0], singles, rtol=1e-7)
    for q in (0.0, 0.5, 0.9):
        derived = parallel_readout(np.asarray(fast.scores[0]), fast.base_objective, q)
        want = select(model, memory, s_t, lam=0.0, method="parallel", q=q).weights
        np.testing.assert_array_equal(derived, want)


def test_nig_selection_matches_log_marginal_loop():
    rng = np.random.default_rng(6)
    xs, ys = _toy_domains(rng, count=5, n=50, d=8, p=3)
    shifts = rng.standard_normal((5, 3))
    ys = [y + 0.3 * s for y, s in zip(ys, shifts, strict=True)]
    model = BayesianLinearRegressionNIG(8, 3, prior_precision=0.1, a=1.0, b=1.0)
    moments = DomainMoments(xs, ys)
    memory = Memory()
    for j in range(5):
        memory.add(moments.stats(model, j))
    s_t = model.stats(xs[2][:10], ys[2][:10])
    result = select(model, memory, s_t, method="exhaustive")
    for bits in (0, 1, 6, 31):
        weights = ((bits >> np.arange(5)) & 1).astype(float)
        belief = memory.weighted_sum(weights, base=model.prior)
        assert result.scores[0][bits] == pytest.approx(model.log_marginal(belief, s_t), rel=1e-10)


# ----------------------------------------------------------------------- end to end
@needs_mnist
def test_run_seed_is_deterministic_and_complete(mnist):
    options = {"side": 7, "n_train": 4, "train_size": 200, "n_test": 2, "test_size": 60}
    first = run_seed(3, mnist, **options)
    again = run_seed(3, mnist, **options)
    columns = [c for c in first.columns if "seconds" not in c]
    pd.testing.assert_frame_equal(first[columns], again[columns])
    assert set(first["method"]) == set(METHODS) and len(first) == 2 * len(METHODS)
    assert (first["n_eval"] == 50).all() and first["accuracy"].between(0, 1).all()
    other = run_seed(4, mnist, **options)
    assert not np.allclose(other["angle"], first["angle"])
    with pytest.raises(ValueError, match="side"):
        run_seed(0, mnist, side=5)
    with pytest.raises(ValueError, match="methods"):
        run_seed(0, mnist, methods=("bam", "magic"))
    with pytest.raises(ValueError, match="domains of"):
        run_seed(0, mnist, n_train=33)


@needs_mnist
def test_quick_reproduction_writes_files_and_a_sane_figure(tmp_path, capsys, mnist_dir):
    assert "mnist" in REPRODUCTIONS
    out = tmp_path / "results"
    code = main(
        [
            "reproduce",
            "mnist",
            "--quick",
            "--seeds",
            "2",
            "--data",
            str(mnist_dir),
            "--out",
            str(out),
            "--no-progress",
            "--jobs",
            "2",
        ]
    )
    assert code == 0
    folder = out / "mnist"
    frame = pd.read_csv(folder / "mnist.csv")
    summary = pd.read_csv(folder / "mnist_summary.csv").set_index("method")
    assert set(summary.index) == set(METHODS) and (summary["seeds"] == 2).all()
    assert (summary["side"] == 14).all()
    assert len(frame) == 2 * 8 * len(METHODS)
    assert {
        "seed",
        "domain",
        "angle",
        "method",
        "accuracy",
        "selected",
        "selected_angles_deg",
    } <= set(frame.columns)
    assert summary.loc["bam_paper", "n_selected"] == 0  # σ² = 1e-4 remembers nothing
    # the paper's claim at side 14: BAM with 10 labels beats OLS over every domain
    assert summary.loc["bam", "accuracy_mean"] > summary.loc["ols", "accuracy_mean"] + 5
    assert summary.loc["bam", "angle_gap_selected"] < summary.loc["bam", "angle_gap_all"] / 2
    import matplotlib.image

    image = matplotlib.image.imread(folder / "mnist.png")
    assert image.shape[0] > 400 and image.shape[1] > 1500 and image.std() > 0.05
    assert "bam" in capsys.readouterr().out


def test_missing_data_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(MNIST_ENV, raising=False)
    with pytest.raises(SystemExit) as error:
        main(
            [
                "reproduce",
                "mnist",
                "--quick",
                "--data",
                str(tmp_path),
                "--out",
                str(tmp_path / "out"),
            ]
        )
    assert error.value.code == 2
    assert "train-images-idx3-ubyte.gz" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["reproduce", "mnist", "--quick", "--out", str(tmp_path / "out")])
    assert MNIST_ENV in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=MNIST_ENV):
        reproduce(tmp_path / "out2", quick=True)
