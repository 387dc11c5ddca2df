"""A uniformly random agent: the baseline every environment supports."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from bam_rl.checks import check_int

from .base import BaseAgent, Transition

__all__ = ["RandomAgent"]

_INT64 = np.iinfo(np.int64)


def _dtype_range(dtype: np.dtype) -> tuple[float, float]:
    """The smallest and largest numbers of a numeric ``dtype``."""
    if dtype.kind in "iu":
        return float(np.iinfo(dtype).min), float(np.iinfo(dtype).max)
    if dtype.kind == "b":
        return 0.0, 1.0
    return -float(np.finfo(dtype).max), float(np.finfo(dtype).max)


def _bounds(name: str, value: Any) -> np.ndarray:
    """``value`` as float64 bounds of a Box (real numbers, ±inf allowed, NaN not)."""
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be an array of real numbers, got {array.dtype}")
    array = array.astype(np.float64)
    if np.isnan(array).any():
        raise ValueError(f"{name} must not hold NaN")
    return array


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
        self._check_space()

    def _check_space(self) -> None:
        """The action space as the agent keeps it (``kind``, then ``n``/``start`` or
        ``low``/``high``/``dtype``) is one it can draw from: checked for the space given to
        the constructor and for a restored agent alike (``ValueError`` naming the field)."""
        if self.kind == "discrete":
            self.n = check_int("n", self.n)
            self.start = check_int("start", self.start, minimum=None)
            if not _INT64.min <= self.start <= _INT64.max - (self.n - 1):
                raise ValueError(
                    f"start and n: the actions start .. start + n - 1 must be int64 numbers, "
                    f"got start={self.start}, n={self.n}"
                )
        elif self.kind == "box":
            try:
                dtype = np.dtype(self.dtype)
            except (TypeError, ValueError):
                dtype = None
            if not isinstance(self.dtype, str) or dtype is None or dtype.kind not in "biuf":
                raise ValueError(f"dtype must name a numeric numpy dtype, got {self.dtype!r}")
            self.low, self.high = _bounds("low", self.low), _bounds("high", self.high)
            if self.low.shape != self.high.shape:
                raise ValueError(
                    f"low and high must have one shape, got {self.low.shape} and {self.high.shape}"
                )
            if not (self.low <= self.high).all():
                raise ValueError("low must be <= high in every dimension")
            lowest, largest = _dtype_range(dtype)
            for name, bound in (("low", self.low), ("high", self.high)):
                finite = bound[np.isfinite(bound)]
                if ((finite < lowest) | (finite > largest)).any():
                    raise ValueError(
                        f"{name}: finite bounds must lie in [{lowest}, {largest}], the range "
                        f"of dtype {dtype.name}"
                    )
            bounded = np.isfinite(self.low) & np.isfinite(self.high)
            with np.errstate(over="ignore"):
                width = np.where(bounded, self.high - self.low, 0.0)
            if not np.isfinite(width).all():
                raise ValueError(
                    "low and high: a bounded dimension's width high - low must be a finite "
                    "float64 (the uniform draw needs it)"
                )
        else:
            raise ValueError(f"kind must be 'discrete' or 'box', got {self.kind!r}")

    def _check_restored(self) -> None:
        """A restored agent's action space is checked as the constructor's is, then its seed
        and generator (:class:`~bam_rl.agents.base.BaseAgent`)."""
        kind = getattr(self, "kind", None)
        fields = {"discrete": ("n", "start"), "box": ("low", "high", "dtype")}
        for name in fields.get(kind, ()) if isinstance(kind, str) else ():
            if not hasattr(self, name):
                raise ValueError(f"the file has no {name} of the agent's {kind} action space")
        if kind is None:
            raise ValueError("the file has no kind of the agent's action space")
        self._check_space()
        super()._check_restored()

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
