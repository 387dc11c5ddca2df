"""Fixtures for the environment tests.

Rendering uses EGL on the headless development machine (OSMesa and GLFW need extra system
packages); set here, in the tests, never in library code, and only if the user did not choose.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym
import pytest

from bam_rl import envs  # noqa: F401  (registers the environments)


@pytest.fixture
def make_env() -> Iterator[Callable[..., gym.Env]]:
    """``gym.make`` that closes every environment it made at teardown."""
    made: list[gym.Env] = []

    def _make(env_id: str, **kwargs: object) -> gym.Env:
        env = gym.make(env_id, **kwargs)
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()
