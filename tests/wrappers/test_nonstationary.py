"""NonStationary: notification, counters, seeding, the visible context, refusals."""

from __future__ import annotations

import math
import pickle

import gymnasium as gym
import numpy as np
import pytest

from bam_rl.schedules import cycle, drift, markov, piecewise, random_walk
from bam_rl.wrappers import NonStationary


def _pendulum(**kwargs):
    return NonStationary(gym.make("InvertedPendulum-v5"), **kwargs)


def test_a_cycle_with_a_repeat_flags_only_the_real_changes():
    env = _pendulum(changes={"gravity": cycle([10, 10, 3.72])})
    seen = []
    for k in range(7):
        _, info = env.reset(seed=0 if k == 0 else None)
        seen.append((info["context"]["gravity"], info["context_changed"]))
        for _ in range(3):
            *_, info = env.step(np.zeros(1))
            assert info["context_changed"] is False
    assert seen == [
        (10, False),
        (10, False),
        (3.72, True),
        (10, True),
        (10, False),
        (3.72, True),
        (10, True),
    ]
    assert env.unwrapped.model.opt.gravity[2] == -10


def test_step_level_changes_flag_the_step_they_take_effect():
    env = _pendulum(changes={"gravity": cycle([9.81, 9.81, 5.0], every=2, unit="step")})
    env.reset(seed=1)
    flags, values = [], []
    for _ in range(12):
        *_, info = env.step(np.zeros(1))
        flags.append(info["context_changed"])
        values.append(-env.unwrapped.model.opt.gravity[2])
    assert values == [9.81] * 4 + [5.0] * 2 + [9.81] * 4 + [5.0] * 2
    assert flags == [False] * 4 + [True, False, True] + [False] * 3 + [True, False]


@pytest.mark.parametrize("notify", ["value", "flag", "none"])
def test_notify_levels_and_the_ground_truth_at_every_level(notify):
    env = _pendulum(changes={"gravity": cycle([9.81, 3.72])}, notify=notify)
    _, info = env.reset(seed=0)
    env.reset()
    *_, info = env.step(np.zeros(1))
    assert ("context" in info) == (notify == "value")
    assert ("context_changed" in info) == (notify != "none")
    assert env.get_wrapper_attr("context") == {"gravity": 3.72}
    assert gym.make_vec  # the attribute is reachable through outer wrappers too
    outer = gym.wrappers.RecordEpisodeStatistics(env)
    assert outer.get_wrapper_attr("context") == {"gravity": 3.72}


def test_counters_survive_reset_and_a_seed_restarts_them():
    env = _pendulum(changes={"mass:pole": drift(2.0, 1.0, high=100.0, unit="episode")})
    for k in range(4):
        env.reset()
        env.step(np.zeros(1))
        assert env.get_wrapper_attr("counters") == {"episode": k, "step": k + 1}
    assert env.get_wrapper_attr("context") == {"mass:pole": 5.0}
    env.reset(seed=3)
    assert env.get_wrapper_attr("counters") == {"episode": 0, "step": 0}
    assert env.get_wrapper_attr("context") == {"mass:pole": 2.0}


def _values(env, seed, n=60):
    env.reset(seed=seed)
    out = []
    for t in range(n):
        *_, terminated, truncated, _ = env.step(np.full(1, 0.1))
        out.append(tuple(env.get_wrapper_attr("context").values()))
        if terminated or truncated or t % 17 == 16:
            env.reset()
    return out


def test_the_seed_fixes_the_schedule_and_not_the_global_state():
    changes = {
        "gravity": markov([9.81, 3.72, 11.15], 0.2, unit="step"),
        "damping_scale": random_walk(1.0, 0.3, 0.1, 3.0, unit="step"),
        "mass:pole": markov([5.0, 8.0], 0.5),
    }
    a = _values(_pendulum(changes=changes), seed=7)
    np.random.seed(123)  # noqa: NPY002  (the global state must not matter)
    b = _values(_pendulum(changes=changes), seed=7)
    assert a == b
    assert _values(_pendulum(changes=changes), seed=8) != a
    assert len({v[0] for v in a}) == 3 and len({v[2] for v in a}) == 2


def test_the_schedule_does_not_touch_the_environments_own_randomness():
    plain = gym.make("InvertedPendulum-v5")
    wrapped = _pendulum(changes={"gear_scale": random_walk(1.0, 0.0, 0.0, 2.0)})
    for seed in (0, 5):
        np.testing.assert_array_equal(plain.reset(seed=seed)[0], wrapped.reset(seed=seed)[0])
        for _ in range(10):
            a, b = plain.step(np.full(1, 0.3)), wrapped.step(np.full(1, 0.3))
            np.testing.assert_array_equal(a[0], b[0])


def test_observe_context_appends_the_values_to_a_flat_box():
    env = _pendulum(
        changes={
            "gravity": piecewise({0: 9.81, 2: 3.72}, unit="step"),
            "mass_scale": cycle([1.0, 2.0]),
        },
        observe_context=True,
    )
    assert env.observation_space.shape == (6,)
    assert env.observation_space.low[-2:].tolist() == [3.72, 1.0]
    assert env.observation_space.high[-2:].tolist() == [9.81, 2.0]
    observation, _ = env.reset(seed=0)
    assert observation[-2:].tolist() == [9.81, 1.0] and observation in env.observation_space
    for _ in range(3):
        observation, *_ = env.step(np.zeros(1))
    assert observation[-2:].tolist() == [3.72, 1.0]
    observation, _ = env.reset()
    assert observation[-2:].tolist() == [3.72, 2.0]


