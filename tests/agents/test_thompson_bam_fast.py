"""thompson-bam's fast step (issue 50, fifth round) against the layered path, bit for bit.

The update: statistics the agent built itself absorbed by ``BeliefRule._absorb_proven``
after ``proves_normal_datum``, and stored by ``Memory._add_checked``. Each is compared with
the path it replaces.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import bam_rl.agents.bandits as bandits
import bam_rl.beliefs.bam as bam_module
from bam_rl.agents.bandits import ThompsonSampling, gaussian_reward_statistics
from bam_rl.families import NormalKnownVariance
from bam_rl.memory import Memory


def _run(agent: ThompsonSampling, steps: int, seed: int = 0) -> tuple[list[int], list[bytes]]:
    """Choices and the pulled arm's belief bytes over ``steps`` steps on drifting arms."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(size=agent.n_arms)
    choices, beliefs = [], []
    for t in range(steps):
        if t % 60 == 0:
            means = rng.uniform(size=agent.n_arms)
        arm = agent.act(0.0)
        agent.observe(arm, float(means[arm] + 0.25 * rng.standard_normal()), 0.0, False, False, {})
        belief = agent.rules[arm].belief
        choices.append(arm)
        beliefs.append(
            b"".join(np.asarray(belief.fields[k]).tobytes() for k in sorted(belief.fields))
            + np.asarray(belief.log_h).tobytes()
        )
    return choices, beliefs


def _memory_bytes(agent: ThompsonSampling) -> bytes:
    out = []
    for rule in agent.rules:
        memory = rule.memory
        size = len(memory)
        for name in sorted(memory._fields):
            out.append(memory._fields[name][:size].tobytes())
        out += [memory._log_h[:size].tobytes(), memory._times[:size].tobytes()]
        out.append(repr(memory._labels).encode())
    return b"".join(out)


@pytest.mark.parametrize("capacity", [None, 8])
def test_fast_step_equals_the_layered_step(monkeypatch, capacity) -> None:
    fast = ThompsonSampling.gaussian(5, "bam", seed=7, lam=0.0, capacity=capacity)
    got = _run(fast, 400)
    memories = _memory_bytes(fast)
    # the layered path: rule.update's checks and Memory.add
    monkeypatch.setattr(bandits, "proves_normal_datum", lambda *args: False)
    layered = ThompsonSampling.gaussian(5, "bam", seed=7, lam=0.0, capacity=capacity)
    # BAM._update then sees another Memory class and calls memory.add, with its checks
    monkeypatch.setattr(bam_module, "Memory", type("Other", (), {"add": None}))
    assert _run(layered, 400) == got
    assert _memory_bytes(layered) == memories


def test_add_checked_stores_what_add_stores() -> None:
    model = NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625)
    for capacity in (None, 4):
        one, two = Memory(capacity), Memory(capacity)
        for t, reward in enumerate(np.linspace(-1.0, 2.0, 11)):
            s = gaussian_reward_statistics(model, float(reward))
            one.add(s, time=t)
            two._add_checked(s, None, t)
        assert len(one) == len(two)
        for name in one._fields:
            assert (
                one._fields[name][: len(one)].tobytes() == two._fields[name][: len(two)].tobytes()
            )
        assert one._log_h[: len(one)].tobytes() == two._log_h[: len(two)].tobytes()
        assert one.n_merges == two.n_merges


def test_an_overflowing_datum_is_still_refused_and_changes_nothing() -> None:
    # finite statistics whose prior-plus-datum log partition overflows: not proven, so
    # update's general checks run and raise their own message
    agent = ThompsonSampling.gaussian(3, "bam", seed=0, lam=0.0, noise_std=1e-3)
    agent.observe(0, 0.5, 0.0, False, False, {})
    before = copy.deepcopy(agent.rules[1])
    model = agent.model
    with pytest.raises(ValueError) as layered:
        copy.deepcopy(agent.rules[1]).update(gaussian_reward_statistics(model, 1e150))
    with pytest.raises(ValueError) as fast:
        agent.observe(1, 1e150, 0.0, False, False, {})
    assert str(fast.value) == str(layered.value)
    rule = agent.rules[1]
    assert len(rule.memory) == len(before.memory) and rule.t == before.t
    assert rule.belief.fields["precision"].tobytes() == before.belief.fields["precision"].tobytes()


def test_a_family_with_its_own_belief_check_takes_update(monkeypatch) -> None:
    agent = ThompsonSampling.gaussian(3, "bam", seed=0, lam=0.0)
    calls = []

    def check(fields):
        calls.append(1)
        NormalKnownVariance._check_belief(agent.model, fields)

    agent.model._check_belief = check  # an instance hook: proves_normal_datum declines
    assert not bandits.proves_normal_datum(agent.model, 1.0, 16.0, True)
    agent.observe(0, 0.5, 0.0, False, False, {})
    assert calls  # the general checks (and the posterior's) ran through the hook
