"""UCBAM against a literal transcription of Algorithm 3 (App. D.4), and its fast readout."""

from __future__ import annotations

import bisect
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import gaussian_model

import bam_rl  # noqa: F401
from bam_rl.agents import UCBAM
from bam_rl.beliefs import PerformanceWarning
from bam_rl.families import BetaBinomial, NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout import gaussian_greedy_readout, select


def algorithm_3(
    env, p_model, n_arms, steps, seed, env_seed, lam=0.0, bernoulli=False, capacity=None
):
    """Algorithm 3, line by line. Returns the arms pulled and the ``known`` flag after each."""
    rng = np.random.default_rng(seed)
    p = p_model.prior  # KwData: prior distribution p
    K = n_arms
    b = [p for _ in range(K)]  # b = copy(p), K times
    D = [Memory(capacity) for _ in range(K)]  # empty D, K times (optionally bounded)
    known = False
    pulls = [0] * K  # UCB statistics over all pulls so far
    total = [0.0] * K
    t = 0
    arms, knowns = [], []
    env.reset(seed=env_seed)
    for _ in range(steps):  # for each iteration
        if known:  # arm <- thompson(b_1..K)
            theta = [float(p_model.sample(b[i], rng)) for i in range(K)]
            arm = max(range(K), key=lambda i: (theta[i], -i))
        else:  # arm <- UCB choice
            unpulled = [i for i in range(K) if pulls[i] == 0]
            if unpulled:
                arm = unpulled[0]
            else:
                log_t = math.log(t)
                log_f = math.log(1.0 + t * log_t * log_t)  # f(t) = 1 + t log^2 t
                index = [total[i] / pulls[i] + math.sqrt(2.0 * log_f / pulls[i]) for i in range(K)]
                arm = max(range(K), key=lambda i: (index[i], -i))
        _, v, _, _, _ = env.step(arm)  # v <- pull(arm)
        s = p_model.stats(successes=v, trials=1) if bernoulli else p_model.stats([v])
        # if log p(v) >= log b_arm(v): known <- false else known <- true
        known = not (p_model.log_marginal(p, s) >= p_model.log_marginal(b[arm], s))
        # b_arm = BAM(p, D^arm, v): greedy readout over D^arm against v, then eta(W) + s
        if len(D[arm]):
            W = select(p_model, D[arm], s, lam=lam, method="greedy").weights
            b[arm] = D[arm].weighted_sum(W, base=p) + s
        else:
            b[arm] = p + s
        D[arm].add(s)  # D = [D, v]
        pulls[arm] += 1
        total[arm] += v
        t += 1
        arms.append(arm)
        knowns.append(known)
    return arms, knowns


def run_agent(env, agent, steps, env_seed):
    arms, knowns = [], []
    observation, info = env.reset(seed=env_seed)
    agent.reset(observation, info)
    for _ in range(steps):
        arm = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(arm)
        agent.observe(arm, reward, observation, terminated, truncated, info)
        arms.append(arm)
        knowns.append(agent.known)
    return arms, knowns


@pytest.mark.parametrize(("fast", "lam"), [(True, 0.0), (False, 0.0), (True, 0.1)])
def test_ucbam_matches_literal_algorithm_3(fast, lam):
    steps = 500
    model = gaussian_model()
    env = gym.make("bam_rl/SwitchingBandit-v0", config_seed=2)
    expected_arms, expected_known = algorithm_3(env, model, 10, steps, seed=5, env_seed=9, lam=lam)
    agent = UCBAM(10, model, lam=lam, seed=5, fast_readout=fast)
    assert agent.fast_readout is fast
    arms, knowns = run_agent(env, agent, steps, env_seed=9)
    assert arms == expected_arms
    assert knowns == expected_known
    assert 50 < sum(knowns) < steps - 50  # both branches (Thompson and UCB) are exercised
    for arm in range(10):  # every arm's memory holds exactly the rewards of its pulls
        assert len(agent.memories[arm]) == expected_arms.count(arm)


