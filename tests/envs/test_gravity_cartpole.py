"""Cart-pole under switching gravity: model constants, physics, schedules, rendering, bad input."""

from __future__ import annotations

import ctypes.util
import math
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from envs_testutils import MALFORMED_BOX_ACTIONS, assert_refuses_action

from bam_rl.envs import CONTINUAL_SCHEDULE, EPISODIC_SCHEDULE
from bam_rl.envs.gravity_cartpole import GravityCartPoleEnv

FIXED_QPOS = np.array([0.1, math.pi - 0.4])
FIXED_QVEL = np.array([0.2, -0.3])


def one_step_from_fixed_state(env: GravityCartPoleEnv, action: float = 0.0) -> np.ndarray:
    env.set_state(FIXED_QPOS.copy(), FIXED_QVEL.copy())
    return env.step(np.array([action], np.float32))[0]


def reference(gravity: float, action: float = 0.0) -> np.ndarray:
    env = GravityCartPoleEnv(gravity_schedule=[gravity])
    env.reset(seed=0)
    return one_step_from_fixed_state(env, action)


def test_model_constants_match_classic_cartpole() -> None:
    env = GravityCartPoleEnv()
    m = env.model
    cart, pole = m.body("cart"), m.body("pole")
    assert cart.mass[0] == 1.0 and pole.mass[0] == pytest.approx(0.1)
    assert pole.ipos.tolist() == [0.0, 0.0, 0.5]  # centre of mass 0.5 m above the hinge
    assert pole.inertia[1] == pytest.approx(0.1 * 1.0**2 / 12)  # uniform 1 m rod, hinge axis y
    assert m.actuator_gear[0, 0] == 10.0 and m.actuator_ctrlrange[0].tolist() == [-1.0, 1.0]
    assert env.dt == pytest.approx(0.02)
    assert not m.jnt_limited.any()  # unlimited hinge and rail
    for field in (m.dof_damping, m.dof_armature, m.dof_frictionloss):
        assert not field.any()
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert env.observation_space.shape == (5,) and env.observation_space.dtype == np.float64


@pytest.mark.parametrize("gravity", [3.72, 9.81, 11.15])
def test_small_oscillation_period_matches_analytic(gravity: float) -> None:
    """Hanging pole, cart free, no force: ω² = m g l (M+m) / ((I + m l²)(M+m) − m² l²)."""
    env = GravityCartPoleEnv(max_steps=1000)
    env.reset(seed=0, options={"gravity": gravity})
    env.set_state(np.array([0.0, math.pi + 0.05]), np.zeros(2))
    m = env.model
    big_m, small_m = m.body("cart").mass[0], m.body("pole").mass[0]
    length, inertia = m.body("pole").ipos[2], m.body("pole").inertia[1]
    numerator = small_m * gravity * length * (big_m + small_m)
    denominator = (inertia + small_m * length**2) * (big_m + small_m) - (small_m * length) ** 2
    omega2 = numerator / denominator
    analytic = 2 * math.pi / math.sqrt(omega2)

    phi = [0.05]  # deviation from hanging down: angle − π
    for _ in range(1000):
        obs = env.step(np.zeros(1, np.float32))[0]
        phi.append(math.atan2(-obs[3], -obs[2]))
    phi = np.array(phi)
    up = np.flatnonzero((phi[:-1] < 0) & (phi[1:] >= 0))
    crossings = (up + phi[up] / (phi[up] - phi[up + 1])) * env.dt  # linear interpolation
    assert len(crossings) >= 5
    measured = np.diff(crossings).mean()
    assert measured == pytest.approx(analytic, rel=0.02)
    assert measured == pytest.approx(analytic, rel=1e-3)  # in fact far tighter


def test_starting_state_and_reward() -> None:
    env = GravityCartPoleEnv()
    starts = np.array([env.reset(seed=s)[0] for s in range(200)])
    for col in (0, 1, 4):
        assert np.all(np.abs(starts[:, col]) <= 0.05) and starts[:, col].std() > 0.02
    np.testing.assert_allclose(starts[:, 2], -1.0)  # hanging down: cos π
    np.testing.assert_allclose(starts[:, 3], 0.0, atol=1e-12)
    obs, reward, *_ = env.step(np.array([1.0], np.float32))
    assert reward == obs[2] and type(reward) is float
    assert obs[1] > 0  # +10 N pushes the cart towards +x


def test_trial_is_200_steps_without_termination() -> None:
    env = GravityCartPoleEnv()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for t in range(200):
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 1).astype(np.float32))
        assert terminated is False and truncated is (t == 199)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(1, np.float32))


