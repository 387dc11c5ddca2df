"""Readout selection checked against literal transcriptions of the paper's algorithms and
against brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.families import BetaBinomial, NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout import objective, select


# ----------------------------------------------------------------- oracles (written in loops)
def literal_objective(model, memory, s_t, weights, lam):
    """J(W) built item by item with the family's single-belief methods."""
    belief = model.prior
    for w, s in zip(weights, memory, strict=True):
        if w:
            belief = belief + w * s
    value = model.log_marginal(belief, s_t)
    kl = max(model.kl(belief, model.prior), 0.0)
    return value - lam * math.sqrt(2.0 * kl)


def literal_algorithm_1(model, memory, s_t, lam):
    """Algorithm 1 (bottom-up greedy) line by line, with the unselected-item fix."""
    size = len(memory)
    weights = [0] * size
    priorscore = literal_objective(model, memory, s_t, weights, lam)
    for _ in range(size):
        scores = []
        for i in range(size):
            if weights[i] == 0:  # the paper's pseudo-code has `W[i] > 0` here
                trial = list(weights)
                trial[i] = 1
                scores.append(literal_objective(model, memory, s_t, trial, lam))
            else:
                scores.append(-math.inf)
        score = max(scores)
        idx = scores.index(score)  # findmax: first maximum
        if score > priorscore:
            weights[idx] = 1
            priorscore = score
        else:
            return weights
    return weights


def literal_algorithm_2(model, memory, s_t, lam, q):
    """Algorithm 2 (parallel) line by line, selecting scores at or above the cut-off."""
    size = len(memory)
    priorscore = literal_objective(model, memory, s_t, [0] * size, lam)
    scores = []
    for i in range(size):
        alone = [0] * size
        alone[i] = 1
        scores.append(literal_objective(model, memory, s_t, alone, lam))
    kept = [s for s in scores if s > priorscore]
    weights = [0] * size
    if not kept:
        return weights
    cutoff = np.quantile(kept, q)
    for i in range(size):
        weights[i] = 1 if scores[i] > priorscore and scores[i] >= cutoff else 0
    return weights


# ------------------------------------------------------------------------------ fixtures
def binomial_memory(rng, size, n=15):
    model = BetaBinomial(alpha=1.0, beta=1.0)
    memory = Memory()
    thetas = rng.choice([0.2, 0.5, 0.8], size=size)
    for theta in thetas:
        memory.add(model.stats(successes=rng.binomial(n, theta), trials=n))
    s_t = model.stats(successes=rng.binomial(n, rng.choice(thetas)), trials=n)
    return model, memory, s_t


def normal_memory(rng, size, batch=5):
    model = NormalKnownVariance(mean=0.0, var=4.0, noise_var=1.0)
    memory = Memory()
    means = rng.choice([-1.0, 0.0, 2.0], size=size)
    for mu in means:
        memory.add(model.stats(rng.normal(mu, 1.0, size=batch)))
    s_t = model.stats(rng.normal(rng.choice(means), 1.0, size=batch))
    return model, memory, s_t


MEMORIES = [binomial_memory, normal_memory]


def memories(max_size: int):
    """``(model, memory, s_t)`` from one of :data:`MEMORIES`, seeded, with 1 to ``max_size``
    items."""
    return st.builds(
        lambda seed, size, which: which(np.random.default_rng(seed), size),
        st.integers(0, 2**32 - 1),
        st.integers(1, max_size),
        st.sampled_from(MEMORIES),
    )


@settings(max_examples=25, deadline=None)
@given(case=memories(9), lam=st.sampled_from([0.0, 0.1, 1.0]))
def test_greedy_matches_literal_algorithm_1(case, lam):
    model, memory, s_t = case
    result = select(model, memory, s_t, lam=lam, method="greedy")
    expected = literal_algorithm_1(model, memory, s_t, lam)
    np.testing.assert_array_equal(result.weights, expected)
    assert result.objective == pytest.approx(
        literal_objective(model, memory, s_t, expected, lam), rel=1e-10, abs=1e-10
    )


