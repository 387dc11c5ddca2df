"""Physical values within physics (issue 50): every built-in parameter has a bounded range, so
what the wrapper writes into a model is finite and one step stays a finite computation; a
simulation that diverges all the same (MuJoCo resetting a bad state silently, a non-finite
observation) raises ``RuntimeError`` naming the values in force; ``observe_context`` refuses
values its observation's dtype would turn into ``inf``."""

from __future__ import annotations

import math
import sys

import gymnasium as gym
import numpy as np
import pytest
from wrappers_testutils import MUJOCO

import bam_rl  # noqa: F401  (registers bam_rl/GravityCartPole-v0)
from bam_rl.schedules import cycle
from bam_rl.wrappers import NonStationary, parameters
from bam_rl.wrappers.physics import ACROBOT_MAX_TURN, acrobot_turn, world_of

CLASSIC = ("CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1")


# ------------------------------------------------------------------ ranges, up front
@pytest.mark.parametrize(
    ("env_id", "changes", "match"),
    [
        ("InvertedPendulum-v5", {"mass_scale": 1e308}, r"mass_scale.*\[1e-06, 1e\+06\]"),
        ("InvertedPendulum-v5", {"mass:pole": 1e300, "mass_scale": 10.0}, r"mass:pole"),
        ("InvertedPendulum-v5", {"gear_scale": 1e307}, r"gear_scale.*\[0, 1e\+06\]"),
        ("InvertedPendulum-v5", {"friction_scale": 1e200}, r"friction_scale"),
        ("Hopper-v5", {"friction:floor": 1e300, "friction_scale": 2.0}, r"friction:floor"),
        ("InvertedPendulum-v5", {"damping:hinge": 1e300}, r"damping:hinge.*\[0, 1e\+06\]"),
        ("InvertedPendulum-v5", {"mass:pole": 1e-300, "mass_scale": 1e-300}, r"\[1e-12, 1e\+06\]"),
        ("InvertedPendulum-v5", {"gravity": 1e300}, r"gravity.*\[0, 10000\]"),
        ("CartPole-v1", {"tau": 1e300}, r"tau.*\(0, 1\]"),
        ("CartPole-v1", {"masspole": 1e-300}, r"masspole.*\[1e-06, 1e\+06\]"),
        ("Pendulum-v1", {"dt": 2.0}, r"dt.*\(0, 1\]"),
        ("Acrobot-v1", {"dt": 1000.0}, r"dt.*\(0, 1\]"),
        ("Acrobot-v1", {"LINK_LENGTH_1": 1e300}, r"LINK_LENGTH_1.*\[1e-06, 1e\+06\]"),
        ("MountainCar-v0", {"gravity": 1e300}, r"gravity"),
    ],
)
def test_values_that_overflow_the_model_are_refused_with_the_range(env_id, changes, match):
    with pytest.raises(ValueError, match=match):
        NonStationary(gym.make(env_id), {name: cycle([v]) for name, v in changes.items()})


@pytest.mark.parametrize("env_id", [*MUJOCO, *CLASSIC])
def test_every_built_in_parameter_has_a_bounded_range(env_id):
    env = gym.make(env_id)
    ranges = world_of(env.unwrapped).ranges
    assert set(parameters(env)) == set(ranges)
    for name, accepted in ranges.items():
        assert math.isfinite(accepted.low) and math.isfinite(accepted.high), name


@pytest.mark.parametrize(
    "env_id", ["InvertedPendulum-v5", "HalfCheetah-v5", "Pusher-v5", "Reacher-v5", "Humanoid-v5"]
)
def test_every_parameter_at_the_top_of_its_range_writes_a_finite_model(env_id):
    """All of them at once, named values times their factors: the products stay finite."""
    base = gym.make(env_id)
    world = world_of(base.unwrapped)
    env = NonStationary(base, {name: cycle([r.high]) for name, r in world.ranges.items()})
    try:
        env.reset(seed=0)
        env.step(np.zeros(env.action_space.shape))
    except RuntimeError as error:  # such a world may diverge: it must say so, naming values
        assert "values in force" in str(error)
    model = env.unwrapped.model
    for field in ("body_mass", "body_inertia", "geom_friction", "dof_damping", "actuator_gear"):
        assert np.isfinite(getattr(model, field)).all(), field
    assert np.isfinite(model.opt.gravity).all()


def test_hinge_and_slide_joints_have_a_damping_parameter():
    # MuJoCo 4's joint-type enum never equalled the model's NumPy integers: no damping:<joint>
    # was offered at all, whatever the docs said
    env = gym.make("InvertedPendulum-v5")
    assert {"damping:hinge", "damping:slider"} <= set(parameters(env))
    wrapped = NonStationary(env, {"damping:hinge": cycle([2.5])})
    wrapped.reset(seed=0)
    model = wrapped.unwrapped.model
    assert model.dof_damping[model.joint("hinge").dofadr[0]] == 2.5


