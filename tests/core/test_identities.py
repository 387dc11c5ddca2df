"""The paper's special cases of the BAM prior (§2) as identities, and Proposition 1."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.families import BetaBinomial, GammaPoisson, NormalKnownVariance
from bam_rl.memory import Memory


def beta_binomial_data(seed, size):
    rng = np.random.default_rng(seed)
    trials = rng.integers(1, 20, size=size)
    successes = rng.binomial(trials, rng.uniform(0.05, 0.95, size=size))
    return successes, trials


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 30),
    alpha=st.floats(0.0, 1.0),
    a0=st.floats(0.1, 5.0),
    b0=st.floats(0.1, 5.0),
)
def test_special_cases_of_the_readout(seed, size, alpha, a0, b0):
    """Closed-form Beta parameters, computed without NaturalParams, for each special case."""
    model = BetaBinomial(alpha=a0, beta=b0)
    successes, trials = beta_binomial_data(seed, size)
    memory = Memory()
    for k, n in zip(successes, trials, strict=True):
        memory.add(model.stats(successes=k, trials=n))
    failures = trials - successes

    # all weights 1: recursive Bayes, updated one datum at a time
    recursive = model.prior
    for s in memory:
        recursive = model.posterior(recursive, s)
    everything = memory.weighted_sum(np.ones(size), base=model.prior)
    assert everything.allclose(recursive)
    np.testing.assert_allclose(everything.fields["alpha"], a0 + successes.sum(), rtol=1e-12)

    # all alpha: the power prior p(θ) Π p(D_j | θ)^α
    power = memory.weighted_sum(np.full(size, alpha), base=model.prior)
    np.testing.assert_allclose(power.fields["alpha"], a0 + alpha * successes.sum(), rtol=1e-12)
    np.testing.assert_allclose(power.fields["beta"], b0 + alpha * failures.sum(), rtol=1e-12)

    # alpha^(t-1-j): the exponential-forgetting recursion on decayed statistics,
    # S_{t+1} = α S_t + s_t, whose prior for the next datum is η0 + S
    a, b = 0.0, 0.0
    for k, n in zip(successes, trials, strict=True):
        a, b = alpha * a + k, alpha * b + (n - k)
    t = size + 1  # the next datum's index; memory holds j = 1..t-1
    forgetting = memory.weighted_sum(alpha ** (t - 1 - np.arange(1, t)), base=model.prior)
    np.testing.assert_allclose(forgetting.fields["alpha"], a0 + a, rtol=1e-10)
    np.testing.assert_allclose(forgetting.fields["beta"], b0 + b, rtol=1e-10)

    # all weights 0: the base prior, at KL 0
    nothing = memory.weighted_sum(np.zeros(size), base=model.prior)
    assert nothing.allclose(model.prior)
    assert model.kl(nothing, model.prior) == 0.0


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 25))
def test_predictive_chain_equals_batch_marginal(seed, size):
    """Σ_i log p(y_i | y_<i) equals log p(y_1..n) for every scalar family."""
    rng = np.random.default_rng(seed)
    cases = [
        (BetaBinomial(2.0, 3.0), [dict(successes=k, trials=9) for k in rng.integers(0, 10, size)]),
        (NormalKnownVariance(0.5, 2.0, 0.7), [dict(values=[y]) for y in rng.normal(0, 2, size)]),
        (GammaPoisson(2.0, 0.5), [dict(counts=[x]) for x in rng.poisson(3.0, size)]),
    ]
    for model, data in cases:
        pieces = [_stats(model, d) for d in data]
        belief, chain = model.prior, 0.0
        for s in pieces:
            chain += model.log_marginal(belief, s)
            belief = belief + s
        batch = pieces[0]
        for s in pieces[1:]:
            batch = batch + s
        assert chain == pytest.approx(model.log_marginal(model.prior, batch), rel=1e-10)


def _stats(model, datum):
    if isinstance(model, BetaBinomial):
        return model.stats(**datum)
    return model.stats(next(iter(datum.values())))


def _variance_gaps(weight_vectors, draws=20_000, past=5, trials=4, seed=2022):
    """Monte Carlo mean and standard error of Var(θ | D, W) − Var(θ | D) per readout,
    with θ drawn from the prior and the data from the model (the proposition's setting)."""
    rng = np.random.default_rng(seed)
    model = BetaBinomial(alpha=2.0, beta=2.0)
    theta = rng.beta(2.0, 2.0, size=draws)
    counts = rng.binomial(trials, theta[:, None], size=(draws, past))
    stats = model.stats(successes=counts, trials=trials, axis=())  # batch (draws, past)
    var_full = (model.prior + stats.sum(axis=1)).variance
    results = []
    for weights in weight_vectors:
        readout = model.prior + _weighted(stats, np.asarray(weights, float))
        difference = readout.variance - var_full
        results.append((difference.mean(), difference.std(ddof=1) / np.sqrt(draws)))
    return results


def test_proposition_1_by_monte_carlo():
    """E[Var(θ | D_<t, W)] >= E[Var(θ | D_<t)] for every binary readout W."""
    patterns = list(itertools.product((0, 1), repeat=5))
    gaps = _variance_gaps(patterns)
    for pattern, (mean, se) in zip(patterns, gaps, strict=True):
        assert mean >= -3 * se, (pattern, mean, se)
    assert gaps[-1][0] == pytest.approx(0.0, abs=1e-15)  # equality at W = 1 ...
    assert min(mean for mean, _ in gaps[:-1]) > 0  # ... and strict elsewhere


def test_proposition_1_check_detects_weights_above_one():
    """The same Monte Carlo check flags readouts outside BAM's range: w = 2 over-counts the
    data and shrinks the variance below recursive Bayes."""
    ((mean, se),) = _variance_gaps([[2, 2, 2, 2, 2]])
    assert mean < -3 * se


def _weighted(stats, weights):
    """Σ_j w_j s[:, j] for a (draws, past) batch of statistics."""
    fields = {k: (v * weights).sum(axis=1) for k, v in stats.fields.items()}
    return type(stats)(stats.family, fields)
