"""The fast greedy paths (bam_rl.fast_readout) against the generic greedy loop, and the stable
regression evidence against independent oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    BetaBinomial,
    DirichletCategorical,
    GammaPoisson,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl.families.base import ConjugateFamily
from bam_rl.memory import Memory
from bam_rl.readout import select


def _both(model, memory, s_t, lam):
    fast = select(model, memory, s_t, lam=lam, method="greedy")
    slow = select(model, memory, s_t, lam=lam, method="greedy", fast=False)
    return fast, slow


def _same_readout(fast, slow, rel=1e-9):
    np.testing.assert_array_equal(fast.weights, slow.weights)
    assert fast.objective == pytest.approx(slow.objective, rel=rel, abs=rel)
    assert fast.base_objective == pytest.approx(slow.base_objective, rel=rel, abs=rel)
    assert len(fast.scores) == len(slow.scores)
    assert fast.n_evaluations == slow.n_evaluations or fast.path.startswith("regression")


# ------------------------------------------------------------------ one-point Gaussian records
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 60),
    lam=st.sampled_from([0.0, 0.05, 0.5, 3.0]),
    pool=st.sampled_from([0, 3, 8]),
    n_obs=st.sampled_from([1, 1, 3]),
)
def test_gaussian_fast_path_equals_generic(seed, size, lam, pool, n_obs):
    """Records of ``n_obs`` observations each; ``pool > 0`` draws every record from a few
    fixed ones, so exact duplicates (ties: lowest index) are frequent."""
    rng = np.random.default_rng(seed)
    model = NormalKnownVariance(rng.uniform(-1, 1), rng.uniform(0.05, 2.0), rng.uniform(0.01, 1.0))
    centre = rng.uniform(-1, 1)
    choices = rng.normal(centre, 0.5, size=(pool, n_obs)) if pool else None

    def draw():
        return choices[rng.integers(pool)] if pool else rng.normal(centre, 0.5, n_obs)

    memory = Memory()
    for _ in range(size):
        memory.add(model.stats(draw()))
    y_t = draw()
    fast, slow = _both(model, memory, model.stats(y_t), lam)
    assert fast.path == "gaussian"
    _same_readout(fast, slow)


def test_gaussian_fast_path_audit_trail_is_the_generic_one():
    rng = np.random.default_rng(4)
    model = NormalKnownVariance(0.5, 0.25, 0.0625)
    memory = Memory()
    for y in rng.normal(0.6, 0.2, 40):
        memory.add(model.stats([y]))
    fast, slow = _both(model, memory, model.stats([0.55]), 0.0)
    assert fast.path == "gaussian" and fast.selected.size > 3
    for a, b in zip(fast.scores, slow.scores, strict=True):
        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
        np.testing.assert_allclose(a[np.isfinite(a)], b[np.isfinite(b)], rtol=1e-12)


def test_gaussian_symmetric_tie_goes_to_the_lowest_index():
    """Values symmetric about the peak tie exactly; the lower memory index wins."""
    model = NormalKnownVariance(mean=0.0, var=1.0, noise_var=1.0)
    for values, expected_first in (([1.0, -1.0], 0), ([-1.0, 1.0], 0), ([2.0, 1.0, -1.0], 1)):
        memory = Memory()
        for y in values:
            memory.add(model.stats([y]))
        fast, slow = _both(model, memory, model.stats([0.0]), 0.0)
        assert fast.weights[expected_first] == 1.0 or not fast.weights.any()
        _same_readout(fast, slow)


def test_mixed_record_sizes_use_the_generic_or_grouped_path():
    model = NormalKnownVariance()
    memory = Memory()
    memory.add(model.stats([0.1]))
    memory.add(model.stats([0.1, 0.2]))
    result = select(model, memory, model.stats([0.1]))
    assert result.path in ("generic", "grouped")


# ------------------------------------------------------------------------- repeated records
def _discrete_case(rng, which):
    if which == "beta":
        model = BetaBinomial(rng.uniform(0.5, 2), rng.uniform(0.5, 2))
        trials = int(rng.integers(1, 6))

        def make():
            theta = rng.choice([0.2, 0.8])
            return model.stats(successes=rng.binomial(trials, theta), trials=trials)

    elif which == "poisson":
        model = GammaPoisson(rng.uniform(0.5, 2), rng.uniform(0.5, 2))

        def make():
            return model.stats([rng.poisson(rng.choice([1.0, 6.0]))])

    elif which == "dirichlet":
        model = DirichletCategorical(np.ones(3))

        def make():
            return model.stats(rng.integers(0, 3, size=2))

    else:
        model = NormalGamma(0.0, 1.0, 2.0, 1.0)

        def make():
            return model.stats(np.round(rng.normal(rng.choice([-1, 2]), 1.0, 1), 0))

    return model, make


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 50),
    lam=st.sampled_from([0.0, 0.1, 1.0]),
    which=st.sampled_from(["beta", "poisson", "dirichlet", "normal-gamma"]),
)
def test_grouped_fast_path_is_bit_identical(seed, size, lam, which):
    rng = np.random.default_rng(seed)
    model, make = _discrete_case(rng, which)
    memory = Memory()
    for _ in range(size):
        memory.add(make())
    fast, slow = _both(model, memory, make(), lam)
    assert fast.path in ("grouped", "generic")
    np.testing.assert_array_equal(fast.weights, slow.weights)
    assert fast.objective == slow.objective
    assert fast.base_objective == slow.base_objective
    assert fast.n_evaluations == slow.n_evaluations
    assert len(fast.scores) == len(slow.scores)
    for a, b in zip(fast.scores, slow.scores, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bernoulli_memory_is_grouped():
    model = BetaBinomial()
    memory = Memory()
    for k in [1, 0, 1, 1, 0, 1] * 20:
        memory.add(model.stats(successes=k, trials=1))
    fast, slow = _both(model, memory, model.stats(successes=1, trials=1), 0.0)
    assert fast.path == "grouped"
    _same_readout(fast, slow, rel=0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    capacity=st.integers(5, 60),
    adds=st.integers(1, 400),
    success=st.integers(0, 1),
)
def test_grouped_scoring_ahead_matches_the_generic_loop_on_a_bandit_arms_memory(
    seed, capacity, adds, success
):
    # a bounded memory of Bernoulli rewards merges them into records of 2^k successes or
    # failures: few groups, each winning many rounds in a row (the batches scored ahead)
    rng = np.random.default_rng(seed)
    model = BetaBinomial()
    memory = Memory(capacity=capacity)
    for reward in rng.random(adds) < rng.uniform(0.1, 0.9):
        memory.add(model.stats(successes=int(reward), trials=1))
    fast, slow = _both(model, memory, model.stats(successes=success, trials=1), 0.0)
    np.testing.assert_array_equal(fast.weights, slow.weights)
    assert fast.objective == slow.objective
    for a, b in zip(fast.scores, slow.scores, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_refusal_in_rounds_scored_ahead_is_not_the_greedys():
    # the objective refuses any batch of more than one round: the rounds are rescored one at a
    # time and the readout is the generic one, with no error
    from bam_rl.readout.greedy import _grouped_greedy
    from bam_rl.readout.select import _Objective

    model = BetaBinomial()
    memory = Memory()
    for k in [1, 1, 0, 1, 1, 1, 0, 1] * 10:
        memory.add(model.stats(successes=k, trials=1))
    s_t = model.stats(successes=1, trials=1)
    objective = _Objective(model, s_t, 0.0)
    calls = []

    def one_round_only(candidates):
        calls.append(candidates["alpha"].size)
        if candidates["alpha"].size > 2:  # two groups: more is a batch of rounds
            raise ValueError("readout objective is not finite")
        return objective(candidates)

    fast = _grouped_greedy(model, memory, s_t, one_round_only)
    slow = select(model, memory, s_t, method="greedy", fast=False)
    assert max(calls) > 2  # it did score ahead, and fell back
    assert sum(size > 2 for size in calls) == 1  # once refused, round by round after that
    np.testing.assert_array_equal(fast.weights, slow.weights)
    assert fast.objective == slow.objective


# ------------------------------------------------------------------- linear regression
def _regression_memory(rng, model, size, rows, new_rows, dead=0):
    d, p = model.dim_in, model.dim_out
    truths = [rng.normal(size=(p, d)) for _ in range(3)]
    noise = np.sqrt(getattr(model, "noise_var", 0.1))

    def datum(truth, n):
        x = rng.normal(size=(n, d))
        x[:, :dead] = 0.0
        return x, x @ truth.T + noise * rng.normal(size=(n, p))

    memory = Memory()
    for j in range(size):
        memory.add(model.stats(*datum(truths[j % 3], rows)))
    return memory, model.stats(*datum(truths[0], new_rows))


@pytest.mark.parametrize("family", ["known", "nig"])
@pytest.mark.parametrize(("new_rows", "lam"), [(2, 0.0), (40, 0.0), (3, 0.5)])
def test_regression_fast_path_equals_generic(family, new_rows, lam):
    rng = np.random.default_rng(new_rows)
    d, p = 12, 3
    if family == "known":
        model = BayesianLinearRegression(d, p, prior_precision=0.5, noise_var=0.2)
    else:
        model = BayesianLinearRegressionNIG(d, p, prior_precision=0.5, a=2.0, b=1.0)
    memory, s_t = _regression_memory(rng, model, 9, 6, new_rows, dead=2)
    fast, slow = _both(model, memory, s_t, lam)
    assert fast.path == ("regression-low-rank" if new_rows < 4 else "regression")
    _same_readout(fast, slow)
    for a, b in zip(fast.scores, slow.scores, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9)
    # and the generic loop over the family's A (the straightforward algebra)
    exhaustive = select(model, memory, s_t, lam=lam, method="exhaustive")
    assert fast.objective <= exhaustive.objective + 1e-9


def test_regression_greedy_matches_literal_algorithm_1_with_plain_evidence():
    """The fast path against Algorithm 1 scored by A(η + s) − A(η) (well conditioned here)."""
    rng = np.random.default_rng(3)
    model = BayesianLinearRegression(8, 2, prior_precision=1.0, noise_var=0.5)
    memory, s_t = _regression_memory(rng, model, 10, 5, 4)
    items = list(memory)
    chosen, belief = np.zeros(len(items)), model.prior
    best = ConjugateFamily.log_marginal(model, belief, s_t)
    while not chosen.all():
        scores = [
            -np.inf if chosen[i] else ConjugateFamily.log_marginal(model, belief + s, s_t)
            for i, s in enumerate(items)
        ]
        pick = int(np.argmax(scores))
        if not scores[pick] > best:
            break
        best, chosen[pick], belief = scores[pick], 1.0, belief + items[pick]
    result = select(model, memory, s_t)
    np.testing.assert_array_equal(result.weights, chosen)
    assert result.objective == pytest.approx(best, rel=1e-10)


@pytest.mark.parametrize("noise_var", [1e-4, 1e-2, 1.0])
@pytest.mark.parametrize("rows", [2, 20])
def test_regression_evidence_matches_scipy_on_vec_y(noise_var, rows):
    rng = np.random.default_rng(rows)
    d, p, lam0 = 6, 3, 0.1
    model = BayesianLinearRegression(d, p, prior_precision=lam0, noise_var=noise_var)
    x = rng.normal(size=(rows, d))
    y = x @ rng.normal(size=(p, d)).T + np.sqrt(noise_var) * rng.normal(size=(rows, p))
    covariance = noise_var * np.eye(rows) + x @ x.T / lam0
    expected = sum(
        multivariate_normal(np.zeros(rows), covariance).logpdf(y[:, k]) for k in range(p)
    )
    got = model.log_marginal(model.prior, model.stats(x, y))
    assert got == pytest.approx(expected, rel=1e-10)


def _smooth_inputs(rng, n, d, dead):
    base = rng.normal(size=(n, 6))
    t = np.linspace(0.0, 1.0, d)
    x = sum(np.outer(base[:, k], np.cos((k + 1) * np.pi * t)) for k in range(6))
    x = x + 0.05 * rng.normal(size=(n, d))
    x[:, :dead] = 0.0
    return x


def test_regression_evidence_is_stable_for_small_noise():
    """Ill-conditioned Λ (dead inputs, correlated features, σ² = 1e-4): the stable evidence is
    within 1e-8 of a 50-digit evaluation; A(η + s) − A(η) is off by far more."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    rng = np.random.default_rng(0)
    d, p, s2 = 30, 4, 1e-4
    model = BayesianLinearRegression(d, p, prior_precision=0.1, noise_var=s2)
    xs = [_smooth_inputs(rng, 100, d, 5) for _ in range(4)]
    truth = rng.normal(size=(p, d))
    ys = [x @ truth.T + np.sqrt(s2) * rng.normal(size=(100, p)) for x in xs]
    x_t = _smooth_inputs(rng, 5, d, 5)
    y_t = x_t @ truth.T + np.sqrt(s2) * rng.normal(size=(5, p))
    xa, ya = np.vstack(xs), np.vstack(ys)

    def log_normaliser(precision, b):
        factor = mp.cholesky(precision)
        logdet = 2 * sum(mp.log(factor[i, i]) for i in range(d))
        quad = sum((b[:, k].T * mp.cholesky_solve(precision, b[:, k]))[0] for k in range(p))
        return 0.5 * quad - 0.5 * p * logdet

    xm, ym = mp.matrix(xa.tolist()), mp.matrix(ya.tolist())
    xt, yt = mp.matrix(x_t.tolist()), mp.matrix(y_t.tolist())
    precision, b = 0.1 * mp.eye(d) + xm.T * xm / s2, xm.T * ym / s2
    yy = sum(yt[i, j] ** 2 for i in range(5) for j in range(p))
    exact = float(
        log_normaliser(precision + xt.T * xt / s2, b + xt.T * yt / s2)
        - log_normaliser(precision, b)
        - yy / (2 * s2)
        - 0.5 * 5 * p * mp.log(2 * mp.pi * s2)
    )
    belief, s = model.prior + model.stats(xa, ya), model.stats(x_t, y_t)
    stable = model.log_marginal(belief, s)
    plain = float(ConjugateFamily.log_marginal(model, belief, s))
    assert abs(stable - exact) < 1e-8
    assert abs(stable - exact) < abs(plain - exact)


