"""BetaBinomial against independent oracles: scipy's beta-binomial pmf, numerical integration
over θ, closed-form and integrated KL, scipy's Beta moments."""

from __future__ import annotations

import numpy as np
import pytest
from core_testutils import assert_alpha_beta_kl, kl_by_quadrature, log_quadrature
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import betaln, digamma

from bam_rl.families import BetaBinomial, stack

POSITIVE = st.floats(0.3, 30.0)


@st.composite
def binomial_data(draw, max_items=5, max_trials=20):
    trials = draw(st.lists(st.integers(0, max_trials), min_size=1, max_size=max_items))
    successes = [draw(st.integers(0, n)) for n in trials]
    return np.array(successes), np.array(trials)


def brute_force_log_marginal(a, b, successes, trials):
    """log ∫ Π_i Binom(k_i | n_i, θ) Beta(θ | a, b) dθ by adaptive quadrature."""

    def log_integrand(theta):
        return stats.binom.logpmf(successes, trials, theta).sum() + stats.beta.logpdf(theta, a, b)

    # the mode is only a hint for the integrator's subdivision (and its scale)
    k, n = successes.sum(), trials.sum()
    mode = min(max((a + k - 1) / (a + b + n - 2), 1e-3), 1 - 1e-3) if a + b + n > 2 else 0.5
    return log_quadrature(log_integrand, 0.0, 1.0, mode, epsabs=0.0, epsrel=1e-10)


@settings(max_examples=50, deadline=None)
@given(a=POSITIVE, b=POSITIVE, n=st.integers(0, 40), data=st.data())
def test_single_count_matches_scipy_betabinom(a, b, n, data):
    k = data.draw(st.integers(0, n))
    model = BetaBinomial(a, b)
    value = model.log_marginal(model.prior, model.stats(k, n))
    np.testing.assert_allclose(value, stats.betabinom.logpmf(k, n, a, b), rtol=1e-8, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(a=POSITIVE, b=POSITIVE, counts=binomial_data())
def test_counts_kept_apart_match_scipy_betabinom(a, b, counts):
    k, n = counts
    model = BetaBinomial(a, b)
    values = model.log_marginal(model.prior, model.stats(k, n, axis=()))
    np.testing.assert_allclose(values, stats.betabinom.logpmf(k, n, a, b), rtol=1e-8, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0.5, 20.0), b=st.floats(0.5, 20.0), counts=binomial_data())
def test_several_counts_in_one_datum_match_numerical_integral(a, b, counts):
    k, n = counts
    model = BetaBinomial(a, b)
    value = model.log_marginal(model.prior, model.stats(k, n))
    np.testing.assert_allclose(value, brute_force_log_marginal(a, b, k, n), rtol=1e-8, atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(a=POSITIVE, b=POSITIVE, counts=binomial_data(max_items=8))
def test_predictive_chain_equals_batch_marginal(a, b, counts):
    """Σ_i log p(k_i | k_<i), scored against scipy's one-step predictive."""
    k, n = counts
    model = BetaBinomial(a, b)
    belief, ours, oracle = model.prior, 0.0, 0.0
    alpha, beta = a, b
    for k_i, n_i in zip(k, n, strict=True):
        s = model.stats(k_i, n_i)
        ours += model.log_marginal(belief, s)
        belief = belief + s
        oracle += stats.betabinom.logpmf(k_i, n_i, alpha, beta)
        alpha, beta = alpha + k_i, beta + n_i - k_i
    batch = model.log_marginal(model.prior, model.stats(k, n))
    np.testing.assert_allclose(ours, batch, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(batch, oracle, rtol=1e-8, atol=1e-10)


# ----------------------------------------------------------------------------------- KL
def beta_kl_closed_form(ap, bp, aq, bq):
    """KL(Beta(ap, bp) ‖ Beta(aq, bq)), e.g. Penny (2001) / Wikipedia."""
    return (
        betaln(aq, bq)
        - betaln(ap, bp)
        + (ap - aq) * digamma(ap)
        + (bp - bq) * digamma(bp)
        + (aq - ap + bq - bp) * digamma(ap + bp)
    )


def beta_kl_integral(ap, bp, aq, bq):
    p, q = stats.beta(ap, bp), stats.beta(aq, bq)
    return kl_by_quadrature(p, q, 0.0, 1.0, epsabs=1e-13, epsrel=1e-11)


def test_kl_known_value():
    kl = BetaBinomial(1, 1).kl(BetaBinomial(2, 3).prior, BetaBinomial(1, 1).prior)
    assert kl == pytest.approx(0.2349066497880008, rel=1e-12)
    assert kl == pytest.approx(-stats.beta(2, 3).entropy(), rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(ap=POSITIVE, bp=POSITIVE, aq=POSITIVE, bq=POSITIVE)
def test_kl_matches_closed_form(ap, bp, aq, bq):
    assert_alpha_beta_kl(BetaBinomial(), beta_kl_closed_form, ap, bp, aq, bq, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize(
    "ap,bp,aq,bq", [(2, 3, 1, 1), (5.5, 1.2, 2.0, 7.0), (30, 40, 3, 4), (1.5, 1.5, 12.0, 2.5)]
)
def test_kl_matches_numerical_integral(ap, bp, aq, bq):
    assert_alpha_beta_kl(BetaBinomial(), beta_kl_integral, ap, bp, aq, bq, rtol=1e-6)


# ------------------------------------------------------------------------------ moments
@settings(max_examples=50, deadline=None)
@given(a=POSITIVE, b=POSITIVE, counts=binomial_data())
def test_mean_and_variance_match_scipy(a, b, counts):
    k, n = counts
    model = BetaBinomial(a, b)
    belief = model.prior + model.stats(k, n)
    post = stats.beta(a + k.sum(), b + (n - k).sum())
    np.testing.assert_allclose(belief.mean, post.mean(), rtol=1e-12)
    np.testing.assert_allclose(belief.variance, post.var(), rtol=1e-10)


def test_sample_moments_and_batching():
    model = BetaBinomial(2.0, 5.0)
    belief = model.prior + model.stats([3, 1], [4, 6])
    draws = model.sample(belief, np.random.default_rng(0), size=200_000)
    dist = stats.beta(6.0, 11.0)
    assert draws.mean() == pytest.approx(dist.mean(), rel=5e-3)
    assert draws.var() == pytest.approx(dist.var(), rel=2e-2)
    np.testing.assert_array_equal(
        draws[:10], model.sample(belief, np.random.default_rng(0), size=10)
    )
    batch = stack([model.prior, belief])
    assert model.sample(batch, np.random.default_rng(0)).shape == (2,)
    assert model.sample(batch, np.random.default_rng(0), size=(3, 2)).shape == (3, 2)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "successes,trials,name",
    [
        (-1, 5, "successes"),
        (2, -1, "trials"),
        (1.5, 5, "successes"),
        (1, 4.5, "trials"),
        (np.nan, 5, "successes"),
        (1, np.inf, "trials"),
        (6, 5, "successes"),
        ([1, 2, 3], [4, 5], "successes"),
        ("a", 3, "successes"),
    ],
)
def test_bad_counts_raise(successes, trials, name):
    with pytest.raises(ValueError, match=name):
        BetaBinomial().stats(successes, trials)


def test_improper_belief_raises():
    model = BetaBinomial()
    with pytest.raises(ValueError, match="alpha and beta"):
        model.log_marginal(model.zeros(), model.stats(1, 2))
    with pytest.raises(ValueError, match="alpha and beta"):
        model.kl(model.prior, model.zeros())
