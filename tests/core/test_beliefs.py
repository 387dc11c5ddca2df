"""Every belief-update rule through the same interface, identities between rules, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from bam_rl import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    BeliefRule,
    ExponentialForgetting,
    Memory,
    PowerPrior,
    RecursiveBayes,
    select,
)
from bam_rl.families import BetaBinomial, NaturalParams, NormalGamma, NormalKnownVariance

RULES = {
    "recursive": lambda m: RecursiveBayes(m),
    "forgetting": lambda m: ExponentialForgetting(m, alpha=0.8),
    "power": lambda m: PowerPrior(m, alpha=0.5),
    "bocd": lambda m: BOCD(m, hazard=1 / 100),
    "bam": lambda m: BAM(m, lam=0.0, method="greedy", capacity=16),
    "bam-parallel": lambda m: BAM(m, lam=0.1, method="parallel", capacity=16),
    "bam-bocd": lambda m: BAMWithChangepoints(m, lam=0.0, hazard=1 / 100, capacity=16),
}
LONG_RUN_STEPS = 100_000


def switching_stream(model, n_steps, seed):
    """Statistics of a stream whose parameter switches among three values every 50–150 steps."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(50, 150, size=n_steps // 50 + 1)
    regime = np.repeat(rng.integers(0, 3, size=lengths.size), lengths)[:n_steps]
    if isinstance(model, BetaBinomial):
        counts = rng.binomial(15, np.array([0.2, 0.5, 0.8])[regime])
        return model.stats(successes=counts, trials=15, axis=())
    values = rng.normal(np.array([-2.0, 0.0, 3.0])[regime], 1.0)
    return model.stats(values[:, None], axis=1)


MODELS = {
    "beta": lambda: BetaBinomial(1.0, 1.0),
    "normal": lambda: NormalKnownVariance(0.0, 10.0, 1.0),
    "normal-gamma": lambda: NormalGamma(0.0, 1.0, 1.0, 1.0),
}


def run(rule: BeliefRule, stats: NaturalParams) -> list[NaturalParams]:
    return [rule.update(stats[i]) for i in range(len(stats))]


@pytest.mark.parametrize("model_name", sorted(MODELS))
@pytest.mark.parametrize("rule_name", sorted(RULES))
def test_rule_interface(rule_name, model_name):
    model = MODELS[model_name]()
    rule = RULES[rule_name](model)
    stats = switching_stream(model, 300, seed=1)
    beliefs = run(rule, stats)
    assert rule.t == 300
    assert rule.belief is beliefs[-1]
    for belief in beliefs:
        assert isinstance(belief, NaturalParams)
        assert belief.batch_shape == ()
        assert np.all(np.isfinite(belief.mean))
    assert np.all(np.isfinite(rule.mean)) and np.all(np.asarray(rule.variance) > 0)
    assert np.all(np.isfinite(rule.sample(np.random.default_rng(0))))
    weights = rule.weights
    if rule_name.startswith("bam"):
        assert weights is not None and np.all((weights >= 0) & (weights <= 1))
    # reset: back to the base prior
    rule.reset()
    assert rule.t == 0
    assert rule.belief.allclose(model.prior)
    np.testing.assert_allclose(rule.mean, model.prior.mean)
    if not rule_name.startswith("bam"):
        # without a memory, a reset rule reproduces a fresh rule exactly
        again = run(rule, stats[:50])
        fresh = run(RULES[rule_name](model), stats[:50])
        for a, b in zip(again, fresh, strict=True):
            assert a.allclose(b, rtol=0, atol=0)
    else:
        assert len(rule.memory) > 0  # BAM keeps its memory across episodes by design


def _long_run(rule_name, n_steps):
    model = NormalKnownVariance(0.0, 10.0, 1.0)
    rule = RULES[rule_name](model)
    stats = switching_stream(model, n_steps, seed=7)
    fields = stats.fields
    for i in range(n_steps):
        s = NaturalParams(model, {k: v[i] for k, v in fields.items()}, stats.log_h[i])
        belief = rule.update(s)
        if i % 1000 == 999:
            assert np.all(np.isfinite(belief.fields["precision"]))
    assert np.all(np.isfinite(rule.mean)) and np.all(np.isfinite(rule.variance))
    assert np.all(np.asarray(rule.variance) > 0)


@pytest.mark.slow
@pytest.mark.parametrize("rule_name", sorted(RULES))
def test_long_run_has_no_nan(rule_name):
    """10^5 steps (bounded memories for the BAM rules) stay finite throughout."""
    _long_run(rule_name, LONG_RUN_STEPS)


@pytest.mark.parametrize("rule_name", sorted(RULES))
def test_a_few_thousand_steps_have_no_nan(rule_name):
    """The default suite's shorter guard of the same property (the 10^5 run is ``slow``)."""
    _long_run(rule_name, 3_000)


# ---------------------------------------------------------------------------- identities
def test_recursive_is_sum_of_statistics():
    model = BetaBinomial(2.0, 3.0)
    stats = switching_stream(model, 40, seed=3)
    rule = RecursiveBayes(model)
    run(rule, stats)
    assert rule.belief.allclose(model.prior + stats.sum())


@pytest.mark.parametrize("alpha", [0.0, 0.5, 0.8, 1.0])
def test_forgetting_and_power_prior_are_bam_readouts(alpha):
    model = NormalKnownVariance(0.0, 4.0, 1.0)
    stats = switching_stream(model, 30, seed=4)
    memory = Memory()
    forgetting, power = ExponentialForgetting(model, alpha), PowerPrior(model, alpha)
    for t in range(1, 31):  # datum t is stats[t-1]; memory holds D_1..D_{t-1}
        s = stats[t - 1]
        expected_prior = (
            memory.weighted_sum(alpha ** (t - 1 - np.arange(1, t)), base=model.prior)
            if t > 1
            else model.prior
        )
        assert forgetting.prior_for_next().allclose(expected_prior)
        assert forgetting.update(s).allclose(expected_prior + s)
        power_prior = (
            memory.weighted_sum(np.full(t - 1, alpha), base=model.prior) if t > 1 else model.prior
        )
        assert power.update(s).allclose(power_prior + s)
        memory.add(s)
    if alpha == 1.0:
        assert forgetting.belief.allclose(model.prior + stats.sum())


