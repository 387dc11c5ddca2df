"""Shared constants and helpers of the environment tests (imported by the test modules)."""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from bam_rl import envs

BANDIT_IDS = (
    "bam_rl/SwitchingBandit-v0",
    "bam_rl/SwitchingBandit50-v0",
    "bam_rl/PiecewiseBandit-v0",
)
CARTPOLE_IDS = (
    "bam_rl/GravityCartPole-v0",
    "bam_rl/GravityCartPoleEpisodic-v0",
    "bam_rl/GravityCartPoleContinual-v0",
)
ALL_IDS = ("bam_rl/BinomialStream-v0", *BANDIT_IDS, *CARTPOLE_IDS)

assert set(ALL_IDS) == set(envs.ENV_IDS)

# Warnings that the environment checkers may emit and that we accept, with the reason:
ACCEPTED_WARNINGS: dict[str, str] = {
    # Cart-pole observation: cart position and both velocities are physically unbounded (the
    # rail is unlimited and nothing terminates), so their Box bounds are honestly ±inf, as in
    # Gymnasium's own MuJoCo environments; cos/sin are bounded by ±1.
    r".*A Box observation space (minimum|maximum) value is -?infinity": "unbounded state",
    # SB3 recommends Box[-1, 1] actions; the stream's action is a probability estimate, whose
    # natural (and specified) space is Box[0, 1], which Gymnasium's checker accepts.
    r"We recommend you to use a symmetric and normalized Box action space": "Box[0, 1] estimate",
}


#: Actions a one-dimensional Box environment refuses whatever its bounds: NaN, two entries, a
#: string, None.
MALFORMED_BOX_ACTIONS = (
    np.array([np.nan], np.float32),
    np.array([0.2, 0.3], np.float32),
    "0.5",
    None,
)


def assert_refuses_action(env: Any, action: Any, match: str) -> None:
    """``env``, reset with seed 0, refuses ``action`` with a ``ValueError`` matching ``match``."""
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(action)


@contextlib.contextmanager
def strict_warnings(*accepted: str) -> Iterator[None]:
    """Turn every warning into an error except those matching the ``accepted`` patterns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for pattern in accepted:
            warnings.filterwarnings("ignore", message=pattern)
        yield


def rollout(env: Any, seed: int, n_steps: int) -> list[tuple[Any, ...]]:
    """Reset with ``seed`` and take ``n_steps`` seeded random actions, resetting (unseeded) at
    episode ends; return every ``(obs, reward, terminated, truncated, info)`` / reset record."""
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    records: list[tuple[Any, ...]] = [("reset", copy.deepcopy(obs), copy.deepcopy(info))]
    for _ in range(n_steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        records.append(("step", copy.deepcopy(obs), reward, terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            records.append(("reset", copy.deepcopy(obs), copy.deepcopy(info)))
    return records
