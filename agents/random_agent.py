"""A uniformly random agent: the baseline every environment supports."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .base import BaseAgent, Transition

__all__ = ["RandomAgent"]


class RandomAgent(BaseAgent):
    """Acts uniformly at random in a ``Discrete`` or ``Box`` action space (a baseline).

    ``Box`` dimensions with infinite bounds are drawn from a standard normal (shifted to the
    finite bound, if one is finite). The agent keeps only numbers and its generator, so it
    saves and loads like every :class:`~bam_rl.agents.base.BaseAgent`.

    Args:
        action_space: The environment's action space (``Discrete`` or ``Box``).
        seed: Seed of the agent's generator.

    Raises:
        ValueError: For other kinds of action space.
    """

    def __init__(self, action_space: gym.Space, seed: int | None = None):
        super().__init__(seed)
        if isinstance(action_space, gym.spaces.Discrete):
            self.kind = "discrete"
            self.n = int(action_space.n)
            self.start = int(action_space.start)
        elif isinstance(action_space, gym.spaces.Box):
            self.kind = "box"
            self.low = np.asarray(action_space.low, dtype=np.float64)
            self.high = np.asarray(action_space.high, dtype=np.float64)
            self.dtype = np.dtype(action_space.dtype).name
        else:
            raise ValueError(
                "RandomAgent supports Discrete and Box action spaces, got "
                f"{type(action_space).__name__}"
            )

    def act(self, observation: Any) -> Any:
        """Returns a uniformly random action (an ``np.int64`` arm or a ``Box`` array)."""
        if self.kind == "discrete":
            return np.int64(self.start + self.rng.integers(self.n))
        low, high = self.low, self.high
        bounded = np.isfinite(low) & np.isfinite(high)
        action = self.rng.standard_normal(low.shape)
        action = np.where(np.isfinite(low), low + np.abs(action), action)
        action = np.where(~np.isfinite(low) & np.isfinite(high), high - np.abs(action), action)
        uniform = self.rng.uniform(np.where(bounded, low, 0.0), np.where(bounded, high, 1.0))
        action = np.where(bounded, uniform, action)
        return np.clip(action, low, high).astype(self.dtype)

    def _check_next_observation(self, observation: Any) -> Any:
        return observation  # any observation space: the agent never reads it

    def _observe(self, step: Transition) -> None:
        """Learns nothing (the transition's reward was still checked: a finite number)."""