def test_gravity_changes_at_reset_only() -> None:
    env = GravityCartPoleEnv(gravity_schedule=[9.81, 3.72, 11.15], max_steps=50)
    refs = {g: reference(g) for g in (9.81, 3.72, 11.15)}
    assert not np.allclose(refs[9.81], refs[3.72])
    expected = [9.81, 3.72, 11.15, 9.81, 3.72]  # cycled
    for trial, g in enumerate(expected):
        _, info = env.reset(seed=0 if trial == 0 else None)
        assert info["trial"] == trial and info["gravity"] == g
        assert env.model.opt.gravity.tolist() == [0.0, 0.0, -g]
        np.testing.assert_array_equal(one_step_from_fixed_state(env), refs[g])
        for _ in range(40):  # mid-trial: gravity and dynamics stay those of this trial
            assert env.step(np.zeros(1, np.float32))[4]["gravity"] == g
        np.testing.assert_array_equal(one_step_from_fixed_state(env), refs[g])
    env.set_gravity(9.81)  # ... unless asked
    np.testing.assert_array_equal(one_step_from_fixed_state(env), refs[9.81])
    _, info = env.reset()  # the schedule applies again at the next trial: 5 % 3 → 11.15
    assert info["trial"] == 5 and info["gravity"] == env.gravity == 11.15


def test_schedule_modes_and_options() -> None:
    hold = GravityCartPoleEnv(gravity_schedule=[9.81, 3.72], schedule_mode="hold")
    cycle = GravityCartPoleEnv(gravity_schedule=[9.81, 3.72], schedule_mode="cycle")
    assert [hold.scheduled_gravity(k) for k in range(4)] == [9.81, 3.72, 3.72, 3.72]
    assert [cycle.scheduled_gravity(k) for k in range(4)] == [9.81, 3.72, 9.81, 3.72]
    gravities = [hold.reset(seed=1 if k == 0 else None)[1]["gravity"] for k in range(4)]
    assert gravities == [9.81, 3.72, 3.72, 3.72]
    _, info = hold.reset(options={"gravity": 24.79})  # Jupiter for this trial only
    assert info["gravity"] == 24.79 and hold.model.opt.gravity[2] == -24.79
    np.testing.assert_array_equal(one_step_from_fixed_state(hold), reference(24.79))
    assert hold.reset()[1] == {"gravity": 3.72, "trial": 5, "context_changed": False}
    assert hold.reset(seed=3)[1]["trial"] == 0  # a seeded reset restarts the schedule
    assert hold.reset(options={"trial": 7})[1]["trial"] == 7


def test_episodic_schedule_announces_changes() -> None:
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0").unwrapped
    assert env.gravity_schedule == EPISODIC_SCHEDULE and len(EPISODIC_SCHEDULE) == 90
    infos = [env.reset(seed=0 if k == 0 else None)[1] for k in range(95)]
    gravities = [info["gravity"] for info in infos]
    assert gravities[:90] == [g for g in (9.81, 11.15, 3.72, 11.15, 3.72, 9.81) for _ in range(15)]
    assert gravities[90:] == [9.81] * 5  # held at the last
    changed = [k for k, info in enumerate(infos) if info["context_changed"]]
    assert changed == [15, 30, 45, 60, 75]
    assert [info["trial"] for info in infos] == list(range(95))
    env.reset(options={"trial": 15})
    assert env.step(np.zeros(1, np.float32))[4]["context_changed"] is True  # whole trial


def test_continual_schedule_changes_unannounced() -> None:
    env = gym.make("bam_rl/GravityCartPoleContinual-v0").unwrapped
    assert env.gravity_schedule == CONTINUAL_SCHEDULE and len(CONTINUAL_SCHEDULE) == 60
    infos = [env.reset(seed=0 if k == 0 else None)[1] for k in range(60)]
    gravities = np.array([info["gravity"] for info in infos])
    assert np.flatnonzero(np.diff(gravities)).tolist() == [14, 29, 44]  # 3 changes
    assert set(gravities.tolist()) == {9.81, 3.72, 11.15}
    assert not any(info["context_changed"] for info in infos)


def test_plain_env_is_constant_earth_gravity() -> None:
    env = gym.make("bam_rl/GravityCartPole-v0").unwrapped
    assert {env.reset()[1]["gravity"] for _ in range(5)} == {9.81}


def test_bang_bang_actuation_uses_full_force() -> None:
    env = GravityCartPoleEnv(actuation="bang_bang")
    env.reset(seed=0)
    for action, full in ((0.3, 1.0), (-0.01, -1.0), (0.0, 0.0)):
        np.testing.assert_array_equal(one_step_from_fixed_state(env, action), reference(9.81, full))


def _render_or_skip(env: gym.Env) -> np.ndarray:
    try:
        return env.render()
    except Exception as exc:  # no GL backend: MUJOCO_GL unset/unusable on this machine
        backend = os.environ.get("MUJOCO_GL")
        pytest.skip(f"no OpenGL backend for MuJoCo (MUJOCO_GL={backend}): {exc}")