def test_a_mass_change_recomputes_derived_constants_and_keeps_the_state():
    env = _pendulum(changes={"mass:pole": cycle([5.0, 10.0], every=3, unit="step")})
    env.reset(seed=0)
    model, data = env.unwrapped.model, env.unwrapped.data
    for _ in range(3):
        env.step(np.full(1, 0.2))
    qpos, qvel = data.qpos.copy(), data.qvel.copy()
    env.step(np.zeros(1))  # the change happens before this step
    assert model.body_subtreemass[0] == pytest.approx(model.body_mass.sum())
    assert model.body_mass[2] == 10.0
    # the step started from the state before the change (mj_setConst works at qpos0)
    assert not np.array_equal(data.qpos, np.zeros_like(qpos))
    assert np.abs(data.qpos - qpos).max() < 0.1 and np.abs(data.qvel - qvel).max() < 2.0


def test_planning_copy_is_the_current_world_frozen_and_independent():
    env = _pendulum(changes={"gravity": cycle([9.81, 3.72], every=5, unit="step")})
    env.reset(seed=0)
    for _ in range(6):
        env.step(np.full(1, 0.1))
    copy = env.get_wrapper_attr("planning_copy")()
    assert copy.model.opt.gravity[2] == -3.72
    np.testing.assert_array_equal(copy.data.qpos, env.unwrapped.data.qpos)
    a = copy.step(np.full(1, 0.2))[0]
    b = env.step(np.full(1, 0.2))[0]
    np.testing.assert_array_equal(a, b)  # same world, same state, same action
    copy.step(np.full(1, 0.5))
    assert not np.array_equal(copy.data.qpos, env.unwrapped.data.qpos)
    for _ in range(5):
        env.step(np.zeros(1))
    assert copy.model.opt.gravity[2] == -3.72 and env.unwrapped.model.opt.gravity[2] == -9.81


def test_a_classic_control_planning_copy():
    env = NonStationary(gym.make("Pendulum-v1"), {"g": cycle([3.0, 20.0], unit="step")})
    env.reset(seed=0)
    env.step(np.zeros(1))
    copy = env.get_wrapper_attr("planning_copy")()
    assert copy.g == 3.0  # step t's value applies before step t: step 1 brings 20
    a, b = copy.step(np.ones(1))[0], env.step(np.ones(1))[0]
    assert env.unwrapped.g == 20.0 and copy.g == 3.0 and not np.array_equal(a, b)


def test_the_wrapper_pickles_with_its_schedules():
    env = _pendulum(changes={"gravity": cycle([9.81, 3.72])})
    assert pickle.loads(pickle.dumps(env.changes)) == env.changes
    assert env.spec is not None and env.spec.additional_wrappers[-1].name == "NonStationary"


# ------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    ("changes", "kwargs", "match"),
    [
        ({"gravty": cycle([9.81])}, {}, r"unknown parameter 'gravty' .*'gravity', 'mass:cart'"),
        ({"mass:pole": cycle([-1.0])}, {}, r"mass:pole.*\[1e-12, 1e\+06\]"),
        ({"mass:pole": cycle([0.0, 1.0])}, {}, r"mass:pole"),
        ({"friction_scale": cycle([-0.1])}, {}, r"friction_scale.*\[0, 1e\+06\]"),
        ({"friction:rail": drift(1.0, -0.1)}, {}, r"span \[-inf, 1\]"),
        ({"mass:pole": random_walk(1.0, 0.1)}, {}, r"mass:pole"),
        ({"gravity": 9.81}, {}, r"changes\['gravity'\] must be a schedule"),
        ({}, {}, "changes must be a non-empty dict"),
        ({"gravity": cycle([9.81])}, {"notify": "loud"}, r"notify must be one of \('value'"),
        ({"gravity": cycle([9.81])}, {"observe_context": "yes"}, "observe_context must be a bool"),
    ],
)
def test_bad_input_is_refused_and_the_environment_is_untouched(changes, kwargs, match):
    base = gym.make("InvertedPendulum-v5")
    model = base.unwrapped.model
    before = [a.copy() for a in (model.opt.gravity, model.body_mass, model.geom_friction)]
    with pytest.raises(ValueError, match=match):
        NonStationary(base, changes, **kwargs)
    after = (model.opt.gravity, model.body_mass, model.geom_friction)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_user_schedule_with_a_bad_unit_or_value_is_refused():
    class Bad:
        unit = "trial"

        def value(self, t, rng):
            return 1.0

    with pytest.raises(ValueError, match=r"changes\['gravity'\].unit must be one of"):
        _pendulum(changes={"gravity": Bad()})

    class Wild:
        unit = "step"

        def value(self, t, rng):
            return math.nan if t == 2 else 9.81

    env = _pendulum(changes={"gravity": Wild()})
    env.reset(seed=0)
    env.step(np.zeros(1))
    with pytest.raises(ValueError, match=r"schedule of 'gravity' gave nan"):
        env.step(np.zeros(1))
        env.step(np.zeros(1))
    assert env.unwrapped.model.opt.gravity[2] == -9.81


def test_unknown_environment_family_and_observe_context_on_a_dict_space():
    with pytest.raises(ValueError, match="env must be a MuJoCo environment"):
        NonStationary(gym.make("FrozenLake-v1"), {"gravity": cycle([1.0])})
    with pytest.raises(ValueError, match=r"parameters are .*'force_mag', 'gravity'"):
        NonStationary(gym.make("CartPole-v1"), {"mass": cycle([1.0])})
