"""NormalKnownVariance and NormalGamma against independent oracles: scipy's multivariate
normal, sequential Student-t predictives, closed-form and integrated KL, scipy moments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from core_testutils import kl_by_quadrature
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from bam_rl.families import ConjugateFamily, NaturalParams, NormalGamma, NormalKnownVariance

LOCATION = st.floats(-10.0, 10.0)
SCALE = st.floats(0.05, 20.0)
OBSERVATIONS = st.lists(st.floats(-30.0, 30.0), min_size=1, max_size=8)


def normal_belief(model, m, v):
    return NaturalParams(model, {"precision_mean": m / v, "precision": 1.0 / v})


def normal_gamma_belief(model, m, kappa, alpha, beta):
    return NaturalParams(
        model,
        {
            "kappa_mean": kappa * m,
            "kappa": kappa,
            "beta_shifted": beta + 0.5 * kappa * m * m,
            "alpha": alpha,
        },
    )


# ============================================================== NormalKnownVariance
@settings(max_examples=50, deadline=None)
@given(m=LOCATION, v=SCALE, noise=SCALE, y=OBSERVATIONS)
def test_normal_log_marginal_matches_multivariate_normal(m, v, noise, y):
    y = np.array(y)
    model = NormalKnownVariance(m, v, noise)
    n = len(y)
    cov = noise * np.eye(n) + v * np.ones((n, n))
    oracle = stats.multivariate_normal.logpdf(y, mean=np.full(n, m), cov=cov)
    np.testing.assert_allclose(
        model.log_marginal(model.prior, model.stats(y)), oracle, rtol=1e-8, atol=1e-10
    )


@settings(max_examples=30, deadline=None)
@given(m=LOCATION, v=SCALE, noise=SCALE, y=OBSERVATIONS, y_t=OBSERVATIONS)
def test_normal_log_marginal_after_an_update(m, v, noise, y, y_t):
    """log p(y_t | y) = log p(y, y_t) − log p(y), both from the joint Gaussian."""
    y, y_t = np.array(y), np.array(y_t)
    model = NormalKnownVariance(m, v, noise)
    both = np.concatenate([y, y_t])
    n = len(both)
    joint = stats.multivariate_normal(np.full(n, m), noise * np.eye(n) + v * np.ones((n, n)))
    first = stats.multivariate_normal(
        np.full(len(y), m), noise * np.eye(len(y)) + v * np.ones((len(y),) * 2)
    )
    oracle = joint.logpdf(both) - first.logpdf(y)
    ours = model.log_marginal(model.prior + model.stats(y), model.stats(y_t))
    np.testing.assert_allclose(ours, oracle, rtol=1e-8, atol=1e-8)


def test_normal_stats_along_an_axis():
    model = NormalKnownVariance(0.5, 2.0, 0.7)
    y = np.random.default_rng(0).normal(size=(4, 3))
    rows = model.stats(y, axis=1)
    assert rows.batch_shape == (4,)
    lm = model.log_marginal(model.prior, rows)
    for i in range(4):
        assert lm[i] == pytest.approx(model.log_marginal(model.prior, model.stats(y[i])), rel=1e-13)


def gaussian_kl(mp, vp, mq, vq):
    return 0.5 * (math.log(vq / vp) + vp / vq - 1.0 + (mp - mq) ** 2 / vq)


@settings(max_examples=50, deadline=None)
@given(mp=LOCATION, vp=SCALE, mq=LOCATION, vq=SCALE)
def test_normal_kl_matches_closed_form_and_bregman(mp, vp, mq, vq):
    model = NormalKnownVariance()
    p, q = normal_belief(model, mp, vp), normal_belief(model, mq, vq)
    expected = gaussian_kl(mp, vp, mq, vq)
    np.testing.assert_allclose(model.kl(p, q), expected, rtol=1e-9, atol=1e-12)
    # the generic Bregman divergence of A agrees (validates A and ∇A)
    np.testing.assert_allclose(ConjugateFamily.kl(model, p, q), expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    "mp,vp,mq,vq", [(0, 1, 0, 1.5), (1.0, 0.3, -2.0, 4.0), (5.0, 2.0, 4.5, 0.5)]
)
def test_normal_kl_matches_numerical_integral(mp, vp, mq, vq):
    model = NormalKnownVariance()
    p, q = stats.norm(mp, math.sqrt(vp)), stats.norm(mq, math.sqrt(vq))
    sd = math.sqrt(vp)
    value = kl_by_quadrature(
        p, q, mp - 40 * sd, mp + 40 * sd, points=[mp], epsabs=1e-14, epsrel=1e-11
    )
    ours = model.kl(normal_belief(model, mp, vp), normal_belief(model, mq, vq))
    np.testing.assert_allclose(ours, value, rtol=1e-6)


def test_normal_kl_of_concentrated_beliefs_is_well_conditioned():
    """Many data make A(η) ≈ n m² / 2 huge; the closed form keeps tiny KLs accurate."""
    model = NormalKnownVariance(noise_var=1.0)
    p = normal_belief(model, 100.0, 1e-6)
    q = normal_belief(model, 100.0 + 1e-6, 1e-6)
    # Δm² / (2v) ≈ 5e-7, while each A(η) ≈ 5e9: a Bregman difference would lose it entirely
    assert model.kl(p, q) == pytest.approx(gaussian_kl(100.0, 1e-6, 100.0 + 1e-6, 1e-6), rel=1e-6)
    assert model.kl(p, p) == 0.0


@settings(max_examples=50, deadline=None)
@given(m=LOCATION, v=SCALE, noise=SCALE, y=OBSERVATIONS)
def test_normal_moments_match_scipy(m, v, noise, y):
    model = NormalKnownVariance(m, v, noise)
    belief = model.prior + model.stats(y)
    n = len(y)
    post_var = 1.0 / (1.0 / v + n / noise)
    post = stats.norm(post_var * (m / v + sum(y) / noise), math.sqrt(post_var))
    np.testing.assert_allclose(belief.mean, post.mean(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(belief.variance, post.var(), rtol=1e-12)


def test_normal_sample_moments():
    model = NormalKnownVariance(1.0, 2.0, 0.5)
    belief = model.prior + model.stats([0.3, 1.1, 2.0])
    draws = model.sample(belief, np.random.default_rng(1), size=200_000)
    assert draws.mean() == pytest.approx(belief.mean, abs=5 * math.sqrt(belief.variance / 2e5))
    assert draws.var() == pytest.approx(belief.variance, rel=2e-2)
    predictive = model.predictive_sample(belief, np.random.default_rng(2), size=200_000)
    assert predictive.var() == pytest.approx(belief.variance + 0.5, rel=2e-2)


@pytest.mark.parametrize("bad", [[1.0, np.nan], [np.inf], [-np.inf, 0.0], ["x"]])
def test_normal_bad_observations_raise(bad):
    for model in (NormalKnownVariance(), NormalGamma()):
        with pytest.raises(ValueError, match="observations"):
            model.stats(bad)


def test_normal_improper_belief_raises():
    model = NormalKnownVariance()
    with pytest.raises(ValueError, match="precision"):
        model.log_marginal(model.zeros(), model.stats([1.0]))


def test_normal_noise_var_in_signature():
    a, b = NormalKnownVariance(noise_var=1.0), NormalKnownVariance(mean=3.0, noise_var=1.0)
    assert a.signature() == b.signature()
    assert a.signature() != NormalKnownVariance(noise_var=2.0).signature()


def test_normal_tempering_halves_the_evidence_weight():
    """Half a datum is the same datum observed with twice the noise variance."""
    model = NormalKnownVariance(0.0, 1.0, noise_var=1.0)
    y = np.array([0.4, -1.0, 2.5])
    tempered = model.prior + 0.5 * model.stats(y)
    noisier = NormalKnownVariance(0.0, 1.0, noise_var=2.0)
    expected = noisier.prior + noisier.stats(y)
    np.testing.assert_allclose(tempered.mean, expected.mean, rtol=1e-13)
    np.testing.assert_allclose(tempered.variance, expected.variance, rtol=1e-13)


# ====================================================================== NormalGamma
NG_PARAMS = dict(
    m=LOCATION, kappa=st.floats(0.05, 20.0), alpha=st.floats(0.3, 20.0), beta=st.floats(0.05, 20.0)
)


def student_t_chain(y, m, kappa, alpha, beta):
    """Σ log p(y_i | y_<i) from the textbook one-step Student-t predictive."""
    total = 0.0
    for y_i in y:
        scale = math.sqrt(beta * (kappa + 1.0) / (alpha * kappa))
        total += stats.t.logpdf(y_i, df=2.0 * alpha, loc=m, scale=scale)
        beta += kappa * (y_i - m) ** 2 / (2.0 * (kappa + 1.0))
        m = (kappa * m + y_i) / (kappa + 1.0)
        kappa += 1.0
        alpha += 0.5
    return total, (m, kappa, alpha, beta)


@settings(max_examples=50, deadline=None)
@given(**NG_PARAMS, y=OBSERVATIONS)
def test_normal_gamma_log_marginal_matches_student_t_chain(m, kappa, alpha, beta, y):
    model = NormalGamma(m, kappa, alpha, beta)
    oracle, _ = student_t_chain(y, m, kappa, alpha, beta)
    np.testing.assert_allclose(
        model.log_marginal(model.prior, model.stats(y)), oracle, rtol=1e-8, atol=1e-9
    )


@settings(max_examples=30, deadline=None)
@given(**NG_PARAMS, y=OBSERVATIONS, y_t=OBSERVATIONS)
def test_normal_gamma_posterior_matches_textbook_update(m, kappa, alpha, beta, y, y_t):
    model = NormalGamma(m, kappa, alpha, beta)
    belief = model.prior + model.stats(y)
    _, (m1, k1, a1, b1) = student_t_chain(y, m, kappa, alpha, beta)
    ours = NormalGamma.standard_params(belief.fields)
    np.testing.assert_allclose(ours, (m1, k1, a1, b1), rtol=1e-9, atol=1e-9)
    oracle, _ = student_t_chain(y_t, m1, k1, a1, b1)
    np.testing.assert_allclose(
        model.log_marginal(belief, model.stats(y_t)), oracle, rtol=1e-8, atol=1e-8
    )


def test_normal_gamma_log_marginal_matches_double_integral():
    """Brute force over (μ, τ) for a small datum: ∫∫ Π N(y_i | μ, 1/τ) NG(μ, τ) dμ dτ."""
    m, kappa, alpha, beta = 0.5, 2.0, 3.0, 2.0
    y = [0.1, 1.3]
    model = NormalGamma(m, kappa, alpha, beta)

    def log_joint(mu, tau):
        loglik = sum(0.5 * math.log(tau / (2 * math.pi)) - 0.5 * tau * (v - mu) ** 2 for v in y)
        return loglik + normal_gamma_logpdf(mu, tau, m, kappa, alpha, beta)

    # μ | τ is concentrated within a few 1/sqrt(τ (κ + n)) of the data-weighted centre; the
    # inner range spans ± 25 of those, far beyond where the integrand is representable.
    centre = (kappa * m + sum(y)) / (kappa + len(y))

    def inner(tau):
        sd = 1.0 / math.sqrt(tau * (kappa + len(y)))
        value, _ = integrate.quad(
            lambda mu: math.exp(log_joint(mu, tau)),
            centre - 25 * sd,
            centre + 25 * sd,
            points=[centre],
            epsabs=0.0,
            epsrel=1e-12,
            limit=200,
        )
        return value

    value, _ = integrate.quad(inner, 0.0, 80.0, points=[1.0], epsabs=0.0, epsrel=1e-11, limit=200)
    np.testing.assert_allclose(
        model.log_marginal(model.prior, model.stats(y)), math.log(value), rtol=1e-8
    )


def normal_gamma_logpdf(mu, tau, m, kappa, alpha, beta):
    return (
        alpha * math.log(beta)
        - math.lgamma(alpha)
        + (alpha - 0.5) * math.log(tau)
        - beta * tau
        + 0.5 * math.log(kappa / (2 * math.pi))
        - 0.5 * kappa * tau * (mu - m) ** 2
    )


def normal_gamma_kl_integral(p, q):
    """∫∫ p log(p / q) dμ dτ, μ inner (± 20 sd), τ outer (to the 1 − 1e-14 quantile)."""
    m, kappa, alpha, beta = p

    def inner(tau):
        sd = 1.0 / math.sqrt(kappa * tau)

        def f(mu):
            lp = normal_gamma_logpdf(mu, tau, *p)
            return math.exp(lp) * (lp - normal_gamma_logpdf(mu, tau, *q))

        value, _ = integrate.quad(
            f, m - 20 * sd, m + 20 * sd, points=[m], epsabs=0, epsrel=1e-11, limit=200
        )
        return value

    top = stats.gamma.ppf(1 - 1e-14, alpha, scale=1 / beta)
    mode = max(alpha - 0.5, 0.0) / beta
    value, _ = integrate.quad(inner, 0.0, top, points=[mode], epsabs=1e-13, epsrel=1e-10, limit=200)
    return value


@pytest.mark.parametrize(
    "p,q",
    [
        ((0.0, 1.0, 2.0, 1.0), (0.0, 1.0, 1.0, 1.0)),
        ((0.5, 2.0, 3.0, 2.0), (-1.0, 0.5, 1.5, 4.0)),
        ((2.0, 8.0, 6.0, 3.0), (1.5, 1.0, 2.0, 0.5)),
    ],
)
def test_normal_gamma_kl_matches_double_integral(p, q):
    model = NormalGamma()
    ours = model.kl(normal_gamma_belief(model, *p), normal_gamma_belief(model, *q))
    np.testing.assert_allclose(ours, normal_gamma_kl_integral(p, q), rtol=1e-6)


def normal_gamma_kl_closed_form(p, q):
    """KL between Normal-Gamma densities, from E_p of the log-density ratio (Soch et al.,
    The Book of Statistical Proofs, "Kullback-Leibler divergence for the normal-gamma")."""
    m1, k1, a1, b1 = p
    m2, k2, a2, b2 = q
    from scipy.special import digamma, gammaln

    return (
        0.5 * a1 / b1 * (m2 - m1) ** 2 * k2
        + 0.5 * k2 / k1
        - 0.5 * math.log(k2 / k1)
        - 0.5
        + a2 * math.log(b1 / b2)
        - gammaln(a1)
        + gammaln(a2)
        + (a1 - a2) * digamma(a1)
        - (b1 - b2) * a1 / b1
    )


@settings(max_examples=50, deadline=None)
@given(p=st.tuples(LOCATION, SCALE, SCALE, SCALE), q=st.tuples(LOCATION, SCALE, SCALE, SCALE))
def test_normal_gamma_kl_matches_closed_form(p, q):
    model = NormalGamma()
    ours = model.kl(normal_gamma_belief(model, *p), normal_gamma_belief(model, *q))
    np.testing.assert_allclose(ours, normal_gamma_kl_closed_form(p, q), rtol=1e-6, atol=1e-8)


@settings(max_examples=50, deadline=None)
@given(**NG_PARAMS, y=st.lists(st.floats(-30.0, 30.0), min_size=0, max_size=8))
def test_normal_gamma_moments_match_scipy(m, kappa, alpha, beta, y):
    model = NormalGamma(m, kappa, alpha, beta)
    belief = model.prior + model.stats(y)
    _, (m1, k1, a1, b1) = student_t_chain(y, m, kappa, alpha, beta)
    mu = stats.t(df=2 * a1, loc=m1, scale=math.sqrt(b1 / (a1 * k1)))
    tau = stats.gamma(a1, scale=1 / b1)
    assert belief.mean.shape == belief.variance.shape == (2,)
    # E μ is undefined for 2α <= 1 (Cauchy-like tails); the location m is reported then
    centre = mu.mean() if a1 > 0.5 else mu.median()
    np.testing.assert_allclose(belief.mean, [centre, tau.mean()], rtol=1e-9, atol=1e-9)
    # Var μ: infinite for 1/2 < α <= 1 (scipy agrees); scipy says undefined (nan) for
    # α <= 1/2, where E μ² diverges as well, and ours reports inf
    var_mu = mu.var() if a1 > 0.5 else np.inf
    np.testing.assert_allclose(belief.variance, [var_mu, tau.var()], rtol=1e-8)


def test_normal_gamma_variance_of_mu_is_infinite_for_small_alpha():
    model = NormalGamma(alpha=0.8)
    assert model.prior.variance[0] == np.inf
    assert np.isfinite(model.prior.variance[1])


def test_normal_gamma_sample_moments():
    model = NormalGamma(1.0, 2.0, 4.0, 3.0)
    belief = model.prior + model.stats([0.5, 1.7, 0.9])
    draws = model.sample(belief, np.random.default_rng(3), size=400_000)
    assert draws.shape == (400_000, 2)
    np.testing.assert_allclose(draws.mean(axis=0), belief.mean, rtol=1e-2)
    np.testing.assert_allclose(draws.var(axis=0), belief.variance, rtol=3e-2)
    # the conditional structure: Var(μ | τ) = 1 / (κ τ)
    _, k1, _, _ = NormalGamma.standard_params(belief.fields)
    residual = (draws[:, 0] - belief.mean[0]) * np.sqrt(k1 * draws[:, 1])
    assert residual.var() == pytest.approx(1.0, rel=1e-2)
    # E[log τ] through the gradient of A
    grad = model.grad_log_partition(belief)
    assert np.log(draws[:, 1]).mean() == pytest.approx(grad["alpha"], abs=5e-3)


def test_normal_gamma_improper_belief_raises():
    model = NormalGamma()
    with pytest.raises(ValueError, match="kappa"):
        model.log_marginal(model.zeros(), model.stats([1.0]))
    bad_beta = NaturalParams(
        model, {"kappa_mean": 2.0, "kappa": 1.0, "beta_shifted": 1.0, "alpha": 1.0}
    )  # β = 1 − 4/2 < 0
    with pytest.raises(ValueError, match="beta"):
        model.kl(bad_beta, model.prior)
    with pytest.raises(ValueError, match="alpha"):
        model.log_partition(
            NaturalParams(
                model, {"kappa_mean": 0.0, "kappa": 1.0, "beta_shifted": 1.0, "alpha": 0.0}
            )
        )


def test_normal_gamma_sample_refuses_a_belief_that_is_no_distribution():
    """Hypothesis found it: a hand-built datum with kappa = -2 left a forgetting rule with
    kappa = -1, and a Thompson draw from it was NaN instead of a ValueError."""
    model = NormalGamma()
    belief = NaturalParams(
        model, {"kappa_mean": 0.0, "kappa": -1.0, "beta_shifted": 1.0, "alpha": 1.0}
    )
    with pytest.raises(ValueError, match="kappa"):
        model.sample(belief, np.random.default_rng(0))
