"""Bayesian linear regression families against brute-force and closed-form oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from bam_rl.families import BayesianLinearRegression, BayesianLinearRegressionNIG
from bam_rl.families.base import ConjugateFamily, NaturalParams, stack
from bam_rl.families.beta_binomial import BetaBinomial

SETTINGS = settings(max_examples=30, deadline=None)
dims_in = st.integers(min_value=1, max_value=4)
dims_out = st.integers(min_value=1, max_value=3)
rows = st.integers(min_value=1, max_value=6)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


# ----------------------------------------------------------------------------------- helpers
def random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    """A well-conditioned, non-diagonal symmetric positive-definite matrix."""
    a = rng.normal(size=(d, d))
    return a @ a.T / d + 0.5 * np.eye(d)


def random_known(rng, d, p):
    noise = float(rng.uniform(0.2, 2.0))
    model = BayesianLinearRegression(
        d,
        p,
        prior_precision=random_spd(rng, d),
        noise_var=noise,
        prior_mean=rng.normal(size=(p, d)),
    )
    return model


def random_nig(rng, d, p):
    return BayesianLinearRegressionNIG(
        d,
        p,
        prior_precision=random_spd(rng, d),
        a=float(rng.uniform(0.6, 3.0)),
        b=float(rng.uniform(0.3, 2.0)),
        prior_mean=rng.normal(size=(p, d)),
    )


def random_data(rng, n, d, p):
    return rng.normal(size=(n, d)), rng.normal(size=(n, p))


def gaussian_posterior(prec, mean, X, Y, noise):
    """Known-noise posterior (Λ, M) by the textbook formulas, with explicit inverses."""
    prec1 = prec + X.T @ X / noise
    mean1 = (np.linalg.inv(prec1) @ (prec @ mean.T + X.T @ Y / noise)).T
    return prec1, mean1


def gaussian_evidence(X, Y, prec, mean, noise):
    """log N(vec Y; vec(X M0ᵀ), I_p ⊗ (X Λ⁻¹ Xᵀ + σ² I)), outputs stacked column-wise."""
    n, p = Y.shape
    cov = X @ np.linalg.inv(prec) @ X.T + noise * np.eye(n)
    big = np.kron(np.eye(p), cov)
    loc = (X @ mean.T).T.ravel()
    return stats.multivariate_normal.logpdf(Y.T.ravel(), loc, big)


def nig_posterior(prec, mean, a, b, X, Y):
    """Normal-inverse-gamma posterior by the textbook formulas, with explicit inverses."""
    prec1 = prec + X.T @ X
    mean1 = (np.linalg.inv(prec1) @ (prec @ mean.T + X.T @ Y)).T
    a1 = a + 0.5 * Y.size
    b1 = b + 0.5 * (
        np.sum(Y * Y) + np.trace(mean @ prec @ mean.T) - np.trace(mean1 @ prec1 @ mean1.T)
    )
    return prec1, mean1, a1, b1


def nig_evidence_quadrature(X, Y, prec, mean, a, b):
    """log ∫ InvGamma(s; a, b) Π_i N(y_i; X m_i, s K) ds with K = I + X Λ⁻¹ Xᵀ, by quad."""
    n, p = Y.shape
    K = np.eye(n) + X @ np.linalg.inv(prec) @ X.T
    _, logdet_k = np.linalg.slogdet(K)
    resid = Y - X @ mean.T
    quad_form = float(np.sum(resid * np.linalg.solve(K, resid)))

    def log_integrand(t):  # over t = log s, with the Jacobian e^t
        gauss = (
            -0.5 * n * p * (np.log(2 * np.pi) + t)
            - 0.5 * p * logdet_k
            - 0.5 * quad_form * np.exp(-t)
        )
        return stats.invgamma.logpdf(np.exp(t), a, scale=b) + t + gauss

    mode = optimize.minimize_scalar(lambda t: -log_integrand(t), bracket=(-3.0, 3.0)).x
    peak = log_integrand(mode)
    value, _ = integrate.quad(
        lambda t: np.exp(log_integrand(t) - peak),
        mode - 40.0,
        mode + 80.0,
        points=[mode],
        epsabs=0.0,
        epsrel=1e-13,
        limit=500,
    )
    return peak + np.log(value)


def gaussian_kl_rows(prec_p, mean_p, prec_q, mean_q, scale=1.0):
    """Σ_i KL(N(m^p_i, scale Λp⁻¹) ‖ N(m^q_i, scale Λq⁻¹)) row by row, with inverses."""
    d = prec_p.shape[0]
    cov_p = scale * np.linalg.inv(prec_p)
    cov_q_inv = prec_q / scale
    total = 0.0
    for mp, mq in zip(mean_p, mean_q, strict=True):
        diff = mq - mp
        total += 0.5 * (
            np.trace(cov_q_inv @ cov_p)
            + diff @ cov_q_inv @ diff
            - d
            + np.linalg.slogdet(prec_p)[1]
            - np.linalg.slogdet(prec_q)[1]
        )
    return total


def belief_from(model, prec, mean, a=None, b=None):
    """Builds a belief from moment-form parameters (independent of ``stats``)."""
    fields = {"precision": prec, "B": prec @ mean.T}
    if a is not None:
        fields["c"] = 2 * b + np.trace(mean @ prec @ mean.T)
        fields["a"] = a
    return NaturalParams(model, fields)


# -------------------------------------------------------------------- known noise: evidence
@SETTINGS
@given(d=dims_in, p=dims_out, n=rows, n_before=st.integers(0, 5), seed=seeds)
def test_known_noise_evidence_matches_multivariate_normal(d, p, n, n_before, seed):
    rng = np.random.default_rng(seed)
    model = random_known(rng, d, p)
    X0, Y0 = random_data(rng, n_before, d, p)
    X, Y = random_data(rng, n, d, p)
    belief = model.prior + model.stats(X0, Y0)
    prec, mean = gaussian_posterior(
        model.prior_precision, model.prior_mean, X0, Y0, model.noise_var
    )
    expected = gaussian_evidence(X, Y, prec, mean, model.noise_var)
    got = model.log_marginal(belief, model.stats(X, Y))
    assert isinstance(got, float)
    np.testing.assert_allclose(got, expected, rtol=1e-8)
    # the posterior's moments agree with the textbook update too
    np.testing.assert_allclose(belief.mean, mean, rtol=1e-8, atol=1e-10)


def test_known_noise_prior_forms_and_single_output_shapes():
    model = BayesianLinearRegression(3, 1, prior_precision=[1.0, 2.0, 3.0], noise_var=0.3)
    np.testing.assert_array_equal(model.prior_precision, np.diag([1.0, 2.0, 3.0]))
    scalar = BayesianLinearRegression(3, 1, prior_precision=2.0)
    np.testing.assert_array_equal(scalar.prior_precision, 2.0 * np.eye(3))
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 3)), rng.normal(size=5)
    # Y of shape (n,) is accepted for a single output
    assert model.stats(X, y).allclose(model.stats(X, y[:, None]))
    expected = gaussian_evidence(X, y[:, None], model.prior_precision, model.prior_mean, 0.3)
    np.testing.assert_allclose(
        model.log_marginal(model.prior, model.stats(X, y)), expected, rtol=1e-10
    )


def batched_beliefs(random_model, seed, d=3, p=2):
    """A random model, a stack of 5 beliefs (the prior after 0 to 4 rows of data), a datum of
    4 rows, and the generator that drew them, to draw more."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, d, p)
    beliefs = stack([model.prior + model.stats(*random_data(rng, k, d, p)) for k in range(5)])
    return model, beliefs, model.stats(*random_data(rng, 4, d, p)), rng


