"""Every (environment, parameter) of the table really changes the physics.

For each environment NS-Gym wraps (its 5 classic-control and 10 MuJoCo v5 ones), plus
Walker2d-v5 and bam-rl's cart-pole, and each parameter of ``bam_rl.wrappers.parameters``
(MuJoCo: gravity, the four scale factors, the mass of every body, the damping of every hinge
and slide joint, the floor's friction), the test checks the model field or attribute the
wrapper wrote and one observable effect: two runs from the same initial state with the same
actions, one in the built world and one in the changed world, diverge. The few pairs with no
effect in that environment (friction without contacts, a scale of zeros) are listed with the
reason and must leave the trajectory bit-identical, so the list cannot hide a broken setter.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from wrappers_testutils import MUJOCO

import bam_rl  # noqa: F401  (registers bam_rl/GravityCartPole-v0)
from bam_rl.schedules import cycle
from bam_rl.wrappers import CLASSIC_CONTROL, NonStationary, parameters

CLASSIC = {
    "CartPole-v1": "CartPoleEnv",
    "Pendulum-v1": "PendulumEnv",
    "MountainCar-v0": "MountainCarEnv",
    "MountainCarContinuous-v0": "Continuous_MountainCarEnv",
    "Acrobot-v1": "AcrobotEnv",
}
FLOOR = ("floor", "ground")
#: (environment, parameter) pairs with no effect there, and why.
NO_EFFECT = {
    ("InvertedPendulum-v5", "friction_scale"): "no contacts",
    ("InvertedDoublePendulum-v5", "friction_scale"): "no contacts",
    ("InvertedDoublePendulum-v5", "friction:floor"): "no contacts",
    ("bam_rl/GravityCartPole-v0", "friction_scale"): "no contacts",
    ("bam_rl/GravityCartPole-v0", "friction:floor"): "no contacts",
    ("bam_rl/GravityCartPole-v0", "damping_scale"): "no joint damping to scale",
    ("Swimmer-v5", "damping_scale"): "no joint damping to scale",
    ("Swimmer-v5", "friction_scale"): "no contacts (it swims in a viscous medium)",
    ("Swimmer-v5", "friction:floor"): "no contacts",
    ("Reacher-v5", "friction_scale"): "no contacts",
    ("Reacher-v5", "friction:ground"): "no contacts",
    ("Reacher-v5", "gravity"): "moves in a horizontal plane (vertical hinge axes)",
    ("Swimmer-v5", "gravity"): "moves in a horizontal plane",
    ("Reacher-v5", "mass:target"): "the target is placed, never pushed",
    ("Reacher-v5", "damping:target_x"): "the target is placed, never pushed",
    ("Reacher-v5", "damping:target_y"): "the target is placed, never pushed",
    ("Pusher-v5", "mass:goal"): "the goal is a marker, never pushed",
    ("Pusher-v5", "damping:goal_slidex"): "the goal is a marker, never pushed",
    ("Pusher-v5", "damping:goal_slidey"): "the goal is a marker, never pushed",
    ("Pusher-v5", "mass:object"): f"not touched by the arm within {25} steps",
    ("Pusher-v5", "damping:obj_slidex"): f"not touched by the arm within {25} steps",
    ("Pusher-v5", "damping:obj_slidey"): f"not touched by the arm within {25} steps",
    ("Pusher-v5", "friction_scale"): f"no contact within {25} steps",
}
STEPS = 25


def _mujoco_cases():
    cases = []
    for env_id in MUJOCO:
        env = gym.make(env_id)
        names = parameters(env)
        env.close()
        for name in names:
            if name.startswith("friction:") and name.split(":")[1] not in FLOOR:
                continue  # friction of geoms that never touch anything: field-checked below
            cases.append((env_id, name))
    return cases


def _changed(env: gym.Env, name: str) -> float:
    if name.endswith("_scale"):
        return 1.6
    current = {"gravity": float(np.linalg.norm(env.unwrapped.model.opt.gravity))}.get(name)
    if current is None:
        model, key = env.unwrapped.model, name.split(":")[1]
        if name.startswith("mass:"):
            current = float(model.body(key).mass[0])
        elif name.startswith("friction:"):
            current = float(model.geom(key).friction[0])
        else:
            current = float(model.dof_damping[model.joint(key).dofadr[0]])
    if name.startswith("friction:"):  # MuJoCo takes the larger of two touching geoms'
        return current * 5.0
    return current * 1.6 if current > 0 else 2.0


def _trajectory(env: gym.Env, seed: int = 0) -> np.ndarray:
    observation, _ = env.reset(seed=seed)
    rng = np.random.default_rng(1)
    low, high = env.action_space.low, env.action_space.high
    out = [observation]
    for _ in range(STEPS):
        observation, _, terminated, truncated, _ = env.step(
            rng.uniform(low, high).astype(env.action_space.dtype)
        )
        out.append(observation)
        if terminated or truncated:
            break
    return np.array(out)


def _field(env: gym.Env, name: str, value: float, built: mujoco.MjModel) -> None:
    model = env.unwrapped.model
    if name == "gravity":
        assert np.linalg.norm(model.opt.gravity) == pytest.approx(value)
    elif name == "mass_scale":
        np.testing.assert_allclose(model.body_mass, built.body_mass * value)
        np.testing.assert_allclose(model.body_inertia, built.body_inertia * value)
    elif name == "friction_scale":
        np.testing.assert_allclose(model.geom_friction, built.geom_friction * value)
    elif name == "damping_scale":
        np.testing.assert_allclose(model.dof_damping, built.dof_damping * value)
    elif name == "gear_scale":
        np.testing.assert_allclose(model.actuator_gear, built.actuator_gear * value)
    elif name.startswith("mass:"):
        i = model.body(name[5:]).id
        assert model.body_mass[i] == value
        np.testing.assert_allclose(
            model.body_inertia[i], built.body_inertia[i] * value / built.body_mass[i]
        )
        others = np.arange(model.nbody) != i
        np.testing.assert_array_equal(model.body_mass[others], built.body_mass[others])
    elif name.startswith("friction:"):
        assert model.geom(name[9:]).friction[0] == value
    elif name.startswith("damping:"):
        assert model.dof_damping[model.joint(name[8:]).dofadr[0]] == value


@pytest.mark.parametrize(("env_id", "name"), _mujoco_cases())
def test_mujoco_parameter_changes_the_model_and_the_motion(env_id, name):
    built = gym.make(env_id)
    value = _changed(built, name)
    model_before = mujoco.MjModel.__copy__(built.unwrapped.model)
    reference = _trajectory(built)
    changed = NonStationary(gym.make(env_id), {name: cycle([value])})
    trajectory = _trajectory(changed)
    _field(changed, name, value, model_before)
    assert changed.get_wrapper_attr("context") == {name: value}
    same = reference.shape == trajectory.shape and np.array_equal(reference, trajectory)
    if (env_id, name) in NO_EFFECT:
        assert same, f"{env_id} {name}: listed as without effect ({NO_EFFECT[env_id, name]})"
    else:
        assert not same, f"{env_id} {name}: the motion did not change"


@pytest.mark.parametrize("env_id", MUJOCO)
def test_every_named_friction_is_written(env_id):
    env = gym.make(env_id)
    built = mujoco.MjModel.__copy__(env.unwrapped.model)
    names = [n for n in parameters(env) if n.startswith("friction:")]
    wrapped = NonStationary(env, {n: cycle([0.5 + i / 10]) for i, n in enumerate(names)})
    wrapped.reset(seed=0)
    for i, n in enumerate(names):
        assert env.unwrapped.model.geom(n[9:]).friction[0] == 0.5 + i / 10
        np.testing.assert_array_equal(
            env.unwrapped.model.geom(n[9:]).friction[1:], built.geom(n[9:]).friction[1:]
        )


def test_gravity_on_the_pendulum_is_its_free_fall_acceleration():
    """The issue's example: a body's weight under ``mj_step`` follows the schedule."""
    env = NonStationary(gym.make("InvertedPendulum-v5"), {"gravity": cycle([9.81, 3.72])})
    for g in (9.81, 3.72):
        env.reset(seed=None if g == 3.72 else 0)
        model, data = env.unwrapped.model, env.unwrapped.data
        data.qpos[:] = 0.0
        data.qvel[:] = 0.0
        data.ctrl[:] = 0.0
        mujoco.mj_forward(model, data)
        # gravity's generalised force on the slider is zero; the total weight is the sum of
        # the bodies' weights, which mj_rne (bias forces with zero velocity) reports
        weight = float(np.sum(model.body_mass) * np.linalg.norm(model.opt.gravity))
        assert weight == pytest.approx(float(np.sum(model.body_mass)) * g)
        # a free fall: the cart-pole's pole tipped by 0.3 rad accelerates with g
        data.qpos[1] = 0.3
        mujoco.mj_forward(model, data)
        acceleration = float(data.qacc[1])
        assert acceleration != 0.0
        if g == 9.81:
            earth = acceleration
    assert acceleration / earth == pytest.approx(3.72 / 9.81, rel=0.05)


CLASSIC_CASES = [(env_id, a) for env_id, cls in CLASSIC.items() for a in CLASSIC_CONTROL[cls]]


@pytest.mark.parametrize(("env_id", "name"), CLASSIC_CASES)
def test_classic_control_attribute_changes_the_motion(env_id, name):
    built = gym.make(env_id)
    value = float(getattr(built.unwrapped, name)) * 1.6
    reference = _classic_trajectory(built)
    changed = NonStationary(gym.make(env_id), {name: cycle([value])})
    trajectory = _classic_trajectory(changed)
    assert getattr(changed.unwrapped, name) == value
    if env_id == "CartPole-v1":
        u = changed.unwrapped
        assert u.total_mass == u.masspole + u.masscart
        assert u.polemass_length == u.masspole * u.length
    assert not (reference.shape == trajectory.shape and np.array_equal(reference, trajectory))


def _classic_trajectory(env: gym.Env) -> np.ndarray:
    observation, _ = env.reset(seed=0)
    env.action_space.seed(3)
    out = [observation]
    for _ in range(STEPS):
        action = env.action_space.sample()
        if isinstance(env.action_space, gym.spaces.Box):
            action = env.action_space.high  # full push: every force/power term acts
        observation, _, terminated, truncated, _ = env.step(action)
        out.append(observation)
        if terminated or truncated:
            break
    return np.array(out)


def test_bam_rl_cartpole_gravity_goes_through_set_gravity():
    env = NonStationary(
        gym.make("bam_rl/GravityCartPole-v0"),
        {"gravity": cycle([3.72, 11.15], every=3, unit="step")},
    )
    _, info = env.reset(seed=0)
    assert info["gravity"] == 3.72 == env.unwrapped.gravity
    for t in range(7):
        _, _, _, _, info = env.step(np.zeros(1))
        expected = 3.72 if (t // 3) % 2 == 0 else 11.15
        assert info["gravity"] == expected == env.unwrapped.gravity
        assert env.unwrapped.model.opt.gravity[2] == -expected
        assert info["context_changed"] == (t in (3, 6))
