"""The cheaper ``NonStationary.step`` (issue 50): step-level cycles and piecewise schedules are
evaluated only where they can change, and MuJoCo's bad-state counters are read through a
memoryview — with the same worlds, notifications and divergence checks as before."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.schedules import Cycle, Piecewise, cycle, piecewise
from bam_rl.wrappers import NonStationary


class _Opaque:
    """A user's schedule that forwards to a built-in one: evaluated at every step."""

    unit = "step"

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    @property
    def bounds(self):
        return self.inner.bounds

    def value(self, t, rng):
        self.calls += 1
        return self.inner.value(t, rng)


def _trace(env, steps, resets):
    rows = []
    env.reset(seed=0)
    for t in range(steps):
        if t in resets:
            _, info = env.reset(seed=resets[t])
            rows.append(("reset", dict(info["context"]), info["context_changed"]))
        _, _, terminated, truncated, info = env.step(np.zeros(1))
        rows.append((env.unwrapped.gravity, dict(info["context"]), info["context_changed"]))
        if terminated or truncated:
            env.reset()
    return rows


@pytest.mark.parametrize(
    "schedule",
    [
        cycle([9.81, 11.15, 3.72], every=7, unit="step"),
        cycle([9.81, 9.81, 3.72], every=1, unit="step"),  # repeated values: no change
        piecewise({0: 9.81, 5: 3.72, 40: 11.15}, unit="step"),
    ],
)
def test_skipped_evaluations_give_the_worlds_of_evaluating_every_step(schedule):
    """Against the same schedule hidden from the wrapper (evaluated at every step): the same
    gravity, context and change flags at every step, through seeded and unseeded resets."""
    resets = {30: None, 55: 3, 70: None}  # None: an unseeded reset (the step count goes on)
    fast = gym.make("bam_rl/GravityCartPole-v0")
    opaque = _Opaque(schedule)
    slow = gym.make("bam_rl/GravityCartPole-v0")
    got = _trace(NonStationary(fast, {"gravity": schedule}), 90, resets)
    expected = _trace(NonStationary(slow, {"gravity": opaque}), 90, resets)
    assert got == expected
    assert opaque.calls >= 90  # the reference did evaluate at every step


def test_only_cycles_and_piecewise_schedules_are_skipped():
    """A subclass may compute its value otherwise: evaluated at every step."""

    class Noisy(Cycle):
        def value(self, t, rng):
            return 9.81 + float(rng.random())

    env = NonStationary(gym.make("CartPole-v1"), {"gravity": Noisy([9.81], unit="step")})
    env.reset(seed=0)
    gravities, changed = set(), []
    for _ in range(5):  # the first step is in the reset's world (step 0)
        info = env.step(0)[4]
        gravities.add(env.unwrapped.gravity)  # type: ignore[attr-defined]
        changed.append(info["context_changed"])
    assert len(gravities) == 5 and changed == [False, True, True, True, True]
    assert type(Piecewise({0: 1.0}, unit="step")) is Piecewise


def test_a_copy_still_sees_mujocos_bad_states():
    """The memoryview of MuJoCo's counters is bound again in a copy (a memoryview does not
    pickle; the copy's counters are its own)."""
    env = NonStationary(gym.make("InvertedPendulum-v5"), {"gear_scale": cycle([1e6])})
    env.reset(seed=0)
    for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        twin.reset(seed=0)
        with pytest.raises(RuntimeError, match=r"\{'gear_scale': 1000000.0\}.*mjWARN_BADQ"):
            twin.step(np.ones(1))
    with pytest.raises(RuntimeError, match=r"mjWARN_BADQ"):
        env.step(np.ones(1))
    env.reset(seed=1)  # MuJoCo's reset clears its counters: stepping gently is fine again
    env.step(np.zeros(1))
