"""Thompson sampling: the fast recursive path equals per-arm rules; logarithmic regret."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bam_rl  # noqa: F401
from bam_rl.agents import ThompsonSampling
from bam_rl.agents.arms import reward_statistics
from bam_rl.agents.base import beta_draws
from bam_rl.beliefs import BAM, BOCD, RULES, ExponentialForgetting, RecursiveBayes, make_rule
from bam_rl.families import BetaBinomial, GammaPoisson, NormalKnownVariance


def _per_arm_reference(env, rule, n_arms, steps, seed, env_seed):
    """Thompson sampling written out with one deep-copied rule per arm."""
    rng = np.random.default_rng(seed)
    rules = [copy.deepcopy(rule) for _ in range(n_arms)]
    env.reset(seed=env_seed)
    arms = []
    for _ in range(steps):
        draws = [float(r.sample(rng)) for r in rules]
        arm = int(np.argmax(draws))
        _, reward, _, _, _ = env.step(arm)
        rules[arm].update(reward_statistics(rule.model, reward))
        arms.append(arm)
    return arms, rules


def _run(env, agent, steps, env_seed):
    observation, info = env.reset(seed=env_seed)
    agent.reset(observation, info)
    arms = []
    for _ in range(steps):
        arm = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(arm)
        agent.observe(arm, reward, observation, terminated, truncated, info)
        arms.append(arm)
    return arms


@pytest.mark.parametrize("kind", ["gaussian", "bernoulli"])
def test_fast_recursive_path_is_identical_to_per_arm_rules(kind):
    if kind == "gaussian":
        rule = RecursiveBayes(NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625))
        env = gym.make("bam_rl/SwitchingBandit-v0", max_steps=3000)
    else:
        rule = RecursiveBayes(BetaBinomial(1.0, 2.0))
        env = gym.make(
            "bam_rl/PiecewiseBandit-v0",
            means=[[0.3, 0.5, 0.7, 0.6]],
            breakpoints=[],
            max_steps=3000,
        )
    n_arms = int(env.action_space.n)
    agent = ThompsonSampling(n_arms, rule, seed=4)
    assert agent.fast and agent.rules == []
    arms = _run(env, agent, 3000, env_seed=2)
    expected, rules = _per_arm_reference(env, rule, n_arms, 3000, seed=4, env_seed=2)
    assert arms == expected
    for arm in range(n_arms):  # beliefs are bit-identical, not merely close
        for name, value in rules[arm].belief.fields.items():
            assert agent.arm_belief(arm).fields[name] == value
    np.testing.assert_array_equal(agent.means, [float(r.mean) for r in rules])


@pytest.mark.parametrize("rule_name", ["forgetting", "bocd", "bam"])
def test_generic_rules_match_per_arm_reference(rule_name):
    model = NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625)
    rule = make_rule(model, rule_name)
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=4, max_steps=300)
    agent = ThompsonSampling(4, rule, seed=8)
    assert not agent.fast and len(agent.rules) == 4
    assert all(r is not rule for r in agent.rules)
    assert _run(env, agent, 300, env_seed=1) == _per_arm_reference(env, rule, 4, 300, 8, 1)[0]


def test_gaussian_draw_parameters_follow_beliefs_changed_from_outside():
    """The kept draw parameters are every rule's ``model.mean`` and ``sqrt(model.variance)``
    bit for bit, also after a rule is updated, reset or replaced by hand (not by the agent),
    and a rule that draws its own way turns the vectorised draw off."""
    model = NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625)
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=4, max_steps=200)
    agent = ThompsonSampling(4, make_rule(model, "bam"), seed=3)
    _run(env, agent, 60, env_seed=0)

    def expected():
        loc = [float(model.mean(rule.prior_for_next())) for rule in agent.rules]
        scale = [float(np.sqrt(model.variance(rule.prior_for_next()))) for rule in agent.rules]
        return np.array(loc), np.array(scale)

    for change in range(4):
        if change == 0:
            agent.rules[1].update(reward_statistics(model, 0.9))
        elif change == 1:
            agent.rules[2].reset()
        elif change == 2:
            agent.rules[0] = make_rule(model, "forgetting")  # overrides prior_for_next
            agent.rules[0].update(reward_statistics(model, 0.1))
        else:
            agent.rules[3] = make_rule(model, "bocd")  # draws its own way
            assert agent._gaussian_draw_params() is None
            break
        got = agent._gaussian_draw_params()
        assert got is not None
        for value, reference in zip(got, expected(), strict=True):
            assert value.tobytes() == reference.tobytes()


def test_factories_use_the_paper_hyperparameters():
    forgetting = ThompsonSampling.gaussian(10, "forgetting", seed=0)
    assert isinstance(forgetting.rules[0], ExponentialForgetting)
    assert forgetting.rules[0].alpha == 0.8
    assert forgetting.model.noise_var == 0.25**2
    bocd = ThompsonSampling.gaussian(10, "bocd", seed=0)
    # one default hazard everywhere (issue 25); the bandit experiment's 0.016 is the registry's
    model = bocd.model
    defaults = {
        BOCD(model).detector.hazard,
        make_rule(model, "bocd").detector.hazard,
        make_rule(model, "bam_bocd").detector.hazard,
        bocd.rules[0].detector.hazard,
    }
    assert isinstance(bocd.rules[0], BOCD) and defaults == {1 / 100}
    from bam_rl.harness import make_agent

    paper = make_agent("thompson-bocd", gym.make("bam_rl/SwitchingBandit-v0"), 0)
    assert paper.rules[0].detector.hazard == 0.016
    bam = ThompsonSampling.bernoulli(3, "bam", seed=0)
    assert isinstance(bam.rules[0], BAM) and isinstance(bam.model, BetaBinomial)
    assert ThompsonSampling.gaussian(2, "recursive").fast
    for name in RULES:
        ThompsonSampling.bernoulli(2, name)
    with pytest.raises(ValueError, match="rule"):
        ThompsonSampling.gaussian(3, "nope")
    with pytest.raises(ValueError, match="rule"):
        ThompsonSampling(3, "recursive")
    with pytest.raises(ValueError, match="n_arms"):
        ThompsonSampling.gaussian(0)


def test_count_rewards_with_gamma_poisson():
    agent = ThompsonSampling(2, RecursiveBayes(GammaPoisson()), seed=0)
    agent.observe(1, 3.0, 0, False, False, {})
    assert agent.rules[1].belief.fields["alpha"] > agent.rules[0].belief.fields["alpha"]
    with pytest.raises(ValueError, match="counts"):
        agent.observe(0, 0.5, 0, False, False, {})


def test_logarithmic_regret_on_stationary_bernoulli_bandit():
    """Recursive Thompson sampling has O(log T) regret on a stationary Bernoulli bandit."""
    means = [0.3, 0.5, 0.7]
    gap = 0.2
    horizon = 10_000
    at_1e3, at_1e4 = [], []
    for seed in range(4):
        env = gym.make(
            "bam_rl/PiecewiseBandit-v0",
            means=[means],
            breakpoints=[],
            reward="bernoulli",
            max_steps=horizon,
        )
        agent = ThompsonSampling.bernoulli(3, "recursive", seed=seed)
        observation, info = env.reset(seed=100 + seed)
        agent.reset(observation, info)
        regret = 0.0
        for t in range(1, horizon + 1):
            arm = agent.act(observation)
            observation, reward, terminated, truncated, info = env.step(arm)
            agent.observe(arm, reward, observation, terminated, truncated, info)
            regret += info["regret"]
            if t == 1_000:
                at_1e3.append(regret)
        at_1e4.append(regret)
    mean_1e3, mean_1e4 = np.mean(at_1e3), np.mean(at_1e4)
    assert mean_1e4 < 0.1 * horizon * gap  # far below the linear rate T * gap
    assert mean_1e4 / mean_1e3 < 4.0  # linear growth would give 10
    assert max(at_1e4) < 0.2 * horizon * gap


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.05, 500.0), min_size=1, max_size=12).flatmap(
        lambda a: st.tuples(
            st.just(a), st.lists(st.floats(0.05, 500.0), min_size=len(a), max_size=len(a))
        )
    ),
    st.integers(0, 2**32 - 1),
)
def test_beta_draws_are_numpys_array_draws(shapes, seed) -> None:
    """The per-arm scalar draws (up to 8 arms; the array call beyond) consume the generator
    exactly as one array call does."""
    alpha, beta = (np.array(x) for x in shapes)
    ours, reference = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(3):  # and leave it in the same state
        np.testing.assert_array_equal(beta_draws(ours, alpha, beta), reference.beta(alpha, beta))