def test_known_noise_batched_beliefs_match_loop():
    d, p = 3, 2
    model, beliefs, s, rng = batched_beliefs(random_known, 1, d, p)
    batched = model.log_marginal(beliefs, s)
    assert batched.shape == (5,)
    loop = [model.log_marginal(beliefs[k], s) for k in range(5)]
    np.testing.assert_allclose(batched, loop, rtol=1e-12)
    # batched statistics (one datum per leading index) against a batch of beliefs
    Xs, Ys = rng.normal(size=(5, 3, d)), rng.normal(size=(5, 3, p))
    s_batch = model.stats(Xs, Ys)
    assert s_batch.batch_shape == (5,)
    got = model.log_marginal(beliefs, s_batch)
    want = [model.log_marginal(beliefs[k], model.stats(Xs[k], Ys[k])) for k in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a shared precision broadcast against a batch of B
    shared = NaturalParams(
        model, {"precision": model.prior_precision, "B": rng.normal(size=(4, d, p))}
    )
    got = model.log_marginal(shared, s)
    want = [model.log_marginal(shared[k], s) for k in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # every row as its own datum
    X, Y = random_data(rng, 4, d, p)
    per_row = model.stats(X[:, None, :], Y[:, None, :])
    assert per_row.batch_shape == (4,)
    assert per_row.sum().allclose(model.stats(X, Y))


# ------------------------------------------------------------------------ known noise: KL
@SETTINGS
@given(d=dims_in, p=dims_out, seed=seeds)
def test_known_noise_kl_closed_form(d, p, seed):
    rng = np.random.default_rng(seed)
    model = random_known(rng, d, p)
    belief_p = model.prior + model.stats(*random_data(rng, 4, d, p))
    belief_q = model.prior + model.stats(*random_data(rng, 2, d, p))
    for first, second in [(belief_p, belief_q), (belief_p, model.prior), (model.prior, belief_q)]:
        prec_p = first.fields["precision"]
        prec_q = second.fields["precision"]
        expected = gaussian_kl_rows(prec_p, first.mean, prec_q, second.mean)
        got = model.kl(first, second)
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)
        # the generic Bregman divergence (checks the mean parameters too)
        np.testing.assert_allclose(
            ConjugateFamily.kl(model, first, second), expected, rtol=1e-6, atol=1e-8
        )
        assert got >= 0.0
    assert model.kl(belief_p, belief_p) == 0.0
    assert model.kl(model.prior, model.prior) == 0.0


def test_known_noise_kl_batched_both_arguments():
    rng = np.random.default_rng(2)
    d, p = 3, 2
    model = random_known(rng, d, p)
    ps = stack([model.prior + model.stats(*random_data(rng, k + 1, d, p)) for k in range(4)])
    qs = stack([model.prior + model.stats(*random_data(rng, k, d, p)) for k in range(4)])
    got = model.kl(ps, qs)
    assert got.shape == (4,)
    np.testing.assert_allclose(got, [model.kl(ps[k], qs[k]) for k in range(4)], rtol=1e-12)
    to_prior = model.kl(ps, model.prior)
    np.testing.assert_allclose(
        to_prior, [model.kl(ps[k], model.prior) for k in range(4)], rtol=1e-12
    )
    from_prior = model.kl(model.prior, qs)
    np.testing.assert_allclose(
        from_prior, [model.kl(model.prior, qs[k]) for k in range(4)], rtol=1e-12
    )
    np.testing.assert_allclose(model.kl(ps, ps), 0.0, atol=1e-10)
    assert np.all(model.kl(ps, qs) >= 0.0)


# ------------------------------------------------------------------- gradients (both models)
def central_difference(model, belief, name, index, symmetric, step):
    def shifted(sign):
        fields = {k: np.array(v, dtype=float) for k, v in belief.fields.items()}
        fields[name][index] += sign * step
        if symmetric and index[0] != index[1]:
            fields[name][index[::-1]] += sign * step
        return model.log_partition(NaturalParams(model, fields))

    return (shifted(1.0) - shifted(-1.0)) / (2.0 * step)


def check_gradient(model, belief, fields_to_check):
    grad = model.grad_log_partition(belief)
    for name, index in fields_to_check:
        symmetric = name == "precision"
        numeric = central_difference(model, belief, name, index, symmetric, 1e-5)
        analytic = grad[name][index]
        if symmetric and index[0] != index[1]:
            analytic = 2.0 * analytic  # a symmetric perturbation moves both entries
        np.testing.assert_allclose(
            analytic, numeric, rtol=1e-6, atol=1e-7, err_msg=f"{name}{index}"
        )


def known_gradient_fields(d, p):
    return [
        ("precision", (0, 0)),
        ("precision", (1, 0)),
        ("precision", (d - 1, d - 1)),
        ("B", (0, 0)),
        ("B", (d - 1, p - 1)),
    ]


def nig_gradient_fields(d, p):
    return [
        ("precision", (0, 0)),
        ("precision", (1, 0)),
        ("B", (0, 0)),
        ("B", (d - 1, p - 1)),
        ("c", ()),
        ("a", ()),
    ]


@pytest.mark.parametrize(
    "random_model, fields",
    [(random_known, known_gradient_fields), (random_nig, nig_gradient_fields)],
    ids=["known_noise", "nig"],
)
@SETTINGS
@given(d=st.integers(2, 4), p=dims_out, seed=seeds)
def test_gradient_matches_finite_differences(random_model, fields, d, p, seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng, d, p)
    belief = model.prior + model.stats(*random_data(rng, 3, d, p))
    check_gradient(model, belief, fields(d, p))


def test_gradient_is_batched():
    rng = np.random.default_rng(3)
    for model in (random_known(rng, 3, 2), random_nig(rng, 3, 2)):
        beliefs = stack([model.prior + model.stats(*random_data(rng, k, 3, 2)) for k in range(3)])
        grad = model.grad_log_partition(beliefs)
        for k in range(3):
            single = model.grad_log_partition(beliefs[k])
            for name in model.field_shapes:
                np.testing.assert_allclose(grad[name][k], single[name], rtol=1e-12)


# ------------------------------------------------------------------ known noise: moments
def test_known_noise_moments_and_sampling():
    rng = np.random.default_rng(4)
    d, p = 2, 2
    model = random_known(rng, d, p)
    belief = model.prior + model.stats(*random_data(rng, 3, d, p))
    cov = np.linalg.inv(belief.fields["precision"])
    np.testing.assert_allclose(belief.variance, np.tile(np.diag(cov), (p, 1)), rtol=1e-10)
    draws = model.sample(belief, np.random.default_rng(7), size=40_000)
    assert draws.shape == (40_000, p, d)
    se = np.sqrt(np.diag(cov) / 40_000)
    assert np.all(np.abs(draws.mean(axis=0) - belief.mean) < 5 * se)
    for i in range(p):
        np.testing.assert_allclose(np.cov(draws[:, i, :].T), cov, atol=0.03 * cov.max())
    # rows are independent
    cross = np.mean(
        (draws[:, 0, 0] - draws[:, 0, 0].mean()) * (draws[:, 1, 0] - draws[:, 1, 0].mean())
    )
    assert abs(cross) < 0.03 * cov.max()
    again = model.sample(belief, np.random.default_rng(7), size=40_000)
    np.testing.assert_array_equal(draws, again)
    assert not np.array_equal(draws[:10], model.sample(belief, np.random.default_rng(8), 10))
    assert model.sample(belief, rng).shape == (p, d)
    assert model.sample(belief, rng, size=(2, 3)).shape == (2, 3, p, d)
    beliefs = stack([belief, model.prior, belief])
    assert model.sample(beliefs, rng, size=5).shape == (5, 3, p, d)
    assert model.mean(beliefs).shape == (3, p, d)
    assert model.variance(beliefs).shape == (3, p, d)


def test_known_noise_predict_shapes_and_values():
    rng = np.random.default_rng(5)
    d, p = 3, 2
    model = random_known(rng, d, p)
    belief = model.prior + model.stats(*random_data(rng, 4, d, p))
    X = rng.normal(size=(6, d))
    mean, var = model.predict(belief, X)
    cov = np.linalg.inv(belief.fields["precision"])
    np.testing.assert_allclose(mean, X @ belief.mean.T, rtol=1e-10)
    np.testing.assert_allclose(
        var, model.noise_var + np.einsum("ni,ij,nj->n", X, cov, X), rtol=1e-10
    )
    beliefs = stack([belief, model.prior])
    mean_b, var_b = model.predict(beliefs, X)
    assert mean_b.shape == (2, 6, p) and var_b.shape == (2, 6)
    np.testing.assert_allclose(var_b[0], var, rtol=1e-12)


# --------------------------------------------------------------------------- NIG: evidence
@SETTINGS
@given(d=dims_in, n=rows, n_before=st.integers(0, 4), seed=seeds)
def test_nig_single_output_evidence_matches_multivariate_t(d, n, n_before, seed):
    rng = np.random.default_rng(seed)
    model = random_nig(rng, d, 1)
    X0, Y0 = random_data(rng, n_before, d, 1)
    X, Y = random_data(rng, n, d, 1)
    prec, mean, a, b = nig_posterior(
        model.prior_precision, model.prior_mean, model.a, model.b, X0, Y0
    )
    belief = model.prior + model.stats(X0, Y0)
    shape = (b / a) * (np.eye(n) + X @ np.linalg.inv(prec) @ X.T)
    expected = stats.multivariate_t(loc=X @ mean[0], shape=shape, df=2 * a).logpdf(Y[:, 0])
    np.testing.assert_allclose(model.log_marginal(belief, model.stats(X, Y)), expected, rtol=1e-8)
    # the belief built from moment-form parameters is the same belief
    assert belief.allclose(belief_from(model, prec, mean, a, b), rtol=1e-8, atol=1e-9)


@SETTINGS
@given(d=dims_in, p=st.integers(2, 3), n=rows, n_before=st.integers(0, 3), seed=seeds)
def test_nig_multi_output_evidence_matches_quadrature(d, p, n, n_before, seed):
    rng = np.random.default_rng(seed)
    model = random_nig(rng, d, p)
    X0, Y0 = random_data(rng, n_before, d, p)
    X, Y = random_data(rng, n, d, p)
    prec, mean, a, b = nig_posterior(
        model.prior_precision, model.prior_mean, model.a, model.b, X0, Y0
    )
    belief = model.prior + model.stats(X0, Y0)
    got = model.log_marginal(belief, model.stats(X, Y))
    np.testing.assert_allclose(got, nig_evidence_quadrature(X, Y, prec, mean, a, b), rtol=1e-8)
    # outputs sharing σ²: vec(Y) is multivariate t with a block-diagonal shape
    K = np.eye(n) + X @ np.linalg.inv(prec) @ X.T
    exact = stats.multivariate_t(
        loc=(X @ mean.T).T.ravel(), shape=(b / a) * np.kron(np.eye(p), K), df=2 * a
    ).logpdf(Y.T.ravel())
    np.testing.assert_allclose(got, exact, rtol=1e-9)


def known_noise_one_step(model, belief, x, y):
    """log N(y | the known-noise predictive at the single row ``x``)."""
    mean, var = model.predict(belief, x)
    assert mean.shape == (1, model.dim_out) and var.shape == (1,)
    return stats.norm.logpdf(y[0], mean[0], np.sqrt(var[0])).sum()


def nig_one_step(model, belief, x, y):
    """log t(y | the NIG predictive at the single row ``x``)."""
    loc, scale_sq, df = model.predict(belief, x)
    assert loc.shape == (1, model.dim_out) and scale_sq.shape == (1,) and df.shape == ()
    return stats.multivariate_t(
        loc=loc[0], shape=scale_sq[0] * np.eye(model.dim_out), df=float(df)
    ).logpdf(y[0])


@pytest.mark.parametrize(
    "random_model, one_step",
    [(random_known, known_noise_one_step), (random_nig, nig_one_step)],
    ids=["known_noise", "nig"],
)
@SETTINGS
@given(d=dims_in, p=dims_out, n=rows, seed=seeds)
def test_one_step_predictives_sum_to_evidence(random_model, one_step, d, p, n, seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng, d, p)
    X, Y = random_data(rng, n, d, p)
    belief, total = model.prior, 0.0
    for k in range(n):
        total += one_step(model, belief, X[k : k + 1], Y[k : k + 1])
        belief = belief + model.stats(X[k : k + 1], Y[k : k + 1])
    np.testing.assert_allclose(total, model.log_marginal(model.prior, model.stats(X, Y)), rtol=1e-9)


def test_nig_batched_beliefs_match_loop():
    d, p = 3, 2
    model, beliefs, s, rng = batched_beliefs(random_nig, 6, d, p)
    np.testing.assert_allclose(
        model.log_marginal(beliefs, s),
        [model.log_marginal(beliefs[k], s) for k in range(5)],
        rtol=1e-12,
    )
    tempered = model.prior + 0.5 * s  # tempering keeps a proper belief
    assert np.isfinite(model.log_marginal(tempered, s))
    # fields with different batch shapes broadcast (here only the shape a is batched)
    mixed = NaturalParams(model, {**model.prior.fields, "a": [0.8, 2.0, 3.5]})
    np.testing.assert_allclose(
        model.log_marginal(mixed, s),
        [model.log_marginal(mixed[k], s) for k in range(3)],
        rtol=1e-12,
    )
    m, noise = model.mean(mixed)
    assert m.shape == (3, p, d) and noise.shape == (3,) and np.isinf(noise[0])
    var_m, var_noise = model.variance(mixed)
    assert var_m.shape == (3, p, d) and var_noise.shape == (3,)
    draws, noises = model.sample(mixed, rng, size=2)
    assert draws.shape == (2, 3, p, d) and noises.shape == (2, 3)
    loc, scale_sq, df = model.predict(mixed, np.ones((4, d)))
    assert loc.shape == (3, 4, p) and scale_sq.shape == (3, 4)
    np.testing.assert_array_equal(df, [1.6, 4.0, 7.0])
    grad = model.grad_log_partition(mixed)
    assert grad["a"].shape == (3,) and grad["precision"].shape == (3, d, d)


# -------------------------------------------------------------------------------- NIG: KL
def nig_kl_quadrature(prec_p, mean_p, a_p, b_p, prec_q, mean_q, a_q, b_q):
    """∫ IG_p(s) [log IG_p(s)/IG_q(s) + Σ_i KL(N(m^p_i, sΛp⁻¹) ‖ N(m^q_i, sΛq⁻¹))] ds."""
    # Σ_i KL(N(m^p_i, sΛp⁻¹) ‖ N(m^q_i, sΛq⁻¹)) = fixed + quad / s: read both off the
    # row-wise Gaussian KL at s = 1 and s = 2 (independent of the family's algebra)
    at_one = gaussian_kl_rows(prec_p, mean_p, prec_q, mean_q, scale=1.0)
    at_two = gaussian_kl_rows(prec_p, mean_p, prec_q, mean_q, scale=2.0)
    quad = 2.0 * (at_one - at_two)
    fixed = at_one - quad

    def integrand(t):
        s = np.exp(t)
        log_p = stats.invgamma.logpdf(s, a_p, scale=b_p)
        log_q = stats.invgamma.logpdf(s, a_q, scale=b_q)
        return np.exp(log_p + t) * (log_p - log_q + fixed + quad / s)

    mode = np.log(b_p / (a_p + 1.0))
    value, _ = integrate.quad(
        integrand, mode - 30.0, mode + 60.0, points=[mode], epsabs=1e-13, epsrel=1e-11, limit=500
    )
    return value


@SETTINGS
@given(d=dims_in, p=dims_out, seed=seeds)
def test_nig_kl_matches_bregman_and_quadrature(d, p, seed):
    rng = np.random.default_rng(seed)
    model = random_nig(rng, d, p)
    X1, Y1 = random_data(rng, 5, d, p)
    X2, Y2 = random_data(rng, 2, d, p)
    belief_p = model.prior + model.stats(X1, Y1)
    belief_q = model.prior + model.stats(X2, Y2)
    moments_p = nig_posterior(model.prior_precision, model.prior_mean, model.a, model.b, X1, Y1)
    moments_q = nig_posterior(model.prior_precision, model.prior_mean, model.a, model.b, X2, Y2)
    got = model.kl(belief_p, belief_q)
    np.testing.assert_allclose(got, nig_kl_quadrature(*moments_p, *moments_q), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        got, ConjugateFamily.kl(model, belief_p, belief_q), rtol=1e-6, atol=1e-8
    )
    np.testing.assert_allclose(
        model.kl(belief_p, model.prior),
        ConjugateFamily.kl(model, belief_p, model.prior),
        rtol=1e-6,
        atol=1e-8,
    )
    assert got >= 0.0
    assert model.kl(belief_p, belief_p) == 0.0
    assert model.kl(model.prior, model.prior) == 0.0


def test_nig_kl_batched():
    rng = np.random.default_rng(9)
    model = random_nig(rng, 3, 2)
    ps = stack([model.prior + model.stats(*random_data(rng, k + 1, 3, 2)) for k in range(4)])
    got = model.kl(ps, model.prior)
    assert got.shape == (4,)
    np.testing.assert_allclose(got, [model.kl(ps[k], model.prior) for k in range(4)], rtol=1e-12)
    np.testing.assert_allclose(model.kl(ps, ps), 0.0, atol=1e-10)


# --------------------------------------------------------------------------- NIG: moments
def test_nig_moments_and_sampling():
    rng = np.random.default_rng(10)
    d, p = 2, 2
    model = BayesianLinearRegressionNIG(
        d, p, prior_precision=random_spd(rng, d), a=3.0, b=2.0, prior_mean=rng.normal(size=(p, d))
    )
    X, Y = random_data(rng, 6, d, p)
    prec, mean, a, b = nig_posterior(
        model.prior_precision, model.prior_mean, model.a, model.b, X, Y
    )
    belief = model.prior + model.stats(X, Y)
    m, noise = belief.mean
    np.testing.assert_allclose(m, mean, rtol=1e-9)
    np.testing.assert_allclose(noise, b / (a - 1), rtol=1e-9)
    var_m, var_noise = belief.variance
    cov = np.linalg.inv(prec)
    np.testing.assert_allclose(var_m, np.tile(b / (a - 1) * np.diag(cov), (p, 1)), rtol=1e-9)
    np.testing.assert_allclose(var_noise, b**2 / ((a - 1) ** 2 * (a - 2)), rtol=1e-9)

    draws, noises = model.sample(belief, np.random.default_rng(11), size=60_000)
    assert draws.shape == (60_000, p, d) and noises.shape == (60_000,)
    assert np.all(noises > 0)
    np.testing.assert_allclose(noises.mean(), b / (a - 1), rtol=0.03)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=5 * np.sqrt(var_m.max() / 6e4))
    np.testing.assert_allclose(draws.var(axis=0), var_m, rtol=0.06)
    # M | σ² has covariance σ² Λ⁻¹: the scaled draws have covariance Λ⁻¹
    scaled = (draws - mean) / np.sqrt(noises)[:, None, None]
    np.testing.assert_allclose(np.cov(scaled[:, 0, :].T), cov, atol=0.03 * cov.max())
    again = model.sample(belief, np.random.default_rng(11), size=60_000)
    np.testing.assert_array_equal(draws, again[0])
    np.testing.assert_array_equal(noises, again[1])
    m1, s1 = model.sample(belief, rng)
    assert m1.shape == (p, d) and s1.shape == ()
    m_b, s_b = model.sample(stack([belief, model.prior]), rng, size=4)
    assert m_b.shape == (4, 2, p, d) and s_b.shape == (4, 2)
    # heavy-tailed prior: moments that do not exist are inf
    heavy = BayesianLinearRegressionNIG(d, p, a=0.5, b=1.0)
    assert np.isinf(heavy.prior.mean[1]) and np.all(np.isinf(heavy.prior.variance[0]))


