"""Piecewise-stationary bandit given by a means table and breakpoints."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_memory, finite_float, positive_int
from .switching_bandit import _BlockBandit, check_block_memory

__all__ = ["DEFAULT_BREAKPOINTS", "DEFAULT_MEANS", "PiecewiseBanditEnv"]

#: Default means (4 segments × 3 arms); the best arm is 0, 2, 1, 0 in turn.
DEFAULT_MEANS: tuple[tuple[float, ...], ...] = (
    (0.9, 0.5, 0.1),
    (0.1, 0.5, 0.9),
    (0.5, 0.9, 0.1),
    (0.9, 0.1, 0.5),
)
#: Default breakpoints: segments 2, 3, 4 begin at steps 2500, 5000, 7500 (of 10 000).
DEFAULT_BREAKPOINTS: tuple[int, ...] = (2500, 5000, 7500)

_REWARDS = ("bernoulli", "gaussian")


class PiecewiseBanditEnv(_BlockBandit):
    r"""Bandit whose arm means are constant on segments and jump at given breakpoints.

    ## Description
    The form in which published piecewise-stationary (abruptly changing) bandit benchmarks are
    given: a table `means` of shape (segments, arms) and `breakpoints`, the steps at which
    segments 2, 3, ... begin. At 0-based step $t$ the arm means are `means[s(t)]` with
    $s(t)$ = the number of breakpoints $\le t$; i.e. step `breakpoints[j]` is the first step of
    segment `j + 2` (1-based). Breakpoints at or beyond `max_steps` are never reached.

    ## Action Space
    `Discrete(n_arms)` with `n_arms = means.shape[1]`; anything else raises `ValueError`.

    ## Observation Space
    `Discrete(1)`: always `0`.

    ## Rewards
    A Python `float`: with `reward="bernoulli"` (default) a draw of Bernoulli($\mu_a(t)$),
    `0.0` or `1.0` (the means must lie in [0, 1]); with `reward="gaussian"`
    $\mu_a(t) + $ `noise_std` $\cdot N(0, 1)$.

    ## Starting State
    $t = 0$, segment 1.

    ## Episode End
    No termination; truncation after `max_steps` pulls (default 10 000).

    ## Arguments
    ```python
    import gymnasium as gym
    import bam_rl  # registers the environments
    env = gym.make(
        "bam_rl/PiecewiseBandit-v0",
        means=[[0.2, 0.8], [0.8, 0.2]], breakpoints=[500], reward="gaussian", noise_std=0.1,
        max_steps=1000,
    )
    ```

    | Parameter     | Type               | Default                 | Description                   |
    |---------------|--------------------|-------------------------|-------------------------------|
    | `means`       | (S, K) array-like  | `DEFAULT_MEANS` (4 × 3) | arm means per segment         |
    | `breakpoints` | sequence of S-1 int| `(2500, 5000, 7500)`    | first step of segments 2..S   |
    | `reward`      | str                | `"bernoulli"`           | `"bernoulli"` or `"gaussian"` |
    | `noise_std`   | float              | 0.25                    | Gaussian noise std (>= 0)     |
    | `max_steps`   | int                | 10_000                  | horizon (>= 1)                |

    `info` after `step`: `means`, `optimal_action`, `regret` (exactly `0.0` for an optimal
    arm) and `t`, as in `SwitchingBandit`; after `reset`: `means`, `optimal_action`, `t`.

    ## Non-stationarity
    Deterministic abrupt changes at `breakpoints`; reward noise from `self.np_random`.

    ## Version History
    * v0: Initial version.
    """

    def __init__(
        self,
        means: Any = DEFAULT_MEANS,
        breakpoints: Any = DEFAULT_BREAKPOINTS,
        reward: str = "bernoulli",
        noise_std: float = 0.25,
        max_steps: int = 10_000,
        render_mode: str | None = None,
    ) -> None:
        """Create the bandit.

        Args:
            means: Finite (segments, arms) table, at least 1 × 1; in [0, 1] for Bernoulli
                rewards.
            breakpoints: ``segments - 1`` strictly increasing positive ints.
            reward: ``"bernoulli"`` or ``"gaussian"``.
            noise_std: Standard deviation of Gaussian rewards, >= 0 (unused for Bernoulli).
            max_steps: Horizon (pulls per episode), a positive int.
            render_mode: Must be ``None``; the environment has no renderer.

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        if reward not in _REWARDS:
            raise ValueError(f"reward must be one of {_REWARDS}, got {reward!r}")
        noise_std = finite_float("noise_std", noise_std)
        if noise_std < 0.0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
        max_steps = positive_int("max_steps", max_steps)
        table = _means_table(means)
        check_block_memory(
            table.shape[1],
            max_steps,
            f"means with {table.shape[1]} arms (columns) and max_steps = {max_steps}",
        )
        if reward == "bernoulli" and (table.min() < 0.0 or table.max() > 1.0):
            raise ValueError("means must lie in [0, 1] for reward='bernoulli'")
        self.reward = reward
        self.means = table
        self.breakpoints = _breakpoints(breakpoints, table.shape[0])
        self._init_bandit(table.shape[1], max_steps, reward, noise_std, render_mode)

    def _means_block(self, start: int, stop: int) -> np.ndarray:
        segment = np.searchsorted(self.breakpoints, np.arange(start, stop), side="right")
        return self.means[segment]


def _means_table(means: Any) -> np.ndarray:
    if isinstance(means, np.ndarray):  # a view (e.g. broadcast) may be far smaller than a copy
        check_memory(f"means of shape {means.shape}", 16 * means.size)
    try:
        table = np.array(means, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"means must be a rectangular (segments, arms) table of numbers, got {means!r}"
        ) from exc
    if table.ndim != 2 or table.shape[0] < 1 or table.shape[1] < 1:
        raise ValueError(
            f"means must be a 2-D (segments, arms) table with at least one segment and one arm, "
            f"got shape {table.shape}"
        )
    if not np.isfinite(table).all():
        raise ValueError("means must be finite (no NaN or inf)")
    table.flags.writeable = False
    return table


def _breakpoints(breakpoints: Any, n_segments: int) -> np.ndarray:
    try:
        items = list(breakpoints)
    except TypeError as exc:
        raise ValueError(
            f"breakpoints must be a sequence of {n_segments - 1} ints, got {breakpoints!r}"
        ) from exc
    if len(items) != n_segments - 1:
        raise ValueError(
            f"breakpoints must have len(means) - 1 = {n_segments - 1} entries (the first steps "
            f"of segments 2..{n_segments}), got {len(items)}"
        )
    for b in items:
        if isinstance(b, bool) or not isinstance(b, int | np.integer) or b <= 0:
            raise ValueError(f"breakpoints must be positive ints (>= 1), got {b!r}")
    out = np.array(items, dtype=np.int64)
    if np.any(np.diff(out) <= 0):
        raise ValueError(f"breakpoints must be strictly increasing, got {items}")
    out.flags.writeable = False
    return out