# ------------------------------------------------------------------ Acrobot's one step
def test_acrobot_values_whose_one_step_turns_a_link_forever_are_refused():
    # a link length of 1e6 is inside the length's range, but one RK4 step then turns link 1
    # by about 1e20 rad, and Gymnasium's angle wrapping would loop once per turn
    env = NonStationary(gym.make("Acrobot-v1"), {"LINK_LENGTH_1": cycle([1e6])})
    with pytest.raises(ValueError, match=r"LINK_LENGTH_1=1e\+06.*could turn a link by .* rad"):
        env.reset(seed=0)
    assert env.unwrapped.LINK_LENGTH_1 == 1.0  # nothing written
    lopsided = {
        "LINK_MASS_1": 0.1,
        "LINK_MASS_2": 10.0,
        "LINK_LENGTH_1": 10.0,
        "LINK_COM_POS_1": 0.1,
        "LINK_COM_POS_2": 10.0,
        "LINK_MOI": 0.1,
    }
    env = NonStationary(gym.make("Acrobot-v1"), {k: cycle([v]) for k, v in lopsided.items()})
    with pytest.raises(ValueError, match="use a smaller dt"):
        env.reset(seed=0)


def test_acrobot_values_within_the_turn_bound_step_as_before():
    env = NonStationary(gym.make("Acrobot-v1"), {"LINK_MASS_2": cycle([1.0, 1.5, 3.0])})
    env.reset(seed=0)
    for _ in range(3):
        for _ in range(20):
            env.step(env.action_space.sample())
        env.reset()
    assert acrobot_turn(gym.make("Acrobot-v1").unwrapped, {"LINK_MASS_2": 3.0}) < ACROBOT_MAX_TURN


def test_acrobot_dt_at_the_range_end_is_refused_by_its_one_step():
    env = NonStationary(gym.make("Acrobot-v1"), {"dt": cycle([0.2, 1.0])})
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(ValueError, match=r"dt=1"):
        env.reset()
    assert env.unwrapped.dt == 0.2


# ------------------------------------------------------------------ divergence at run time
def test_a_gear_that_makes_mujoco_reset_the_state_raises_naming_the_values():
    # before: MuJoCo reset the state every step (mjWARN_BADQVEL) and the pole "balanced"
    env = NonStationary(gym.make("InvertedPendulum-v5"), {"gear_scale": cycle([1e6])})
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"\{'gear_scale': 1000000.0\}.*mjWARN_BADQ"):
        env.step(np.ones(1))


def test_the_cartpoles_own_warning_names_the_values_in_force():
    env = NonStationary(gym.make("bam_rl/GravityCartPole-v0"), {"gear_scale": cycle([1e6])})
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"MuJoCo warned.*values in force: \{'gear_scale'"):
        env.step(np.ones(1))


def test_a_non_finite_observation_raises_naming_the_values():
    changes = {"masscart": cycle([1e-6]), "masspole": cycle([1e-6]), "force_mag": cycle([1e6])}
    env = NonStationary(gym.make("CartPole-v1", max_episode_steps=None), changes)
    env.reset(seed=0)
    with pytest.warns(), pytest.raises(RuntimeError, match=r"'force_mag': 1000000.0\}.*non-finite"):
        for _ in range(20):  # past termination the state blows up to inf in float32
            env.step(1)


# ------------------------------------------------------------------ observed values
def test_observe_context_refuses_a_value_beyond_the_observations_dtype():
    env = gym.make("Pendulum-v1")  # a float32 observation
    assert env.observation_space.dtype == np.float32
    with pytest.raises(ValueError, match=r"observe_context=True.*float32.*3\.40282e\+38"):
        NonStationary(env, {"attr:max_speed": cycle([8.0, 1e39])}, observe_context=True)
    NonStationary(gym.make("Pendulum-v1"), {"attr:max_speed": cycle([8.0, 1e39])})  # unobserved


def test_observe_context_refuses_such_a_value_from_a_schedule_without_bounds():
    class Jump:  # a user schedule: no bounds, checked value by value
        unit = "episode"

        def value(self, t, rng):
            return 8.0 if t == 0 else 1e39

    env = NonStationary(gym.make("Pendulum-v1"), {"attr:max_speed": Jump()}, observe_context=True)
    observation, _ = env.reset(seed=0)
    assert observation[-1] == 8.0
    with pytest.raises(ValueError, match=r"'attr:max_speed' gave 1e\+39.*observe_context"):
        env.reset()
    assert sys.float_info.max > 1e39  # a float64 observation would hold it


@pytest.mark.parametrize("env_id, depth", [("Pendulum-v1", 4), ("InvertedPendulum-v5", 17)])
def test_a_stacked_observation_steps_and_is_checked(env_id, depth):
    """Review of issue 50: the finiteness check read only flat observations, so a wrapped
    FrameStackObservation (2-D observations) failed at its first step."""
    name = "g" if env_id == "Pendulum-v1" else "gravity"
    stacked = gym.wrappers.FrameStackObservation(gym.make(env_id), depth)
    env = NonStationary(stacked, {name: cycle([9.81, 3.72])})
    observation, _ = env.reset(seed=0)
    for _ in range(3):
        observation, *_ = env.step(env.action_space.sample())
    assert observation.shape[0] == depth and np.isfinite(observation).all()