def test_ucbam_bernoulli_matches_literal_algorithm_3():
    steps = 300
    model = BetaBinomial(1.0, 1.0)
    env = gym.make(
        "bam_rl/PiecewiseBandit-v0",
        means=[[0.2, 0.5, 0.8], [0.8, 0.2, 0.5]],
        breakpoints=[150],
        reward="bernoulli",
    )
    expected = algorithm_3(env, model, 3, steps, seed=1, env_seed=4, bernoulli=True)
    assert run_agent(env, UCBAM(3, model, seed=1), steps, env_seed=4) == expected


def _random_memory(rng, model, size, rounded):
    values = rng.normal(rng.uniform(-1, 1), rng.uniform(0.1, 1.0), size)
    if rounded:  # many exact duplicates: the lowest-index tie rule matters
        values = np.round(values, 1)
    memory, sorted_values, order = Memory(), [], []
    for index, y in enumerate(values.tolist()):
        memory.add(model.stats([y]))
        position = bisect.bisect_right(sorted_values, y)
        sorted_values.insert(position, y)
        order.insert(position, index)
    return memory, sorted_values, order, values


@pytest.mark.parametrize("lam", [0.0, 0.05, 0.5, 3.0])
def test_closed_form_greedy_equals_select(lam):
    rng = np.random.default_rng(int(lam * 100))
    for trial in range(150):
        model = NormalKnownVariance(
            rng.uniform(-1, 1), rng.uniform(0.05, 2.0), rng.uniform(0.01, 1.0)
        )
        size = int(rng.integers(0, 90))
        memory, values, order, raw = _random_memory(rng, model, size, rounded=trial % 3 == 0)
        v = float(raw[0]) if trial % 5 == 0 and size else float(rng.normal(0.0, 1.0))
        fast = gaussian_greedy_readout(values, order, v, model, lam)
        if size == 0:
            assert fast.shape == (0,)
            continue
        reference = select(model, memory, model.stats([v]), lam=lam, method="greedy").weights
        np.testing.assert_array_equal(fast, reference)


def test_ucbam_validates_arguments():
    with pytest.raises(ValueError, match="n_arms"):
        UCBAM(0, gaussian_model())
    with pytest.raises(ValueError, match="lam"):
        UCBAM(3, gaussian_model(), lam=-1.0)
    with pytest.raises(ValueError, match="model"):
        UCBAM(3, "normal")


def test_ucbam_with_a_capacity_matches_algorithm_3_with_bounded_memories():
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=3, max_steps=10_000)
    model = gaussian_model()
    expected = algorithm_3(env, model, 3, 150, seed=4, env_seed=9, capacity=5)
    agent = UCBAM(3, model, seed=4, capacity=5)
    assert run_agent(env, agent, 150, env_seed=9) == expected
    assert max(len(memory) for memory in agent.memories) == 5
    assert "capacity=5" in repr(agent)


def test_ucbam_warns_once_when_an_unbounded_memory_grows_long(monkeypatch):
    import bam_rl.beliefs.rules

    monkeypatch.setattr(bam_rl.beliefs.rules, "UNBOUNDED_MEMORY_WARNING", 4)
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=2, max_steps=10_000)
    with pytest.warns(PerformanceWarning, match="capacity=") as caught:
        run_agent(env, UCBAM(2, gaussian_model(), seed=0), 30, env_seed=0)
    assert len([w for w in caught if issubclass(w.category, PerformanceWarning)]) == 2  # per arm
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        run_agent(env, UCBAM(2, gaussian_model(), seed=0, capacity=3), 30, env_seed=0)


@pytest.mark.parametrize("capacity", [1, 0, 2.5, "8"])
def test_ucbam_capacity_is_validated(capacity):
    with pytest.raises(ValueError, match="capacity"):
        UCBAM(3, gaussian_model(), capacity=capacity)