def test_bam_equals_select_then_update():
    model = BetaBinomial()
    stats = switching_stream(model, 25, seed=5)
    rule = BAM(model, lam=0.1, method="exhaustive", capacity=16)  # 12 records: no merge
    memory = Memory()
    for i in range(12):
        s = stats[i]
        result = select(model, memory, s, lam=0.1, method="exhaustive")
        prior = (
            memory.weighted_sum(result.weights, base=model.prior) if len(memory) else model.prior
        )
        assert rule.update(s).allclose(prior + s)
        np.testing.assert_array_equal(rule.weights, result.weights)
        memory.add(s)
    assert rule.n_selections == 12


def test_bam_remembers_a_revisited_regime():
    """After A, B, A the BAM prior for the second visit to A uses the first visit's data."""
    model = BetaBinomial()
    rule = BAM(model)
    rng = np.random.default_rng(0)
    for theta in [0.2] * 30 + [0.8] * 30 + [0.2] * 5:
        rule.update(model.stats(successes=rng.binomial(15, theta), trials=15))
    selected = np.flatnonzero(rule.weights)  # indices into D_1..D_64
    first_visit = np.sum(selected < 30)
    other_regime = np.sum((selected >= 30) & (selected < 60))
    assert first_visit >= 5 and first_visit > 3 * other_regime
    assert abs(float(rule.mean) - 0.2) < 0.1


def test_bocd_rule_limits():
    model = BetaBinomial()
    stats = switching_stream(model, 60, seed=6)
    nearly_never = BOCD(model, hazard=1e-12)
    run(nearly_never, stats)
    np.testing.assert_allclose(nearly_never.mean, (model.prior + stats.sum()).mean, rtol=1e-8)


def test_bam_with_changepoints_selects_only_on_changes():
    model = NormalKnownVariance(0.0, 10.0, 1.0)
    rng = np.random.default_rng(8)
    values = np.concatenate([rng.normal(mu, 1.0, size=(40, 5)) for mu in (0.0, 4.0, 0.0, 4.0)])
    stats = model.stats(values, axis=1)
    rule = BAMWithChangepoints(model, hazard=1 / 40)
    run(rule, stats)
    assert 2 <= rule.n_selections <= 12  # a handful of detected changes, not 160 selections
    assert len(rule.memory) == 160
    assert any(abs(c - 80) <= 3 for c in rule.changepoints)
    # on the revisit of mu = 4, the selected readout remembers the first mu = 4 segment
    assert abs(float(rule.mean) - 4.0) < 0.5


def test_bam_with_changepoints_selects_at_the_start_of_a_new_episode():
    model = NormalKnownVariance(0.0, 10.0, 1.0)
    rng = np.random.default_rng(9)
    rule = BAMWithChangepoints(model, hazard=1 / 40)
    run(rule, model.stats(rng.normal(4.0, 1.0, size=(30, 5)), axis=1))
    selections = rule.n_selections
    rule.reset()
    assert rule.changepoints == [] and len(rule.memory) == 30
    rule.update(model.stats(rng.normal(4.0, 1.0, size=5)))
    assert rule.n_selections == selections + 1 and rule.weights.sum() > 5
    assert abs(float(rule.mean) - 4.0) < 0.2  # one datum, yet the remembered episode informs it
    fresh = BAMWithChangepoints(model, hazard=1 / 40)
    fresh.update(model.stats([4.0]))
    assert fresh.n_selections == 0  # nothing to select from


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "factory, match",
    [
        (lambda m: BOCD(m, hazard=0.0), "hazard"),
        (lambda m: BOCD(m, hazard=1.0), "hazard"),
        (lambda m: BOCD(m, hazard=-0.5), "hazard"),
        (lambda m: BAMWithChangepoints(m, hazard=1.5), "hazard"),
        (lambda m: ExponentialForgetting(m, alpha=1.2), "alpha"),
        (lambda m: ExponentialForgetting(m, alpha=-0.1), "alpha"),
        (lambda m: PowerPrior(m, alpha=2.0), "alpha"),
        (lambda m: BAM(m, lam=-1.0), "lam"),
        (lambda m: BAM(m, method="random"), "method"),
        (lambda m: BAM(m, capacity=1), "capacity"),
    ],
)
def test_bad_hyperparameters(factory, match):
    with pytest.raises(ValueError, match=match):
        factory(BetaBinomial())


@pytest.mark.parametrize("rule_name", sorted(RULES))
def test_statistics_of_another_family_or_dimension(rule_name):
    rule = RULES[rule_name](BetaBinomial())
    rule.update(BetaBinomial().stats(successes=3, trials=5))
    before = rule.belief
    with pytest.raises(ValueError, match="s"):
        rule.update(NormalKnownVariance().stats([0.3]))
    with pytest.raises(ValueError, match="s"):
        rule.update(BetaBinomial().stats(successes=[1, 2], trials=5, axis=()))
    assert rule.belief is before and rule.t == 1  # nothing was half-updated
    normal = RULES[rule_name](NormalKnownVariance(noise_var=1.0))
    with pytest.raises(ValueError, match="s"):
        normal.update(NormalKnownVariance(noise_var=2.0).stats([0.3]))