@settings(max_examples=25, deadline=None)
@given(
    case=memories(9),
    lam=st.sampled_from([0.0, 0.1]),
    q=st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]),
)
def test_parallel_matches_literal_algorithm_2(case, lam, q):
    model, memory, s_t = case
    result = select(model, memory, s_t, lam=lam, method="parallel", q=q)
    np.testing.assert_array_equal(result.weights, literal_algorithm_2(model, memory, s_t, lam, q))


def test_parallel_keeps_tied_scores():
    """Equal counts tie at the median; the strict '>' of the pseudo-code would select none."""
    model = BetaBinomial()
    memory = Memory()
    for k in (3, 3, 3, 12, 12):
        memory.add(model.stats(successes=k, trials=15))
    result = select(model, memory, model.stats(successes=3, trials=15), method="parallel", q=0.5)
    np.testing.assert_array_equal(result.weights, [1, 1, 1, 0, 0])


@settings(max_examples=15, deadline=None)
@given(case=memories(10), lam=st.sampled_from([0.0, 0.3]))
def test_exhaustive_is_the_brute_force_maximum(case, lam):
    model, memory, s_t = case
    result = select(model, memory, s_t, lam=lam, method="exhaustive")
    brute = {
        w: literal_objective(model, memory, s_t, w, lam)
        for w in itertools.product((0, 1), repeat=len(memory))
    }
    best = max(brute.values())
    assert result.objective == pytest.approx(best, rel=1e-10, abs=1e-10)
    assert brute[tuple(int(w) for w in result.weights)] == pytest.approx(best, rel=1e-10)
    assert result.scores[0].shape == (2 ** len(memory),)


def test_exhaustive_on_twelve_items():
    model, memory, s_t = binomial_memory(np.random.default_rng(7), 12)
    result = select(model, memory, s_t, lam=0.1, method="exhaustive")
    brute = [
        literal_objective(model, memory, s_t, w, 0.1) for w in itertools.product((0, 1), repeat=12)
    ]
    assert result.objective == pytest.approx(max(brute), rel=1e-10)
    greedy = select(model, memory, s_t, lam=0.1, method="greedy")
    assert greedy.objective <= result.objective + 1e-12


@settings(max_examples=20, deadline=None)
@given(case=memories(12), lam=st.sampled_from([0.0, 0.1, 1.0]))
def test_continuous_never_worse_than_its_greedy_start(case, lam):
    model, memory, s_t = case
    greedy = select(model, memory, s_t, lam=lam, method="greedy")
    result = select(model, memory, s_t, lam=lam, method="continuous", initial=greedy.weights)
    assert result.objective >= greedy.objective - 1e-12
    assert np.all((result.weights >= 0) & (result.weights <= 1))
    assert result.objective == pytest.approx(
        objective(model, memory, s_t, result.weights, lam), rel=1e-12
    )


def test_continuous_improves_on_a_binary_readout():
    """Fractional weights reach objectives that no binary readout can."""
    model, memory, s_t = binomial_memory(np.random.default_rng(0), 10)
    exhaustive = select(model, memory, s_t, method="exhaustive")
    continuous = select(model, memory, s_t, method="continuous")
    assert continuous.objective > exhaustive.objective + 1e-6


def test_continuous_gradient_matches_finite_differences():
    from scipy.optimize import check_grad

    model, memory, s_t = normal_memory(np.random.default_rng(3), 6)
    for lam in (0.0, 0.5):

        def f(w, lam=lam):
            return objective(model, memory, s_t, w, lam)

        # Re-use the selector's gradient through a one-iteration run is indirect; instead the
        # analytic formula is checked here against finite differences of J.
        from bam_rl.readout.select import _kl_gradient

        def grad(w, lam=lam):
            stats = memory.stats
            belief = model.prior + stats.weighted_sum(w)
            g_post = model.grad_log_partition(belief + s_t)
            g_prior = model.grad_log_partition(belief)
            value = stats.inner({k: g_post[k] - g_prior[k] for k in g_post})
            if lam:
                kl = model.kl(belief, model.prior)
                value = value - lam * stats.inner(_kl_gradient(model, belief)) / np.sqrt(2 * kl)
            return value

        w0 = np.random.default_rng(1).uniform(0.2, 0.8, size=6)
        assert check_grad(f, grad, w0, epsilon=1e-6) < 1e-4 * (1 + np.abs(grad(w0)).max())


