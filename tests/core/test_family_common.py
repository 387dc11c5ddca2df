"""Properties every conjugate family shares: natural-parameter arithmetic, batching, the
gradient of the log-partition, KL sanity, sampling reproducibility, family mixing and the
refusal of bad hyperparameters (one table for every family).

The per-family oracle tests (log marginal against scipy, KL against integrals, moments) live
in ``test_family_<name>.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    BetaBinomial,
    ConjugateFamily,
    DirichletCategorical,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
    stack,
)

FAMILIES = ["beta_binomial", "normal", "normal_gamma", "gamma_poisson", "dirichlet"]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _loguniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def random_model(name: str, rng: np.random.Generator) -> ConjugateFamily:
    """A family with random hyperparameters."""
    if name == "beta_binomial":
        return BetaBinomial(_loguniform(rng, 0.2, 20), _loguniform(rng, 0.2, 20))
    if name == "normal":
        return NormalKnownVariance(
            rng.normal(0, 3), _loguniform(rng, 0.1, 10), _loguniform(rng, 0.1, 10)
        )
    if name == "normal_gamma":
        return NormalGamma(
            rng.normal(0, 3),
            _loguniform(rng, 0.1, 10),
            _loguniform(rng, 0.3, 10),
            _loguniform(rng, 0.1, 10),
        )
    if name == "gamma_poisson":
        return GammaPoisson(_loguniform(rng, 0.2, 20), _loguniform(rng, 0.1, 10))
    if name == "dirichlet":
        k = int(rng.integers(2, 6))
        return DirichletCategorical(np.exp(rng.uniform(np.log(0.2), np.log(20), size=k)))
    raise AssertionError(name)


def random_stats(
    model: ConjugateFamily, rng: np.random.Generator, n: int | None = None, axis=None
) -> NaturalParams:
    """Statistics of ``n`` random observations (summed, unless ``axis=()``)."""
    n = int(rng.integers(0, 8)) if n is None else n
    if isinstance(model, BetaBinomial):
        trials = rng.integers(0, 15, size=n)
        return model.stats(rng.binomial(trials, rng.uniform()), trials, axis=axis)
    if isinstance(model, NormalKnownVariance | NormalGamma):
        return model.stats(
            rng.normal(rng.normal(0, 3), _loguniform(rng, 0.1, 3), size=n), axis=axis
        )
    if isinstance(model, GammaPoisson):
        return model.stats(rng.poisson(_loguniform(rng, 0.1, 20), size=n), axis=axis)
    if isinstance(model, DirichletCategorical):
        p = rng.dirichlet(np.ones(model.n_categories))
        return model.stats(observations=rng.choice(model.n_categories, size=n, p=p), axis=axis)
    raise AssertionError(model)


def random_case(name: str, seed: int):
    rng = np.random.default_rng(seed)
    model = random_model(name, rng)
    belief = model.prior + random_stats(model, rng)
    return model, belief, rng


def _perturbed(belief: NaturalParams, name: str, index: tuple, delta: float) -> NaturalParams:
    fields = {k: v.copy() for k, v in belief.fields.items()}
    fields[name][index] += delta
    return NaturalParams(belief.family, fields)


# ----------------------------------------------------------------------------- gradient
@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=40, deadline=None)
@given(seed=SEEDS)
def test_grad_log_partition_matches_central_difference(name, seed):
    model, belief, _ = random_case(name, seed)
    grad = model.grad_log_partition(belief)
    for field, event in model.field_shapes.items():
        for index in np.ndindex(*event):
            x = belief.fields[field][index]
            # small steps: beta = p3 − p1²/(2 p2) can be a tiny difference, so larger steps
            # sample a sharply curved (or undefined) log-partition
            step = 1e-6 * max(1.0, abs(x))

            def difference(h, field=field, index=index):
                up = model.log_partition(_perturbed(belief, field, index, h))
                down = model.log_partition(_perturbed(belief, field, index, -h))
                return up - down

            # fourth-order stencil: O(h^4) truncation error where curvature is high
            numeric = (8 * difference(step) - difference(2 * step)) / (12 * step)
            np.testing.assert_allclose(
                grad[field][index], numeric, rtol=1e-5, atol=1e-6, err_msg=f"{field}{index}"
            )


@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=30, deadline=None)
@given(seed=SEEDS, w=st.floats(0.05, 0.95))
def test_weight_gradient_identity(name, seed, w):
    """d/dw log p(D_t | η0 + w s_j) = ⟨s_j, ∇A(η(w) + s_t) − ∇A(η(w))⟩ (mean parameters)."""
    model, _, rng = random_case(name, seed)
    s_j = random_stats(model, rng, n=int(rng.integers(1, 6)))
    s_t = random_stats(model, rng, n=int(rng.integers(1, 6)))

    def objective(weight):
        return model.log_marginal(model.prior + weight * s_j, s_t)

    belief = model.prior + w * s_j
    g_post = model.grad_log_partition(belief + s_t)
    g_prior = model.grad_log_partition(belief)
    analytic = s_j.inner({k: g_post[k] - g_prior[k] for k in g_post})
    h = 1e-5
    numeric = (objective(w + h) - objective(w - h)) / (2 * h)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------- KL
@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=50, deadline=None)
@given(seed=SEEDS)
def test_kl_is_nonnegative_and_zero_on_itself(name, seed):
    model, p, rng = random_case(name, seed)
    q = model.prior + random_stats(model, rng)
    assert model.kl(p, p) == 0.0
    assert model.kl(q, q) == 0.0
    # The generic Bregman form A(q) − A(p) − ⟨q − p, ∇A(p)⟩ subtracts O(|A|) terms, so for
    # nearly equal beliefs rounding may leave a value a few ulps of |A| below zero.
    slack = 1e-13 * (1.0 + abs(model.log_partition(p)) + abs(model.log_partition(q)))
    assert model.kl(p, q) >= -slack
    assert model.kl(q, p) >= -slack
    assert model.kl(p, model.prior) >= -slack


# ------------------------------------------------------------------------------ batching
@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, m=st.integers(1, 5))
def test_batched_beliefs_match_a_loop(name, seed, m):
    model, _, rng = random_case(name, seed)
    beliefs = [model.prior + random_stats(model, rng) for _ in range(m)]
    batch = stack(beliefs)
    s_t = random_stats(model, rng)
    assert batch.batch_shape == (m,)

    lm = model.log_marginal(batch, s_t)
    kl = model.kl(batch, model.prior)
    kl_rev = model.kl(model.prior, batch)
    a = model.log_partition(batch)
    grad = model.grad_log_partition(batch)
    assert lm.shape == kl.shape == kl_rev.shape == a.shape == (m,)
    for i, b in enumerate(beliefs):
        np.testing.assert_allclose(lm[i], model.log_marginal(b, s_t), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(kl[i], model.kl(b, model.prior), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(kl_rev[i], model.kl(model.prior, b), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(a[i], model.log_partition(b), rtol=1e-13)
        np.testing.assert_allclose(batch.mean[i], b.mean, rtol=1e-13)
        np.testing.assert_allclose(batch.variance[i], b.variance, rtol=1e-13)
        g = model.grad_log_partition(b)
        for k in grad:
            np.testing.assert_allclose(grad[k][i], g[k], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(
            batch[i].fields[next(iter(b.fields))], b.fields[next(iter(b.fields))]
        )


@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, n=st.integers(1, 6))
def test_stats_axis_keeps_or_sums_data(name, seed, n):
    """``axis=()`` gives one datum per observation; summing them gives ``axis=None``."""
    model, belief, rng = random_case(name, seed)
    state = rng.bit_generator.state
    each = random_stats(model, rng, n=n, axis=())
    rng.bit_generator.state = state
    whole = random_stats(model, rng, n=n)
    assert each.batch_shape == (n,)
    assert whole.batch_shape == ()
    assert each.sum().allclose(whole)
    np.testing.assert_allclose(each.log_h.sum(), whole.log_h, rtol=1e-12, atol=1e-12)
    # a batch of single-observation data scored against one belief = a loop
    lm = model.log_marginal(belief, each)
    assert lm.shape == (n,)
    for i in range(n):
        np.testing.assert_allclose(lm[i], model.log_marginal(belief, each[i]), rtol=1e-13)
    # the chain rule: the batch marginal is the sum of one-step predictives
    total, current = 0.0, belief
    for i in range(n):
        total += model.log_marginal(current, each[i])
        current = current + each[i]
    np.testing.assert_allclose(total, model.log_marginal(belief, whole), rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------------------ tempering
@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=25, deadline=None)
@given(seed=SEEDS)
def test_tempering_identities(name, seed):
    model, _, rng = random_case(name, seed)
    s = random_stats(model, rng, n=int(rng.integers(1, 8)))
    half = 0.5 * s
    assert (2 * half).allclose(s)
    assert (half + half).allclose(s)
    assert (model.prior + half + half).allclose(model.prior + s)
    assert (s * 0.0).allclose(model.zeros())
    assert (model.prior + 0.0 * s).allclose(model.prior)
    np.testing.assert_allclose((0.5 * s).log_h, 0.5 * s.log_h)
    # a tempered datum is still a proper belief update, between the prior and the posterior
    mid = model.prior + half
    assert np.all(np.isfinite(model.log_partition(mid)))
    np.testing.assert_allclose(model.kl(mid, mid), 0.0)
    # weighted_sum of a memory equals the explicit sum
    items = stack([random_stats(model, rng) for _ in range(3)])
    w = np.array([[0.0, 0.5, 1.0], [1.0, 1.0, 0.25]])
    combined = items.weighted_sum(w)
    assert combined.batch_shape == (2,)
    for row in range(2):
        manual = w[row, 0] * items[0] + w[row, 1] * items[1] + w[row, 2] * items[2]
        assert combined[row].allclose(manual)


# ----------------------------------------------------------------------------- sampling
@pytest.mark.parametrize("name", FAMILIES)
def test_sample_is_reproducible_and_shaped(name):
    model, belief, _ = random_case(name, 1234)
    a = model.sample(belief, np.random.default_rng(7), size=5)
    b = model.sample(belief, np.random.default_rng(7), size=5)
    c = model.sample(belief, np.random.default_rng(8), size=5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    event = np.shape(belief.mean)
    assert a.shape == (5, *event)
    assert np.shape(model.sample(belief, np.random.default_rng(0))) == event
    assert np.all(np.isfinite(a))
    predictive = (
        model.predictive_sample(belief, np.random.default_rng(3), size=4)
        if not isinstance(model, BetaBinomial)
        else model.predictive_sample(belief, 10, np.random.default_rng(3), size=4)
    )
    assert np.shape(predictive) == (4,)


# -------------------------------------------------------------------------------- mixing
def _all_models():
    return {
        "beta_binomial": BetaBinomial(),
        "normal": NormalKnownVariance(),
        "normal_gamma": NormalGamma(),
        "gamma_poisson": GammaPoisson(),
        "dirichlet": DirichletCategorical(alpha=1.0, n_categories=2),
    }


def _some_stats(model):
    rng = np.random.default_rng(0)
    return random_stats(model, rng, n=3)


@pytest.mark.parametrize("left", FAMILIES)
@pytest.mark.parametrize("right", FAMILIES)
def test_statistics_of_different_families_do_not_mix(left, right):
    models = _all_models()
    a, b = models[left], models[right]
    s = _some_stats(b)
    if left == right:
        a.log_marginal(a.prior, s)
        return
    with pytest.raises(ValueError, match="cannot be combined"):
        a.prior + s
    with pytest.raises(ValueError, match="cannot be combined"):
        a.log_marginal(a.prior, s)
    with pytest.raises(ValueError, match="cannot be combined"):
        a.kl(a.prior, b.prior)
    with pytest.raises(ValueError, match="cannot be combined"):
        stack([a.prior, b.prior])


def test_beta_binomial_plus_gamma_poisson_statistics_raises():
    # same field names and shapes: only the family identity tells them apart
    with pytest.raises(ValueError, match="cannot be combined"):
        BetaBinomial().prior + GammaPoisson().stats([1, 2])


def test_hyperparameters_that_change_statistics_do_not_mix():
    with pytest.raises(ValueError, match="cannot be combined"):
        NormalKnownVariance(noise_var=1.0).prior + NormalKnownVariance(noise_var=2.0).stats([1.0])
    with pytest.raises(ValueError, match="cannot be combined"):
        DirichletCategorical(alpha=1.0, n_categories=3).prior + DirichletCategorical(
            alpha=1.0, n_categories=4
        ).stats(observations=[1])


def test_prior_hyperparameters_alone_do_mix():
    """Priors differ, statistics mean the same: they combine freely."""
    pairs = [
        (BetaBinomial(2, 3), BetaBinomial(1, 1).stats(2, 5)),
        (
            NormalKnownVariance(1.0, 4.0, noise_var=2.0),
            NormalKnownVariance(0.0, 1.0, noise_var=2.0).stats([1.0, 2.0]),
        ),
        (NormalGamma(1.0, 2.0, 3.0, 4.0), NormalGamma().stats([1.0, 2.0])),
        (GammaPoisson(2, 3), GammaPoisson().stats([1, 2])),
        (
            DirichletCategorical([1.0, 2.0, 3.0]),
            DirichletCategorical(alpha=1.0, n_categories=3).stats(observations=[0, 2]),
        ),
    ]
    for model, s in pairs:
        assert np.isfinite(model.log_marginal(model.prior, s))


@pytest.mark.parametrize("name", FAMILIES)
def test_repr_names_the_hyperparameters(name):
    model = _all_models()[name]
    text = repr(model)
    assert text.startswith(type(model).__name__ + "(")
    assert "alpha" in text or "mean" in text


# ---------------------------------------------------------------------- bad hyperparameters
DIMS = {"dim_in": 2, "dim_out": 1}  # a valid size for the linear-regression cases
INDEFINITE = [[1.0, 2.0], [2.0, 1.0]]  # symmetric, not positive-definite
ASYMMETRIC = [[1.0, 0.5], [0.0, 1.0]]


def _each_bad(cls, valid=None, **bad):
    """``(cls, kwargs, name)``: ``valid`` plus one bad value of one hyperparameter, for every
    value listed under each name of ``bad`` (the error must name that hyperparameter)."""
    return [(cls, {**(valid or {}), name: value}, name) for name in bad for value in bad[name]]


BAD_HYPERPARAMETERS = [
    *_each_bad(BetaBinomial, alpha=[0.0, -1.0, np.nan], beta=[0.0, np.inf]),
    *_each_bad(GammaPoisson, alpha=[0.0, -2.0], beta=[0.0, np.nan]),
    *_each_bad(NormalKnownVariance, var=[0.0, -1.0, np.inf], noise_var=[0.0, -2.0], mean=[np.nan]),
    *_each_bad(NormalGamma, kappa=[0.0, np.nan], alpha=[-1.0], beta=[0.0], mean=[np.inf]),
    *_each_bad(
        DirichletCategorical,
        alpha=[[1.0], [1.0, 0.0], [1.0, -2.0, 3.0], [1.0, np.nan], [[1.0, 2.0]]],
    ),
    (DirichletCategorical, {"alpha": 1.0}, "n_categories"),
    (DirichletCategorical, {"alpha": 1.0, "n_categories": 1}, "n_categories"),
    (DirichletCategorical, {"alpha": 1.0, "n_categories": 2.5}, "n_categories"),
    (DirichletCategorical, {"alpha": [1.0, 2.0], "n_categories": 3}, "n_categories"),
    (DirichletCategorical, {"alpha": -1.0, "n_categories": 3}, "alpha"),
    (BayesianLinearRegression, {"dim_in": 0, "dim_out": 1}, "dim_in"),
    (BayesianLinearRegression, {"dim_in": 2.5, "dim_out": 1}, "dim_in"),
    (BayesianLinearRegression, {"dim_in": 2, "dim_out": True}, "dim_out"),
    *_each_bad(
        BayesianLinearRegression,
        DIMS,
        noise_var=[0.0, -1.0, np.nan, [1.0, 2.0]],
        prior_precision=[0.0, [1.0, -1.0], INDEFINITE, ASYMMETRIC, np.eye(3)],
        prior_mean=[np.zeros((2, 2)), np.inf],
    ),
    (BayesianLinearRegressionNIG, {**DIMS, "a": 0.0}, "^a "),
    (BayesianLinearRegressionNIG, {**DIMS, "a": -1.0}, "^a "),
    (BayesianLinearRegressionNIG, {**DIMS, "b": 0.0}, "^b "),
    (BayesianLinearRegressionNIG, {**DIMS, "b": -2.0}, "^b "),
    (BayesianLinearRegressionNIG, {**DIMS, "prior_precision": INDEFINITE}, "^prior_precision "),
    (BayesianLinearRegressionNIG, {**DIMS, "prior_mean": np.zeros((3, 2))}, "^prior_mean "),
]


@pytest.mark.parametrize("cls,kwargs,match", BAD_HYPERPARAMETERS)
def test_bad_hyperparameters_raise(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)
