"""The fused one-point step (``one_point_posterior``) gives bit for bit what the layered
``one_point_select`` then ``readout_prior`` give, and declines exactly where they decline; the
shortcut of its precision sum is exact; the identity caches drop their entries."""

from __future__ import annotations

import gc
import importlib

import numpy as np
import pytest

from bam_rl.agents.bandits import ThompsonSampling, gaussian_reward_statistics
from bam_rl.beliefs import BAM
from bam_rl.families import NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout import select
from bam_rl.readout.greedy import IdentityCache

select_module = importlib.import_module("bam_rl.readout.select")
MODEL = NormalKnownVariance(0.5, 0.25, 0.0625)


def _bits(params):
    return [params.fields[k].tobytes() for k in sorted(params.fields)] + [params.log_h.tobytes()]


@pytest.mark.parametrize("model", [MODEL, NormalKnownVariance(0.0, 1.0, 0.3)])
@pytest.mark.parametrize("capacity", [None, 24])
def test_the_fused_step_is_the_layered_step(model, capacity):
    rng = np.random.default_rng(5)
    memory = Memory(capacity=capacity)
    options: dict = {}
    hits = 0
    for step, y in enumerate(np.where(rng.random(300) < 0.5, 0.2, 0.8) + rng.normal(0, 0.25, 300)):
        s_t = gaussian_reward_statistics(model, float(y))
        if step % 11 == 5:
            s_t = model.stats([float(y), 0.1])  # two observations: declined by both
        layered = select_module.one_point_select(model, memory, s_t, 0.0, "greedy", options)
        fused = select_module.one_point_posterior(model, memory, s_t, 0.0, "greedy", options)
        assert (layered is None) == (fused is None)
        if layered is None:
            if len(memory):
                select(model, memory, s_t)  # builds the constants' table
        else:
            readout, stats = layered
            prior = select_module.readout_prior(memory, readout.weights, model.prior, stats, s_t)
            assert fused[0].weights.tobytes() == readout.weights.tobytes()
            assert fused[0].n_evaluations == readout.n_evaluations
            assert fused[0].objective == readout.objective
            assert _bits(fused[1]) == _bits(prior)
            hits += 1
        memory.add(gaussian_reward_statistics(model, float(y)))
    assert hits > 20  # the fused step ran (merged records of a bounded memory decline it)


@pytest.mark.parametrize("lam, method", [(0.1, "greedy"), (0.0, "parallel")])
def test_the_fused_step_declines_other_readouts(lam, method):
    memory = Memory()
    for y in (0.1, 0.5, 0.9):
        memory.add(MODEL.stats([y]))
    s_t = MODEL.stats([0.4])
    assert select_module.one_point_posterior(MODEL, memory, s_t, lam, method, {}) is None
    assert (
        select_module.one_point_posterior(MODEL, memory, s_t, 0.0, "greedy", {"fast": False})
        is None
    )


def test_the_precision_sum_shortcut_is_the_dot_product():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        m = int(rng.integers(1, 2000))
        c = float(rng.choice([16.0, 1.0, 3.0, 1 / 0.3, 1e6, 2.0**40, 1 / 0.7, 2.0**52 - 1]))
        column = np.full(m, c)
        weights = (rng.random(m) < rng.random()).astype(np.float64)
        expected = float(weights.dot(column))
        numerator = c.as_integer_ratio()[0]
        got = select_module._dot_of_equal(weights, column, int(weights.sum()), c, numerator)
        assert np.float64(got).tobytes() == np.float64(expected).tobytes()


def test_a_bam_update_is_unchanged_by_the_fused_step(monkeypatch):
    """The rule's beliefs and readouts with the fused step and with the layered one."""
    rng = np.random.default_rng(2)
    rewards = rng.normal(0.5, 0.3, 200)
    fused, layered = BAM(MODEL), BAM(MODEL)
    for y in rewards:
        fused.update(gaussian_reward_statistics(MODEL, float(y)))
    monkeypatch.setattr(
        importlib.import_module("bam_rl.beliefs.bam"), "one_point_posterior", lambda *args: None
    )
    for y in rewards:
        layered.update(gaussian_reward_statistics(MODEL, float(y)))
    assert _bits(fused.belief) == _bits(layered.belief)
    assert fused.weights.tobytes() == layered.weights.tobytes()


def test_identity_cache_drops_dead_owners():
    cache = IdentityCache()
    owner, other = Memory(), Memory()
    cache.set(owner, "buffers")
    assert cache.get(owner) == "buffers" and cache.get(other) is None
    del owner
    gc.collect()
    assert cache._entries == {}


def test_thompson_notices_a_replaced_rule():
    """A rule swapped into the agent by hand is drawn its own way from then on."""
    agent = ThompsonSampling.gaussian(3, "bam", seed=0)
    agent.sample_arms()

    class Fixed(BAM):
        def sample(self, rng):
            return np.float64(123.0)

    agent.rules[1] = Fixed(agent.model)
    assert agent.sample_arms()[1] == 123.0
