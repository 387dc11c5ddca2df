"""Announcements are not erased (issue 50): ``NonStationary`` keeps what the wrapped
environment says about its own world. A change is flagged when any layer changed (bam-rl's
announced cart-pole, an inner ``NonStationary``), and ``info["context"]`` (and the wrapper's
``context``, which the harness logs as ``context_*``) holds every layer's values."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary


@pytest.mark.parametrize("notify", ["value", "flag"])
def test_the_episodic_cartpoles_own_changes_stay_flagged(notify):
    # the paper's episodic cart-pole announces its gravity changes itself (trials 15, 30…);
    # the wrapper changes the gear every 10 trials, a separate schedule
    base = gym.make("bam_rl/GravityCartPoleEpisodic-v0")
    env = NonStationary(base, {"gear_scale": cycle([1.0, 0.8], every=10)}, notify=notify)
    flags, gravities = [], []
    for trial in range(32):
        _, info = env.reset(seed=0 if trial == 0 else None)
        flags.append(info["context_changed"])
        gravities.append(env.unwrapped.gravity)
        *_, info = env.step(np.zeros(1))
        # the cart-pole flags its whole changed trial, the wrapper the reset of its change
        assert info["context_changed"] == (trial in (15, 30))
        if notify == "value":
            assert info["context"] == {"gear_scale": 1.0 if trial // 10 % 2 == 0 else 0.8}
    expected = [t in (10, 15, 20, 30) for t in range(32)]  # gear: 10, 20, 30; gravity: 15, 30
    assert flags == expected
    assert gravities[14] != gravities[15]


def test_nested_wrappers_flag_either_layers_change_and_merge_the_contexts():
    inner = NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": cycle([9.81, 3.72])})
    outer = NonStationary(inner, {"mass_scale": cycle([1.0, 1.0, 2.0, 2.0])})
    seen = []
    for episode in range(5):
        _, info = outer.reset(seed=0 if episode == 0 else None)
        seen.append((info["context"], info["context_changed"]))
    assert seen == [
        ({"gravity": 9.81, "mass_scale": 1.0}, False),
        ({"gravity": 3.72, "mass_scale": 1.0}, True),  # the inner layer's change
        ({"gravity": 9.81, "mass_scale": 2.0}, True),
        ({"gravity": 3.72, "mass_scale": 2.0}, True),
        ({"gravity": 9.81, "mass_scale": 1.0}, True),
    ]
    *_, info = outer.step(np.zeros(1))
    assert info["context"] == {"gravity": 9.81, "mass_scale": 1.0}
    assert info["context_changed"] is False
    # the ground truth the harness logs holds both layers' values
    assert outer.get_wrapper_attr("context") == {"gravity": 9.81, "mass_scale": 1.0}
    assert gym.wrappers.RecordEpisodeStatistics(outer).get_wrapper_attr("context") == {
        "gravity": 9.81,
        "mass_scale": 1.0,
    }
    # the outer layer overrides its own keys only, and wrote last
    same = NonStationary(
        NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": cycle([3.72])}),
        {"gravity": cycle([11.15])},
    )
    _, info = same.reset(seed=0)
    assert info["context"] == same.get_wrapper_attr("context") == {"gravity": 11.15}
    assert same.unwrapped.model.opt.gravity[2] == -11.15
    # a silent outer layer leaves the inner announcements as they were
    silent = NonStationary(inner, {"mass_scale": cycle([1.0, 2.0])}, notify="none")
    silent.reset(seed=0)
    _, info = silent.reset()
    assert info == {"context": {"gravity": 3.72}, "context_changed": True}