# ------------------------------------------------------------------------------------ scale
@pytest.mark.parametrize("family", ["known", "nig"])
def test_scale_many_candidates_in_one_call(family):
    rng = np.random.default_rng(12)
    d, p, m = 200, 4, 10
    if family == "known":
        model = BayesianLinearRegression(d, p, prior_precision=1e-4, noise_var=1e-2)
    else:
        model = BayesianLinearRegressionNIG(d, p, prior_precision=1e-4, a=2.0, b=1.0)
    W = rng.normal(size=(d, 6))
    Xs = np.cos(rng.normal(size=(m, 30, 6)) @ W.T)  # random-Fourier-like features
    Ys = rng.normal(size=(m, 30, p))
    memory = model.stats(Xs, Ys)
    assert memory.batch_shape == (m,)
    weights = rng.integers(0, 2, size=(100, m)).astype(float)
    candidates = model.prior + memory.weighted_sum(weights)
    s_t = model.stats(np.cos(rng.normal(size=(20, 6)) @ W.T), rng.normal(size=(20, p)))
    scores = model.log_marginal(candidates, s_t)
    assert scores.shape == (100,) and np.all(np.isfinite(scores))
    kls = model.kl(candidates, model.prior)
    assert kls.shape == (100,) and np.all(np.isfinite(kls)) and np.all(kls >= 0)