@pytest.mark.parametrize("rows", [3, 30])
def test_nig_evidence_matches_multivariate_t(rows):
    """NIG evidence of one output column against scipy's multivariate t on vec(Y)."""
    from scipy.stats import multivariate_t

    rng = np.random.default_rng(rows)
    d, lam0, a, b = 5, 0.5, 3.0, 2.0
    model = BayesianLinearRegressionNIG(d, 1, prior_precision=lam0, a=a, b=b)
    x = rng.normal(size=(rows, d))
    y = x @ rng.normal(size=d) + 0.3 * rng.normal(size=rows)
    shape = (b / a) * (np.eye(rows) + x @ x.T / lam0)
    expected = multivariate_t(np.zeros(rows), shape, df=2 * a).logpdf(y)
    got = model.log_marginal(model.prior, model.stats(x, y[:, None]))
    assert got == pytest.approx(expected, rel=1e-10)


def test_regression_low_rank_and_full_rank_routes_agree():
    """The same evidence by ``K = I + WᵀW`` and by two factorisations (forced)."""
    from bam_rl.families import linalg as lr

    rng = np.random.default_rng(5)
    model = BayesianLinearRegression(10, 2, prior_precision=0.3, noise_var=0.05)
    memory, s_t = _regression_memory(rng, model, 6, 8, 3)
    beliefs = model.prior + memory.stats
    datum = model.prepare_datum(s_t)
    low = lr.evidence_terms(beliefs.fields["precision"], beliefs.fields["B"], datum)
    original = lr.low_rank_route
    try:
        lr.low_rank_route = lambda d, r: False
        full = lr.evidence_terms(beliefs.fields["precision"], beliefs.fields["B"], datum)
    finally:
        lr.low_rank_route = original
    for a, b in zip(low, full, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_empty_new_datum_has_zero_evidence_terms():
    model = BayesianLinearRegression(4, 2, noise_var=0.5)
    s = model.zeros()
    assert model.log_marginal(model.prior, s) == pytest.approx(0.0, abs=1e-12)


def test_fast_flag_is_validated():
    model = BetaBinomial()
    memory = Memory()
    memory.add(model.stats(successes=1, trials=2))
    with pytest.raises(ValueError, match="fast"):
        select(model, memory, model.stats(successes=1, trials=2), fast="yes")


@pytest.mark.parametrize(
    ("family", "new_rows", "lam"),
    [("known", 2, 0.0), ("known", 40, 0.0), ("nig", 3, 0.0), ("known", 3, 0.4)],
)
def test_factor_cache_reuses_factors_and_changes_no_readout(family, new_rows, lam):
    from bam_rl.readout import FactorCache

    rng = np.random.default_rng(11)
    d, p = 10, 2
    if family == "known":
        model = BayesianLinearRegression(d, p, prior_precision=0.5, noise_var=0.2)
    else:
        model = BayesianLinearRegressionNIG(d, p, prior_precision=0.5, a=2.0, b=1.0)
    memory, _ = _regression_memory(rng, model, 8, 6, new_rows)
    cache = FactorCache()
    for trial in range(3):
        _, s_t = _regression_memory(np.random.default_rng(trial), model, 1, 6, new_rows)
        cached = select(model, memory, s_t, lam=lam, cache=cache)
        plain = select(model, memory, s_t, lam=lam, fast=False)
        _same_readout(cached, plain)
    assert cache.hits > 0 and len(cache) > 0
    # a memory with one record changed must not hit its stale factors
    other, _ = _regression_memory(np.random.default_rng(99), model, 8, 6, new_rows)
    hits = cache.hits
    _same_readout(
        select(model, other, s_t, lam=lam, cache=cache),
        select(model, other, s_t, lam=lam, fast=False),
    )
    assert cache.hits <= hits + 1  # only the base prior's factor is shared


def test_factor_cache_budget_evicts():
    from bam_rl.readout import FactorCache

    cache = FactorCache(max_bytes=3 * 8 * 16)
    for i in range(5):
        cache.put((i,), np.zeros((4, 4)))
    assert len(cache) == 3 and cache.get((0,)) is None and cache.get((4,)) is not None
    with pytest.raises(ValueError, match="max_bytes"):
        FactorCache(max_bytes=-1)


def test_penalised_gaussian_greedy_crosses_flat_steps_between_near_equal_values():
    """Two records one rounding step apart give the same J; the λ > 0 climb used to stop on
    that flat step and pick a worse record than the generic greedy (a reviewer's reproducer)."""
    model = NormalKnownVariance(0.0, 1.0, 1.0)
    memory = Memory()
    for y in [-0.1, 1.0, 1.4, -0.4, 1.3, 1.2, np.nextafter(1.4, 9)]:
        memory.add(model.stats([y]))
    s_t = model.stats([1.0])
    fast = select(model, memory, s_t, lam=0.4)
    generic = select(model, memory, s_t, lam=0.4, fast=False)
    assert fast.path == "gaussian"
    np.testing.assert_array_equal(fast.weights, generic.weights)
    assert fast.objective == pytest.approx(generic.objective, rel=1e-12)
