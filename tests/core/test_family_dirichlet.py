"""DirichletCategorical against independent oracles: sequential predictive products
``α_k / Σα``, agreement with BetaBinomial for K = 2, the literature's Dirichlet KL,
scipy's Dirichlet moments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from core_testutils import kl_by_quadrature
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import digamma, gammaln

from bam_rl.families import BetaBinomial, DirichletCategorical, NaturalParams, stack


@st.composite
def concentrations(draw, min_k=2, max_k=6):
    k = draw(st.integers(min_k, max_k))
    return np.array(draw(st.lists(st.floats(0.2, 30.0), min_size=k, max_size=k)))


@st.composite
def model_and_sequence(draw, max_len=12):
    alpha = draw(concentrations())
    seq = draw(st.lists(st.integers(0, len(alpha) - 1), min_size=0, max_size=max_len))
    return alpha, np.array(seq, dtype=int)


def predictive_chain(alpha, seq):
    """Σ_i log p(x_i | x_<i), each the Pólya-urn probability α_k / Σα."""
    alpha = np.array(alpha, dtype=float)
    total = 0.0
    for x in seq:
        total += math.log(alpha[x] / alpha.sum())
        alpha[x] += 1.0
    return total


@settings(max_examples=50, deadline=None)
@given(case=model_and_sequence())
def test_log_marginal_matches_sequential_predictive(case):
    alpha, seq = case
    model = DirichletCategorical(alpha)
    oracle = predictive_chain(alpha, seq)
    by_index = model.log_marginal(model.prior, model.stats(observations=seq))
    counts = np.bincount(seq, minlength=len(alpha))
    by_counts = model.log_marginal(model.prior, model.stats(counts=counts))
    np.testing.assert_allclose(by_index, oracle, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(by_counts, oracle, rtol=1e-8, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(
    a=st.floats(0.2, 30.0),
    b=st.floats(0.2, 30.0),
    data=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=5),
)
def test_two_categories_agree_with_beta_binomial(a, b, data):
    """Sequence likelihood = Binomial likelihood without the coefficient log C(n, k)."""
    successes = np.array([s for s, _ in data])
    failures = np.array([f for _, f in data])
    trials = successes + failures
    beta_binomial = BetaBinomial(a, b)
    dirichlet = DirichletCategorical([a, b])
    s_bb = beta_binomial.stats(successes, trials)
    s_dir = dirichlet.stats(counts=np.stack([successes, failures], axis=-1))
    expected = beta_binomial.log_marginal(beta_binomial.prior, s_bb) - s_bb.log_h
    np.testing.assert_allclose(
        dirichlet.log_marginal(dirichlet.prior, s_dir), expected, rtol=1e-10, atol=1e-12
    )
    post_bb, post_dir = beta_binomial.prior + s_bb, dirichlet.prior + s_dir
    np.testing.assert_allclose(
        dirichlet.kl(post_dir, dirichlet.prior),
        beta_binomial.kl(post_bb, beta_binomial.prior),
        rtol=1e-10,
        atol=1e-12,
    )
    np.testing.assert_allclose(post_dir.mean[0], post_bb.mean, rtol=1e-12)
    np.testing.assert_allclose(post_dir.variance[0], post_bb.variance, rtol=1e-12)


def test_stats_axes_for_indices_and_counts():
    model = DirichletCategorical(alpha=1.0, n_categories=3)
    obs = np.array([[0, 2, 2, 1], [1, 1, 0, 2]])
    np.testing.assert_array_equal(model.stats(observations=obs).fields["alpha"], [2, 3, 3])
    rows = model.stats(observations=obs, axis=1)
    np.testing.assert_array_equal(rows.fields["alpha"], [[1, 1, 2], [1, 2, 1]])
    each = model.stats(observations=obs, axis=())
    assert each.batch_shape == (2, 4)
    np.testing.assert_array_equal(each.fields["alpha"][0, 1], [0, 0, 1])
    np.testing.assert_array_equal(
        model.stats(observations=obs, axis=-2).fields["alpha"],
        model.stats(observations=obs, axis=0).fields["alpha"],
    )
    assert model.stats(observations=1).batch_shape == ()
    counts = np.array([[1, 0, 2], [0, 0, 1]])
    assert model.stats(counts=counts).allclose(NaturalParams(model, {"alpha": [1, 0, 3]}))
    assert model.stats(counts=counts, axis=()).batch_shape == (2,)
    assert model.stats(counts=[1, 2, 3]).batch_shape == ()
    # log h = 0 either way
    assert np.all(each.log_h == 0) and np.all(model.stats(counts=counts, axis=()).log_h == 0)


def dirichlet_kl_closed_form(a, b):
    """KL(Dir(a) ‖ Dir(b)) (e.g. Penny 2001)."""
    a0, b0 = a.sum(), b.sum()
    return (
        gammaln(a0)
        - gammaln(a).sum()
        - gammaln(b0)
        + gammaln(b).sum()
        + ((a - b) * (digamma(a) - digamma(a0))).sum()
    )


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_kl_matches_closed_form(data):
    a = data.draw(concentrations())
    b = np.array(data.draw(st.lists(st.floats(0.2, 30.0), min_size=len(a), max_size=len(a))))
    model = DirichletCategorical(a)
    p, q = NaturalParams(model, {"alpha": a}), NaturalParams(model, {"alpha": b})
    np.testing.assert_allclose(
        model.kl(p, q), dirichlet_kl_closed_form(a, b), rtol=1e-8, atol=1e-10
    )


@pytest.mark.parametrize("a,b", [((2.0, 3.0), (1.0, 1.0)), ((7.0, 1.5), (2.0, 4.0))])
def test_kl_matches_numerical_integral_for_two_categories(a, b):
    value = kl_by_quadrature(stats.beta(*a), stats.beta(*b), 0.0, 1.0, epsabs=1e-14, epsrel=1e-11)
    model = DirichletCategorical(a)
    ours = model.kl(model.prior, NaturalParams(model, {"alpha": np.array(b)}))
    np.testing.assert_allclose(ours, value, rtol=1e-6)


@settings(max_examples=50, deadline=None)
@given(case=model_and_sequence())
def test_mean_and_variance_match_scipy(case):
    alpha, seq = case
    model = DirichletCategorical(alpha)
    belief = model.prior + model.stats(observations=seq)
    post = stats.dirichlet(alpha + np.bincount(seq, minlength=len(alpha)))
    assert belief.mean.shape == belief.variance.shape == (len(alpha),)
    np.testing.assert_allclose(belief.mean, post.mean(), rtol=1e-12)
    np.testing.assert_allclose(belief.variance, post.var(), rtol=1e-10)


def test_sample_moments_and_batches():
    model = DirichletCategorical([1.0, 2.0, 3.0])
    belief = model.prior + model.stats(observations=[0, 0, 2])
    draws = model.sample(belief, np.random.default_rng(6), size=200_000)
    assert draws.shape == (200_000, 3)
    np.testing.assert_allclose(draws.sum(axis=-1), 1.0)
    np.testing.assert_allclose(draws.mean(axis=0), belief.mean, rtol=1e-2)
    np.testing.assert_allclose(draws.var(axis=0), belief.variance, rtol=3e-2)
    # a batch of beliefs: one draw each, or size as in numpy (batch broadcast to size)
    batch = stack([model.prior, belief])
    one = model.sample(batch, np.random.default_rng(0))
    assert one.shape == (2, 3)
    many = model.sample(batch, np.random.default_rng(0), size=(10_000, 2))
    assert many.shape == (10_000, 2, 3)
    np.testing.assert_allclose(many.mean(axis=0), batch.mean, rtol=5e-2)
    np.testing.assert_array_equal(
        model.sample(batch, np.random.default_rng(1), size=(4, 2)),
        model.sample(batch, np.random.default_rng(1), size=(4, 2)),
    )
    with pytest.raises(ValueError, match="size"):
        model.sample(batch, np.random.default_rng(0), size=3)
    # predictive draws are category indices with the posterior-mean frequencies
    idx = model.predictive_sample(belief, np.random.default_rng(2), size=100_000)
    np.testing.assert_allclose(np.bincount(idx, minlength=3) / 1e5, belief.mean, atol=1e-2)


# ---------------------------------------------------------------------------- validation
def test_constructor_forms_agree():
    a = DirichletCategorical(alpha=0.5, n_categories=3)
    b = DirichletCategorical([0.5, 0.5, 0.5], n_categories=3)
    assert a.prior.allclose(b.prior)
    assert a.n_categories == 3
    assert a.signature() == b.signature()
    user = np.array([1.0, 2.0])
    model = DirichletCategorical(user)
    user[0] = 5.0  # the caller's array is neither frozen nor aliased
    assert model.alpha[0] == 1.0
    assert model.prior.fields["alpha"][0] == 1.0


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"observations": [0, 3]}, "observations"),
        ({"observations": [-1]}, "observations"),
        ({"observations": [0.5]}, "observations"),
        ({"observations": [np.nan]}, "observations"),
        ({"counts": [1, 2]}, "counts"),
        ({"counts": [[1, 2, 3, 4]]}, "counts"),
        ({"counts": 3}, "counts"),
        ({"counts": [1, -1, 0]}, "counts"),
        ({"counts": [1, 0.5, 0]}, "counts"),
        ({"counts": [1, np.inf, 0]}, "counts"),
        ({}, "observations"),
        ({"observations": [0], "counts": [1, 0, 0]}, "observations"),
        ({"observations": [[0, 1]], "axis": 2}, "axis"),
        ({"counts": [[1, 0, 0]], "axis": 1}, "axis"),
    ],
)
def test_bad_statistics_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DirichletCategorical(alpha=1.0, n_categories=3).stats(**kwargs)


def test_improper_belief_raises():
    model = DirichletCategorical([1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="alpha"):
        model.log_marginal(model.zeros(), model.stats(observations=[0]))