# ------------------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize("cls", [BayesianLinearRegression, BayesianLinearRegressionNIG])
def test_bad_data(cls):
    model = cls(3, 2)
    X, Y = np.ones((4, 3)), np.ones((4, 2))
    with pytest.raises(ValueError, match="same number of rows"):
        model.stats(X, Y[:3])
    with pytest.raises(ValueError, match=r"^X must have shape"):
        model.stats(np.ones((4, 2)), Y)
    with pytest.raises(ValueError, match=r"^X must have shape"):
        model.stats(np.ones(3), Y)
    with pytest.raises(ValueError, match=r"^Y must have shape"):
        model.stats(X, np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"^Y must have shape"):
        model.stats(X, np.ones(4))  # (n,) only for a single output
    with pytest.raises(ValueError, match=r"^X must be finite"):
        model.stats(np.where(np.eye(4, 3) > 0, np.nan, 1.0), Y)
    with pytest.raises(ValueError, match=r"^Y must be finite"):
        model.stats(X, np.full((4, 2), np.inf))
    with pytest.raises(ValueError, match=r"X .* and Y .* do not broadcast"):
        model.stats(np.ones((2, 4, 3)), np.ones((3, 4, 2)))
    with pytest.raises(ValueError, match=r"^X must have shape"):
        model.predict(model.prior, np.ones((4, 5)))