def test_audit_trail_of_greedy():
    model, memory, s_t = binomial_memory(np.random.default_rng(11), 8)
    result = select(model, memory, s_t, method="greedy")
    assert len(result.scores) == int(result.weights.sum()) + (1 if result.weights.sum() < 8 else 0)
    for round_scores in result.scores:
        finite = np.isfinite(round_scores)
        for j in np.flatnonzero(finite)[:2]:  # spot-check the recorded candidate objectives
            assert np.isfinite(round_scores[j])
    assert result.n_evaluations >= len(memory)


def test_empty_memory_returns_base_prior():
    model = BetaBinomial()
    s_t = model.stats(successes=3, trials=10)
    for method in ("greedy", "parallel", "exhaustive", "continuous"):
        result = select(model, Memory(), s_t, method=method)
        assert result.weights.shape == (0,)
        assert result.objective == pytest.approx(model.log_marginal(model.prior, s_t))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lam": -0.1}, "lam"),
        ({"lam": float("nan")}, "lam"),
        ({"method": "annealing"}, "method"),
        ({"method": "parallel", "q": 1.5}, "q"),
    ],
)
def test_bad_arguments(kwargs, match):
    model, memory, s_t = binomial_memory(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match=match):
        select(model, memory, s_t, **kwargs)


def test_bad_statistics_and_sizes():
    model, memory, s_t = binomial_memory(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="s_t"):
        select(model, memory, NormalKnownVariance().stats([0.1]))
    with pytest.raises(ValueError, match="s_t"):
        select(model, memory, model.stats(successes=[1, 2], trials=3, axis=()))
    big, big_memory, big_s = binomial_memory(np.random.default_rng(0), 17)
    with pytest.raises(ValueError, match="at most 16"):
        select(big, big_memory, big_s, method="exhaustive")
    with pytest.raises(ValueError, match="initial"):
        select(model, memory, s_t, method="continuous", initial=[0.5, 2.0, 0.0])
    with pytest.raises(ValueError, match="weights"):
        objective(model, memory, s_t, [0.5, 1.2, 0.0])


def test_greedy_is_batched_for_bayesian_linear_regression():
    """d_in = 200, d_out = 4, 100 records of 200 rows: each greedy round scores every
    candidate in one batched call (two log-partition evaluations per round, no loop)."""
    from bam_rl.families import BayesianLinearRegression

    rng = np.random.default_rng(0)
    model = BayesianLinearRegression(dim_in=200, dim_out=4, prior_precision=1.0, noise_var=0.1)
    weights_true = [rng.normal(size=(4, 200)) * 0.1 for _ in range(3)]
    memory = Memory()
    for j in range(100):
        x = rng.normal(size=(200, 200))
        memory.add(model.stats(x, x @ weights_true[j % 3].T + rng.normal(0, 0.3, (200, 4))))
    x = rng.normal(size=(200, 200))
    s_t = model.stats(x, x @ weights_true[0].T + rng.normal(0, 0.3, (200, 4)))

    calls = []
    original = model.log_partition_fields

    def counting(fields):
        calls.append(fields["precision"].shape[:-2])
        return original(fields)

    model.log_partition_fields = counting
    result = select(model, memory, s_t, method="greedy")
    rounds = len(result.scores)
    assert len(calls) == 2 * (rounds + 1)  # base score, then 2 per round
    assert max(int(np.prod(shape)) for shape in calls) == 100  # all candidates at once
    assert np.all(np.isfinite(result.scores[0]))
    # it remembers the records generated by the same regression as the new datum
    selected = result.selected
    assert len(selected) > 0 and np.all(selected % 3 == 0)