def test_rgb_array_frame_is_not_blank() -> None:
    env = gym.make("bam_rl/GravityCartPole-v0", render_mode="rgb_array", width=160, height=120)
    env.reset(seed=0)
    frame = _render_or_skip(env)
    assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
    assert frame.std() > 5 and len(np.unique(frame.reshape(-1, 3), axis=0)) > 10
    env.unwrapped.set_state(np.array([0.0, 0.0]), np.zeros(2))  # pole up
    assert not np.array_equal(env.render(), frame)
    env.close()


@pytest.mark.skipif(
    not os.environ.get("DISPLAY") or os.environ.get("MUJOCO_GL", "glfw") != "glfw",
    reason="human rendering needs a display and MUJOCO_GL=glfw (conftest sets egl by default)",
)
def test_human_render_mode() -> None:  # pragma: no cover - needs a display
    env = gym.make("bam_rl/GravityCartPole-v0", render_mode="human")
    env.reset(seed=0)
    env.step(np.zeros(1, np.float32))
    env.close()


ENTRY = r"gravity_schedule entries must be a finite number > 0"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gravity_schedule": []}, r"gravity_schedule must be a non-empty sequence"),
        ({"gravity_schedule": 9.81}, r"gravity_schedule must be a non-empty sequence"),
        ({"gravity_schedule": "9.81"}, r"gravity_schedule must be a non-empty sequence"),
        ({"gravity_schedule": [9.81, 0.0]}, ENTRY),
        ({"gravity_schedule": [-9.81]}, ENTRY),
        ({"gravity_schedule": [np.nan]}, ENTRY),
        ({"gravity_schedule": [[9.81]]}, ENTRY),
        ({"schedule_mode": "loop"}, r"schedule_mode must be one of \('cycle', 'hold'\)"),
        ({"actuation": "pwm"}, r"actuation must be one of \('continuous', 'bang_bang'\)"),
        ({"announce_changes": "yes"}, r"announce_changes must be a bool"),
        ({"max_steps": 0}, r"max_steps must be a positive int"),
        ({"reset_noise_scale": -0.05}, r"reset_noise_scale must be a finite number >= 0"),
        ({"render_mode": "ansi"}, r"render_mode must be None or one of"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        GravityCartPoleEnv(**kwargs)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"gravity": 0.0}, r"options\['gravity'\] must be a finite number > 0"),
        ({"gravity": -3.72}, r"options\['gravity'\] must be a finite number > 0"),
        ({"gravity": float("inf")}, r"options\['gravity'\] must be a finite number > 0"),
        ({"trial": -1}, r"options\['trial'\] must be an int >= 0"),
        ({"gravty": 9.81}, r"unknown reset options \['gravty'\]"),
        (["gravity"], r"options must be a dict or None"),
    ],
)
def test_bad_reset_options(options: dict, match: str) -> None:
    env = GravityCartPoleEnv()
    with pytest.raises(ValueError, match=match):
        env.reset(options=options)
    with pytest.raises(ValueError, match="gravity must be a finite number > 0"):
        env.set_gravity(0.0)


@pytest.mark.parametrize(
    "action", [np.array([1.01], np.float32), np.array([-2.0], np.float32), *MALFORMED_BOX_ACTIONS]
)
def test_bad_actions(action: object) -> None:
    assert_refuses_action(GravityCartPoleEnv(), action, r"action .*\[-1, 1\]")


_RENDER_TWICE = """
import gymnasium as gym, bam_rl
env = gym.make("bam_rl/GravityCartPole-v0", render_mode="rgb_array", width=64, height=48)
env.reset(seed=0)
for attempt in range(2):
    try:
        frame = env.render()
        print("frame", frame.shape)
    except RuntimeError as error:
        print("error", str(error).splitlines()[0][:60])
env.close()
"""


def _render_twice(**environment: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    env.pop("PYOPENGL_PLATFORM", None)
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-c", _RENDER_TWICE], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(ctypes.util.find_library("EGL") is None, reason="needs EGL")
def test_headless_rendering_chooses_egl_without_mujoco_gl():
    """Issue 27: with MUJOCO_GL and DISPLAY unset, render() raised FatalError, then aborted."""
    result = _render_twice()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["frame (48, 64, 3)", "frame (48, 64, 3)"]


def test_an_impossible_platform_is_one_clear_error_never_an_abort():
    result = _render_twice(MUJOCO_GL="glfw")  # GLFW without a display cannot work
    assert result.returncode == 0, result.stderr  # not 134 (abort)
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(
        line.startswith("error cannot render the cart-pole") for line in lines
    )