def test_mixing_statistics_is_rejected():
    base = BayesianLinearRegression(3, 2, noise_var=1.0)
    X, Y = np.ones((4, 3)), np.ones((4, 2))
    # a different prior is fine: the statistics live in the same space
    other_prior = BayesianLinearRegression(3, 2, prior_precision=5.0, noise_var=1.0)
    assert np.isfinite(base.log_marginal(base.prior, other_prior.stats(X, Y)))
    for other in (
        BayesianLinearRegression(3, 2, noise_var=2.0),
        BayesianLinearRegression(4, 2),
        BayesianLinearRegression(3, 1),
        BayesianLinearRegressionNIG(3, 2),
        BetaBinomial(),
    ):
        s = (
            other.stats(successes=1, trials=2)
            if isinstance(other, BetaBinomial)
            else other.stats(np.ones((4, other.dim_in)), np.ones((4, other.dim_out)))
        )
        with pytest.raises(ValueError, match="cannot be combined"):
            base.prior + s
        with pytest.raises(ValueError, match="cannot be combined"):
            base.log_marginal(base.prior, s)
    nig = BayesianLinearRegressionNIG(3, 2, a=1.0)
    assert np.isfinite(
        nig.log_marginal(nig.prior, BayesianLinearRegressionNIG(3, 2, a=4.0, b=3.0).stats(X, Y))
    )
    with pytest.raises(ValueError, match="cannot be combined"):
        nig.kl(nig.prior, BayesianLinearRegressionNIG(3, 1).prior)


