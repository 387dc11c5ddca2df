"""Wrapped environments follow the conventions: both env checkers, vector envs, SB3's
``make_vec_env``, and the same seed giving the same bytes in another process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from wrappers_testutils import MUJOCO

import bam_rl  # noqa: F401  (registers bam_rl/GravityCartPole-v0)
from bam_rl.schedules import cycle, markov
from bam_rl.wrappers import NonStationary

CLASSIC = {
    "CartPole-v1": "length",
    "Pendulum-v1": "g",
    "MountainCar-v0": "gravity",
    "MountainCarContinuous-v0": "power",
    "Acrobot-v1": "LINK_MASS_2",
}


def _wrapped(env_id: str, observe_context: bool = False) -> gym.Env:
    env = gym.make(env_id)
    if env_id in CLASSIC:
        name = CLASSIC[env_id]
        base = float(getattr(env.unwrapped, name))
        changes = {name: markov([base, base * 1.5], 0.3, unit="step")}
    else:
        changes = {
            "mass_scale": markov([1.0, 1.3], 0.3, unit="step"),
            "friction_scale": cycle([1.0, 0.5]),
            "gravity": cycle([9.81, 3.72]),
        }
    return NonStationary(env, changes, observe_context=observe_context)


@pytest.mark.parametrize("observe_context", [False, True])
@pytest.mark.parametrize("env_id", [*MUJOCO, *CLASSIC])
def test_gymnasium_and_sb3_check_env_pass(env_id, observe_context):
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # advice (action scaling, wrapped env), not failures
        check_env(_wrapped(env_id, observe_context), skip_render_check=True)
    # SB3's checker where the extra is installed (CI's extras stage runs this file)
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb3.check_env(_wrapped(env_id, observe_context), warn=False)


def _make(changes):
    return lambda env: NonStationary(env, changes)


CHANGES = {
    "gravity": markov([9.81, 3.72, 11.15], 0.1, unit="step"),
    "mass_scale": cycle([1.0, 1.5]),
}


def _vector_run(vector_env, steps=150):
    vector_env.reset(seed=11)
    vector_env.action_space.seed(0)
    contexts, observations = [], []
    for _ in range(steps):
        observation, _, _, _, info = vector_env.step(vector_env.action_space.sample())
        observations.append(observation.copy())
        contexts.append(np.stack([info["context"]["gravity"], info["context"]["mass_scale"]]))
    vector_env.close()
    return np.array(contexts), np.array(observations)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_runs_per_environment_schedules_reproducibly(mode):
    make = lambda: gym.make_vec(  # noqa: E731
        "InvertedPendulum-v5", num_envs=2, vectorization_mode=mode, wrappers=[_make(CHANGES)]
    )
    contexts, observations = _vector_run(make())
    again, observations_again = _vector_run(make())
    np.testing.assert_array_equal(contexts, again)
    np.testing.assert_array_equal(observations, observations_again)
    gravity = contexts[:, 0, :]
    assert not np.array_equal(gravity[:, 0], gravity[:, 1])  # each env its own stream
    assert len(np.unique(gravity)) == 3
    # the pendulum falls within ~30 steps: episodes ended and the autoreset kept the
    # counters, so the per-episode mass scale moved on
    assert set(np.unique(contexts[:, 1, :])) == {1.0, 1.5}


def test_autoreset_keeps_the_counters_and_matches_a_single_env():
    vector = gym.make_vec("InvertedPendulum-v5", num_envs=1, wrappers=[_make(CHANGES)])
    contexts, _ = _vector_run(vector, steps=120)
    single = NonStationary(gym.make("InvertedPendulum-v5"), CHANGES)
    single.reset(seed=11)
    expected, autoreset = [], False
    single.action_space.seed(0)
    for _ in range(120):
        action = single.action_space.sample()
        if autoreset:  # the vector env's next-step autoreset: a reset instead of a step
            single.reset()
            autoreset = False
        else:
            _, _, terminated, truncated, _ = single.step(action)
            autoreset = terminated or truncated
        expected.append(list(single.get_wrapper_attr("context").values()))
    assert single.get_wrapper_attr("counters")["episode"] > 1
    np.testing.assert_array_equal(contexts[:, :, 0], np.array(expected))


def test_sb3_make_vec_env_runs_with_a_schedule():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env

    def run():
        vec = make_vec_env(
            "InvertedPendulum-v5",
            n_envs=2,
            seed=4,
            wrapper_class=NonStationary,
            wrapper_kwargs={"changes": CHANGES},
        )
        vec.reset()
        gravities = []
        for _ in range(100):
            _, _, _, infos = vec.step(np.zeros((2, 1), dtype=np.float32))
            gravities.append([info["context"]["gravity"] for info in infos])
        contexts = vec.env_method("get_wrapper_attr", "counters")
        vec.close()
        return np.array(gravities), contexts

    a, counters = run()
    b, _ = run()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:, 0], a[:, 1])
    assert all(c["step"] > 0 and c["episode"] >= 1 for c in counters)


SCRIPT = """
import hashlib, numpy as np, gymnasium as gym
from bam_rl.schedules import markov, random_walk
from bam_rl.wrappers import NonStationary
env = NonStationary(gym.make("HalfCheetah-v5"), {
    "gravity": markov([9.81, 3.72, 11.15], 0.05, unit="step"),
    "friction:floor": random_walk(0.4, 0.05, 0.1, 1.0, unit="step"),
    "mass:torso": markov([6.0, 9.0], 0.5)})
digest = hashlib.sha256()
env.reset(seed=2024)
rng = np.random.default_rng(0)
for t in range(300):
    obs, reward, term, trunc, info = env.step(rng.uniform(-1, 1, 6))
    digest.update(obs.tobytes()); digest.update(np.float64(reward).tobytes())
    digest.update(np.array(list(info["context"].values())).tobytes())
    if t % 100 == 99:
        env.reset()
print(digest.hexdigest())
"""


def test_two_processes_give_byte_identical_schedules_and_trajectories():
    environment = {**os.environ, "PYTHONHASHSEED": "random"}
    digests = []
    for hash_seed in ("1", "2"):
        environment["PYTHONHASHSEED"] = hash_seed
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        digests.append(out.stdout.strip())
    assert digests[0] == digests[1] and len(digests[0]) == 64
    assert hashlib.sha256(b"").hexdigest() != digests[0]
