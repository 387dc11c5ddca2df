"""Thompson sampling with BAM arms keeps its draw parameters between steps: a BAM rule's
belief assignments are numbered (``BELIEF_WRITES``), the agent updates the pulled arm's
parameters itself, and any other assignment (by hand, between act and observe, by a reset or
a restore) sends the next draw back over every arm. The parameters are always every rule's
``model.mean`` and ``sqrt(model.variance)`` bit for bit."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import ThompsonSampling
from bam_rl.agents.arms import reward_statistics
from bam_rl.beliefs import BAM, RecursiveBayes
from bam_rl.beliefs.rules import BELIEF_WRITES
from bam_rl.serialization import load_object, save_object


def _expected(agent):
    model = agent.model
    loc = [float(model.mean(rule.prior_for_next())) for rule in agent.rules]
    scale = [float(np.sqrt(model.variance(rule.prior_for_next()))) for rule in agent.rules]
    return np.array(loc).tobytes(), np.array(scale).tobytes()


def _kept(agent):
    params = agent._gaussian_draw_params()
    assert params is not None
    return params[0].tobytes(), params[1].tobytes()


def test_bam_beliefs_are_numbered_and_plain_rules_are_not():
    model = ThompsonSampling.gaussian(1, "bam").model
    rule = BAM(model)
    before = BELIEF_WRITES.writes
    rule.update(model.stats(0.3))
    assert BELIEF_WRITES.writes == before + 1
    rule.belief = model.prior  # by hand
    assert BELIEF_WRITES.writes == before + 2 and rule.belief is model.prior
    assert vars(rule)["belief"] is model.prior  # an ordinary attribute, saved as before
    clone = pickle.loads(pickle.dumps(rule))
    assert clone.belief.fields["precision"] == rule.belief.fields["precision"]
    assert copy.deepcopy(rule).belief.log_h == rule.belief.log_h
    assert "belief" not in vars(RecursiveBayes)  # the memoryless rules: a plain attribute


def test_a_saved_bam_rule_comes_back_with_its_belief(tmp_path):
    model = ThompsonSampling.gaussian(1, "bam").model
    rule = BAM(model)
    for y in (0.2, 0.9, 0.4):
        rule.update(model.stats(y))
    before = BELIEF_WRITES.writes
    restored = load_object(save_object(rule, tmp_path / "rule"))
    assert BELIEF_WRITES.writes > before  # restored through the numbered attribute
    for name in rule.belief.fields:
        assert restored.belief.fields[name].tobytes() == rule.belief.fields[name].tobytes()


def test_the_kept_draw_parameters_follow_every_assignment():
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=4, max_steps=400)
    agent = ThompsonSampling.gaussian(4, "bam", seed=3)
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    model = agent.model
    for step in range(120):
        action = agent.act(observation)
        assert _kept(agent) == _expected(agent)
        if step == 40:  # by hand, between act and observe, on another arm
            other = (action + 1) % 4
            agent.rules[other].belief = agent.rules[other].belief + model.stats(5.0)
        if step == 60:  # a rule updated by hand (not by the agent)
            agent.rules[action].update(reward_statistics(model, -2.0))
        if step == 80:
            agent.rules[(action + 2) % 4].reset()
        following, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, float(reward), following, terminated, truncated, info)
        assert _kept(agent) == _expected(agent)
        if step == 100:  # an assignment after the agent's update, before the next draw
            agent.rules[action].belief = model.prior
            assert _kept(agent) == _expected(agent)
        observation = following
    agent.rules[2] = BAM(model)  # a rule replaced by hand
    assert _kept(agent) == _expected(agent)


class _SetsItsOwnAttributes(BAM):
    """A BAM whose ``__setattr__`` writes ``__dict__`` itself: its belief assignments bypass
    the numbering, so the draw must not skip its pass over the arms."""

    def __setattr__(self, name, value):
        self.__dict__[name] = value


def test_a_rule_that_sets_its_own_attributes_is_read_every_step():
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=3, max_steps=100)
    agent = ThompsonSampling.gaussian(3, "bam", seed=1)
    agent.rules = [_SetsItsOwnAttributes(agent.model) for _ in range(3)]
    observation, info = env.reset(seed=0)
    agent.reset(observation, info)
    for _ in range(30):
        action = agent.act(observation)
        observation, reward, terminated, truncated, info = env.step(action)
        agent.observe(action, float(reward), observation, terminated, truncated, info)
        assert _kept(agent) == _expected(agent)