def test_improper_beliefs_are_rejected():
    model = BayesianLinearRegression(2, 1)
    bad = NaturalParams(model, {"precision": [[1.0, 2.0], [2.0, 1.0]], "B": np.zeros((2, 1))})
    with pytest.raises(ValueError, match="positive definite"):
        model.log_marginal(bad, model.stats(np.ones((1, 2)), np.ones((1, 1))))
    with pytest.raises(ValueError, match="positive definite"):
        model.kl(bad, model.prior)
    with pytest.raises(ValueError, match="positive definite"):
        model.mean(bad)
    asym = NaturalParams(model, {"precision": [[1.0, 0.5], [0.0, 1.0]], "B": np.zeros((2, 1))})
    with pytest.raises(ValueError, match="symmetric"):
        model.log_partition(asym)
    nig = BayesianLinearRegressionNIG(2, 1)
    fields = dict(nig.prior.fields)
    with pytest.raises(ValueError, match="noise scale"):
        nig.log_partition(NaturalParams(nig, {**fields, "c": 0.0}))
    with pytest.raises(ValueError, match="belief a"):
        nig.log_partition(NaturalParams(nig, {**fields, "a": 0.0}))


def test_repr_and_signature():
    model = BayesianLinearRegression(3, 2, prior_precision=0.1, noise_var=1e-4)
    assert repr(model) == (
        "BayesianLinearRegression(dim_in=3, dim_out=2, prior_precision=0.1, noise_var=0.0001)"
    )
    assert model.signature() == (
        "BayesianLinearRegression",
        (("precision", (3, 3)), ("B", (3, 2))),
        ("noise_var", 1e-4),
    )
    nig = BayesianLinearRegressionNIG(3, 2, prior_precision=np.eye(3), a=2.0, b=0.5)
    assert repr(nig) == (
        "BayesianLinearRegressionNIG(dim_in=3, dim_out=2, "
        "prior_precision=<array (3, 3)>, a=2, b=0.5)"
    )
    assert nig.field_shapes == {"precision": (3, 3), "B": (3, 2), "c": (), "a": ()}


