"""GammaPoisson against independent oracles: sequential negative-binomial predictives,
numerical integration over λ, closed-form and integrated Gamma KL, scipy moments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from core_testutils import assert_alpha_beta_kl, kl_by_quadrature, log_quadrature
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import digamma, gammaln

from bam_rl.families import GammaPoisson

SHAPE = st.floats(0.3, 30.0)
RATE = st.floats(0.05, 20.0)
COUNTS = st.lists(st.integers(0, 40), min_size=1, max_size=8)


def nbinom_chain(x, alpha, beta):
    total = 0.0
    for x_i in x:
        total += stats.nbinom.logpmf(x_i, alpha, beta / (beta + 1.0))
        alpha, beta = alpha + x_i, beta + 1.0
    return total


def assert_log_marginal(alpha, beta, x, oracle, **tolerance):
    """GammaPoisson(alpha, beta)'s log marginal of the counts ``x`` against ``oracle``'s; the
    model."""
    model = GammaPoisson(alpha, beta)
    expected = oracle(x, alpha, beta)
    np.testing.assert_allclose(
        model.log_marginal(model.prior, model.stats(x)), expected, **tolerance
    )
    return model


@settings(max_examples=50, deadline=None)
@given(alpha=SHAPE, beta=RATE, x=COUNTS)
def test_log_marginal_matches_negative_binomial_chain(alpha, beta, x):
    model = assert_log_marginal(alpha, beta, x, nbinom_chain, rtol=1e-8, atol=1e-10)
    # one count at a time, as a batch of data against the prior
    each = model.log_marginal(model.prior, model.stats(x, axis=()))
    np.testing.assert_allclose(
        each, stats.nbinom.logpmf(x, alpha, beta / (beta + 1.0)), rtol=1e-8, atol=1e-12
    )


def brute_force_log_marginal(x, alpha, beta):
    """log ∫ Π Poisson(x_i | λ) Gamma(λ | α, β) dλ by adaptive quadrature."""
    x = np.asarray(x)

    def log_integrand(lam):
        return stats.poisson.logpmf(x, lam).sum() + stats.gamma.logpdf(lam, alpha, scale=1 / beta)

    # the peak and the upper end are integration hints only: the integrand decays like
    # exp(−(β + n) λ) λ^(α + Σx − 1), negligible far beyond its mode
    a, b = alpha + x.sum(), beta + len(x)
    mode = max(a - 1.0, 1e-3) / b
    top = mode + 60.0 * math.sqrt(a) / b + 60.0 / b
    return log_quadrature(log_integrand, 0.0, top, mode, epsabs=0.0, epsrel=1e-11)


@settings(max_examples=30, deadline=None)
@given(alpha=st.floats(0.5, 30.0), beta=RATE, x=COUNTS)
def test_log_marginal_matches_numerical_integral(alpha, beta, x):
    assert_log_marginal(alpha, beta, x, brute_force_log_marginal, rtol=1e-8, atol=1e-9)


def gamma_kl_closed_form(ap, bp, aq, bq):
    """KL(Gamma(ap, rate bp) ‖ Gamma(aq, rate bq)) (Penny 2001)."""
    return (
        (ap - aq) * digamma(ap)
        - gammaln(ap)
        + gammaln(aq)
        + aq * (math.log(bp) - math.log(bq))
        + ap * (bq - bp) / bp
    )


@settings(max_examples=50, deadline=None)
@given(ap=SHAPE, bp=RATE, aq=SHAPE, bq=RATE)
def test_kl_matches_closed_form(ap, bp, aq, bq):
    assert_alpha_beta_kl(
        GammaPoisson(), gamma_kl_closed_form, ap, bp, aq, bq, rtol=1e-8, atol=1e-10
    )


def gamma_kl_integral(ap, bp, aq, bq):
    p, q = stats.gamma(ap, scale=1 / bp), stats.gamma(aq, scale=1 / bq)
    top = p.ppf(1 - 1e-15)
    return kl_by_quadrature(p, q, 0.0, top, points=[p.mean()], epsabs=1e-14, epsrel=1e-11)


@pytest.mark.parametrize(
    "ap,bp,aq,bq", [(2.0, 1.0, 1.0, 1.0), (5.0, 0.5, 3.0, 2.0), (40.0, 10.0, 1.0, 0.1)]
)
def test_kl_matches_numerical_integral(ap, bp, aq, bq):
    assert_alpha_beta_kl(GammaPoisson(), gamma_kl_integral, ap, bp, aq, bq, rtol=1e-6)


@settings(max_examples=50, deadline=None)
@given(alpha=SHAPE, beta=RATE, x=st.lists(st.integers(0, 40), max_size=8))
def test_mean_and_variance_match_scipy(alpha, beta, x):
    model = GammaPoisson(alpha, beta)
    belief = model.prior + model.stats(x)
    post = stats.gamma(alpha + sum(x), scale=1 / (beta + len(x)))
    np.testing.assert_allclose(belief.mean, post.mean(), rtol=1e-12)
    np.testing.assert_allclose(belief.variance, post.var(), rtol=1e-12)


def test_sample_moments():
    model = GammaPoisson(2.0, 0.5)
    belief = model.prior + model.stats([3, 0, 5, 2])
    draws = model.sample(belief, np.random.default_rng(4), size=200_000)
    assert draws.mean() == pytest.approx(belief.mean, rel=5e-3)
    assert draws.var() == pytest.approx(belief.variance, rel=2e-2)
    # predictive: negative binomial
    counts = model.predictive_sample(belief, np.random.default_rng(5), size=200_000)
    nb = stats.nbinom(12.0, 4.5 / 5.5)
    assert counts.mean() == pytest.approx(nb.mean(), rel=1e-2)
    assert counts.var() == pytest.approx(nb.var(), rel=3e-2)


@pytest.mark.parametrize("bad", [[-1], [1.5, 2], [np.nan], [np.inf], ["a"]])
def test_bad_counts_raise(bad):
    with pytest.raises(ValueError, match="counts"):
        GammaPoisson().stats(bad)


def test_improper_belief_raises():
    model = GammaPoisson()
    with pytest.raises(ValueError, match="alpha and beta"):
        model.log_marginal(model.zeros(), model.stats([1]))