@pytest.mark.parametrize("family", ["known", "nig"])
def test_stats_axis_keeps_rows_as_separate_data(family):
    rng = np.random.default_rng(13)
    d, p, n = 3, 2, 5
    model = random_known(rng, d, p) if family == "known" else random_nig(rng, d, p)
    X, Y = random_data(rng, n, d, p)
    each = model.stats(X, Y, axis=())
    whole = model.stats(X, Y)
    assert each.batch_shape == (n,) and whole.batch_shape == ()
    assert each.sum().allclose(whole)
    np.testing.assert_allclose(each.log_h.sum(), whole.log_h, rtol=1e-12)
    assert each.allclose(model.stats(X[:, None, :], Y[:, None, :]))
    belief = model.prior + model.stats(*random_data(rng, 2, d, p))
    lm = model.log_marginal(belief, each)
    assert lm.shape == (n,)
    total, current = 0.0, belief
    for i in range(n):
        np.testing.assert_allclose(lm[i], model.log_marginal(belief, each[i]), rtol=1e-13)
        total += model.log_marginal(current, each[i])
        current = current + each[i]
    np.testing.assert_allclose(total, model.log_marginal(belief, whole), rtol=1e-10)
    batched = model.stats(np.stack([X, X]), np.stack([Y, Y]), axis=())
    assert batched.batch_shape == (2, n)
    with pytest.raises(ValueError, match=r"^axis"):
        model.stats(X, Y, axis=0)


@pytest.mark.parametrize("family", ["known", "nig"])
def test_predictive_sample(family):
    rng = np.random.default_rng(14)
    d, p = 2, 2
    if family == "known":
        model = random_known(rng, d, p)
    else:
        model = BayesianLinearRegressionNIG(
            d,
            p,
            prior_precision=random_spd(rng, d),
            a=3.0,
            b=1.5,
            prior_mean=rng.normal(size=(p, d)),
        )
    belief = model.prior + model.stats(*random_data(rng, 8, d, p))
    X = rng.normal(size=(3, d))
    draws = model.predictive_sample(belief, X, np.random.default_rng(5), size=50_000)
    assert draws.shape == (50_000, 3, p)
    np.testing.assert_array_equal(
        draws[:5], model.predictive_sample(belief, X, np.random.default_rng(5), size=50_000)[:5]
    )
    assert model.predictive_sample(belief, X, rng).shape == (3, p)
    assert model.predictive_sample(stack([belief, model.prior]), X, rng, 4).shape == (4, 2, 3, p)
    predicted = model.predict(belief, X)
    if family == "known":
        loc, var = predicted
    else:
        loc, scale_sq, df = predicted
        var = scale_sq * df / (df - 2)  # variance of a Student-t with this shape
    np.testing.assert_allclose(draws.mean(axis=0), loc, atol=5 * np.sqrt(var.max() / 5e4))
    np.testing.assert_allclose(draws.var(axis=0), np.repeat(var[:, None], p, axis=1), rtol=0.06)


@SETTINGS
@given(
    family=st.sampled_from(["known", "nig"]),
    d=dims_in,
    p=dims_out,
    seed=seeds,
    w=st.floats(0.05, 0.95),
)
def test_readout_weight_gradient_identity(family, d, p, seed, w):
    """d/dw log p(D_t | η0 + w s_j) = ⟨s_j, ∇A(η(w) + s_t) − ∇A(η(w))⟩ (mean parameters)."""
    rng = np.random.default_rng(seed)
    model = random_known(rng, d, p) if family == "known" else random_nig(rng, d, p)
    s_j = model.stats(*random_data(rng, 4, d, p))
    s_t = model.stats(*random_data(rng, 3, d, p))
    belief = model.prior + w * s_j
    g_post = model.grad_log_partition(belief + s_t)
    g_prior = model.grad_log_partition(belief)
    analytic = s_j.inner({k: g_post[k] - g_prior[k] for k in g_post})
    h = 1e-5
    numeric = (
        model.log_marginal(model.prior + (w + h) * s_j, s_t)
        - model.log_marginal(model.prior + (w - h) * s_j, s_t)
    ) / (2 * h)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)
