"""Switching-arm Gaussian bandit of the BAM paper (§4.3, App. D.3) and a shared bandit core."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from bam_rl.checks import (
    check_arm,
    check_memory,
    finite_float,
    gaussian_reward_bounds,
    positive_int,
)

from . import _canvas

__all__ = ["SwitchingBanditEnv"]

_BLOCK = 4096  # arm means and reward noise are materialised in blocks of this many steps
# bytes per arm and step of a materialised block (float64 means, their Python-float list and
# the temporaries that build them: measured 48 at its peak)
_BLOCK_BYTES = 56


def check_block_memory(n_arms: int, max_steps: int, what: str, per_arm: float = 0.0) -> None:
    """``ValueError`` (``bam_rl.checks.check_memory``) unless a block of arm means, plus
    ``per_arm`` bytes for every arm, fits the memory budget; ``what`` names the argument."""
    block = min(_BLOCK, max_steps)
    check_memory(what, n_arms * (_BLOCK_BYTES * block + per_arm + 512))


class _BlockBandit(gym.Env[np.int64, np.int64]):
    """Shared core of the non-stationary bandits: a means table produced in blocks of steps.

    Subclasses call :meth:`_init_bandit` and implement :meth:`_means_block`. The step loop only
    indexes precomputed Python lists (means, per-step best mean and best arm, noise draws).
    With ``render_mode="rgb_array"`` it also counts the pulls of each arm, which
    :meth:`render` draws.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def _init_bandit(
        self,
        n_arms: int,
        max_steps: int,
        reward: str,
        noise_std: float,
        render_mode: Any,
        value_bounds: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.render_mode = render_mode
        # the means axis of the frame: from min(0, lowest mean) to the highest mean
        low, high = min(0.0, value_bounds[0]), value_bounds[1]
        self._display_range = (low, high if high > low else low + 1.0)
        self._pulls: list[int] | None = None if render_mode is None else [0] * n_arms
        self._last_arm = -1
        self.n_arms = n_arms
        self.max_steps = max_steps
        self.noise_std = noise_std
        self._bernoulli = reward == "bernoulli"
        self.observation_space = spaces.Discrete(1)
        self.action_space = spaces.Discrete(n_arms)
        self._block0 = self._make_block(0)
        self._set_block(self._block0)
        self._noise: list[float] = []
        self._t = 0

    def _means_block(self, start: int, stop: int) -> np.ndarray:
        """Return the ``(stop - start, n_arms)`` float64 table of arm means for those steps."""
        raise NotImplementedError

    def means_table(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Arm means (without noise) for steps ``start <= t < stop``, shape ``(steps, n_arms)``.

        Args:
            start: First step (0-based), ``0 <= start <= stop``.
            stop: One past the last step, at most ``max_steps`` (default ``max_steps``).

        Returns:
            A new float64 array; handy for plotting the hidden arm values.
        """
        stop = self.max_steps if stop is None else stop
        if not 0 <= start <= stop <= self.max_steps:
            raise ValueError(
                f"need 0 <= start <= stop <= max_steps={self.max_steps}, got {start=}, {stop=}"
            )
        return self._means_block(int(start), int(stop))

    def noise_stream(self) -> np.ndarray:
        """The reward noise of every step of the episode just reset, in the order
        :meth:`step` draws it: uniforms in [0, 1) for Bernoulli rewards (the reward is
        ``1.0 if noise[t] < mean else 0.0``), standard normals for Gaussian ones (``mean +
        noise_std * noise[t]``).

        Drawn from a copy of :attr:`np_random`, so the episode is unchanged: a harness can
        replay the rewards of any sequence of pulls without stepping (common random numbers
        across methods, as the piecewise benchmark does). Unlike ``step``, which draws 4096
        steps at a time, it holds all ``max_steps`` draws (8 bytes each) at once.

        Raises:
            RuntimeError: If the episode has already begun (``step`` since ``reset``).
        """
        if self._t != 0:
            raise RuntimeError("noise_stream() must be called right after reset()")
        generator = copy.deepcopy(self.np_random)
        noise = np.empty(self.max_steps)
        for start in range(0, self.max_steps, _BLOCK):  # step() draws block by block
            n = min(_BLOCK, self.max_steps - start)
            if self._bernoulli:
                noise[start : start + n] = generator.random(n)
            else:
                noise[start : start + n] = generator.standard_normal(n)
        return noise

    def _make_block(self, start: int) -> tuple[int, np.ndarray, list, list[float], list[int]]:
        means = self._means_block(start, min(start + _BLOCK, self.max_steps))
        means.flags.writeable = False
        return start, means, means.tolist(), means.max(axis=1).tolist(), means.argmax(1).tolist()

    def _set_block(self, block: tuple[int, np.ndarray, list, list[float], list[int]]) -> None:
        self._bstart, self._bmeans, self._bmeans_list, self._bmax, self._barg = block

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.int64, dict[str, Any]]:
        """Restart at ``t = 0`` (the arm configuration is unchanged).

        Args:
            seed: Seed for ``self.np_random`` (the reward noise).
            options: Unused; accepted for API compatibility.

        Returns:
            Observation ``0`` and ``info`` with ``means`` and ``optimal_action`` at ``t = 0``
            (the upcoming pull) and ``t``.
        """
        super().reset(seed=seed)
        self._t = 0
        self._set_block(self._block0)
        if self._pulls is not None:
            self._pulls = [0] * self.n_arms
            self._last_arm = -1
        info = {"means": self._bmeans[0].copy(), "optimal_action": self._barg[0], "t": 0}
        return np.int64(0), info

    def step(self, action: Any) -> tuple[np.int64, float, bool, bool, dict[str, Any]]:
        """Pull an arm.

        Args:
            action: The arm, an int in ``[0, n_arms)`` (Python or NumPy integer, or a
                one-element integer array).

        Returns:
            ``(0, reward, False, truncated, info)``; ``info`` holds ``means`` (arm means at this
            step), ``optimal_action``, ``regret`` (best mean minus the pulled arm's mean, exactly
            0.0 for an optimal arm) and ``t`` (this step's 0-based index).

        Raises:
            ValueError: If the action is not an integer arm index in ``[0, n_arms)``.
            RuntimeError: If called after truncation without ``reset``.
        """
        arm = check_arm("action", action, self.n_arms, flat=True)
        t = self._t
        if t >= self.max_steps:
            raise RuntimeError("step() called after the episode was truncated; call reset()")
        i = t - self._bstart
        if i >= _BLOCK:
            self._set_block(self._make_block(t))
            i = 0
        if t % _BLOCK == 0:
            n = min(_BLOCK, self.max_steps - t)
            if self._bernoulli:
                self._noise = self.np_random.random(n).tolist()
            else:
                self._noise = self.np_random.standard_normal(n).tolist()
        mean = self._bmeans_list[i][arm]
        if self._bernoulli:
            reward = 1.0 if self._noise[i] < mean else 0.0
        else:
            reward = mean + self.noise_std * self._noise[i]
        self._t = t + 1
        if self._pulls is not None:
            self._pulls[arm] += 1
            self._last_arm = arm
        info = {
            "means": self._bmeans[i].copy(),
            "optimal_action": self._barg[i],
            "regret": self._bmax[i] - mean,
            "t": t,
        }
        return np.int64(0), reward, False, t + 1 == self.max_steps, info

    def render(self) -> np.ndarray | None:
        """A 240 × 320 RGB frame (``render_mode="rgb_array"``): the arms' means and pulls.

        From the top: a grey progress strip (steps played out of ``max_steps``); a green mark
        over the optimal arm; one bar per arm of its mean at the step last played (at ``t = 0``
        after ``reset``), on an axis from ``min(0, lowest mean)`` to the highest mean the
        bandit can take, the arm pulled last in red and the others in blue; one bar per arm of
        its pulls so far, relative to the most-pulled arm (the last one in red). With more arms
        than pixel columns (304), neighbouring arms share a column.

        Returns:
            The ``(240, 320, 3)`` ``uint8`` frame, or ``None`` (with a warning, as Gymnasium's
            environments do) when the environment was made without a ``render_mode``.
        """
        frame = _canvas.progress_frame(self.render_mode, self._t, self.max_steps)
        if frame is None:
            return None
        row = max(self._t - 1, 0)
        means = self._means_block(row, row + 1)[0]
        low, high = self._display_range
        palette = _canvas.PALETTE
        left, right = 8, _canvas.FRAME_WIDTH - 8
        best = np.zeros(self.n_arms)
        best[np.flatnonzero(means == means.max())] = 1.0
        green = np.broadcast_to(np.array(palette["best"], np.uint8), (self.n_arms, 3))
        _canvas.bars(frame, (7, left, 11, right), best, green)
        colors = np.empty((self.n_arms, 3), dtype=np.uint8)
        colors[:] = palette["mean"]
        if self._last_arm >= 0:
            colors[self._last_arm] = palette["last"]
        _canvas.fill_rect(frame, 12, left, 172, right, palette["panel"])
        _canvas.bars(frame, (12, left, 172, right), (means - low) / (high - low), colors)
        pulls = np.asarray(self._pulls, dtype=np.float64)
        shares = pulls / pulls.max() if pulls.size and pulls.max() > 0 else pulls
        colors[:] = palette["pulls"]
        if self._last_arm >= 0:
            colors[self._last_arm] = palette["last"]
        _canvas.fill_rect(frame, 184, left, 232, right, palette["panel"])
        _canvas.bars(frame, (184, left, 232, right), shares, colors)
        return frame


class SwitchingBanditEnv(_BlockBandit):
    r"""K arms, each switching asynchronously between its own high and low value (paper §4.3).

    ## Description
    The non-stationary bandit of the BAM paper (Nassar et al., ICLR 2022, §4.3 and App. D.3).
    Each arm $k$ has a high value $h_k$ and a low value $l_k$ and at every step flips between
    them independently with probability `switch_prob` (0.016), so the best arm can at any time
    be a previously poor arm. A pull returns the pulled arm's current value plus Gaussian noise
    with standard deviation `noise_std` (0.25).

    The arm configuration, i.e. the values and the switch times over the whole horizon, is a
    deterministic function of `config_seed` (drawn with its own
    `np.random.default_rng(config_seed)`): the two values of each arm are drawn uniformly from
    `value_range` (the larger is the high value), each arm starts high or low with probability
    1/2, and the gaps between switches are Geometric(`switch_prob`). The reward noise comes from
    `self.np_random` (the `reset` seed). The paper averages 5 configurations × 5 seeds.

    ## Action Space
    `Discrete(n_arms)`: the arm to pull. Anything else (floats, out-of-range ints, NaN) raises
    `ValueError`.

    ## Observation Space
    `Discrete(1)`: always `0` (the bandit has no state).

    ## Rewards
    $\mu_{a_t}(t) + \sigma \varepsilon_t$, $\varepsilon_t \sim N(0, 1)$, a Python `float`.

    ## Starting State
    $t = 0$; every `reset` replays the same arm configuration with fresh noise.

    ## Episode End
    No termination; truncation after `max_steps` pulls (default 10 000).

    ## Arguments
    ```python
    import gymnasium as gym
    import bam_rl  # registers the environments
    env = gym.make("bam_rl/SwitchingBandit-v0", n_arms=10, config_seed=3)
    env = gym.make("bam_rl/SwitchingBandit50-v0")  # 50 arms
    ```

    | Parameter     | Type          | Default    | Description                                     |
    |---------------|---------------|------------|-------------------------------------------------|
    | `n_arms`      | int           | 10         | number of arms (>= 1)                           |
    | `switch_prob` | float         | 0.016      | per-step switch probability of each arm, [0, 1] |
    | `noise_std`   | float         | 0.25       | reward noise standard deviation (>= 0)          |
    | `config_seed` | int or None   | 0          | seed of the arm configuration (None: random)    |
    | `max_steps`   | int           | 10_000     | horizon; truncation after this many pulls       |
    | `value_range` | (float,float) | (0.0, 1.0) | interval the arm values are drawn from          |
    | `low_range`   | (float,float) | None       | with `high_range`: separated low/high values    |
    | `high_range`  | (float,float) | None       | interval of the high values (see `low_range`)   |
    | `render_mode` | str or None   | None       | or `"rgb_array"`: arm means and pulls so far    |

    `info` after `step`: `means` (np.ndarray, the arm means at this step), `optimal_action`
    (int, best arm, first on ties), `regret` (float, expected regret of this pull: best mean
    minus the pulled arm's mean, exactly `0.0` for an optimal arm) and `t` (int, 0-based step).
    After `reset`: `means`, `optimal_action` and `t` for the upcoming pull. The hidden means
    are never in the observation. `means_table(start, stop)` returns the noise-free table.

    ## Non-stationarity
    Piecewise-constant arm means with asynchronous switches, expected rate `switch_prob` per
    arm per step; $\mu_k(t) \ne \mu_k(t-1)$ exactly at the switch times of arm $k$.

    ## Version History
    * v0: Initial version.
    """

    def __init__(
        self,
        n_arms: int = 10,
        switch_prob: float = 0.016,
        noise_std: float = 0.25,
        config_seed: int | None = 0,
        max_steps: int = 10_000,
        value_range: tuple[float, float] = (0.0, 1.0),
        low_range: tuple[float, float] | None = None,
        high_range: tuple[float, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        """Create the bandit and draw its arm configuration from ``config_seed``.

        Args:
            n_arms: Number of arms, a positive int.
            switch_prob: Per-step probability that an arm flips, in [0, 1].
            noise_std: Standard deviation of the Gaussian reward noise, >= 0.
            config_seed: Non-negative int fixing the arm values and switch times; ``None``
                draws fresh OS entropy (stored in ``self.config_seed``).
            max_steps: Horizon (pulls per episode), a positive int.
            value_range: ``(low, high)`` finite bounds, ``low <= high``, of the arm values.
            low_range: With ``high_range``, draw each arm's low value from this interval and
                its high value from ``high_range`` instead (separated arms); ``None``
                (default) draws both values from ``value_range``.
            high_range: See ``low_range``; its lower bound must be >= ``low_range``'s upper.
            render_mode: ``None`` or ``"rgb_array"`` (:meth:`render` draws the arm means and
                the pulls so far).

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        n_arms = positive_int("n_arms", n_arms)
        max_steps = positive_int("max_steps", max_steps)
        self.switch_prob = finite_float("switch_prob", switch_prob)
        if not 0.0 <= self.switch_prob <= 1.0:
            raise ValueError(f"switch_prob must be a probability in [0, 1], got {switch_prob!r}")
        noise_std = finite_float("noise_std", noise_std)
        if noise_std < 0.0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
        lo, hi = _interval("value_range", value_range)
        if (low_range is None) != (high_range is None):
            raise ValueError("low_range and high_range must be given together (or neither)")
        separated = low_range is not None
        if separated:
            low_range = _interval("low_range", low_range)
            high_range = _interval("high_range", high_range)
            if high_range[0] < low_range[1]:
                raise ValueError(
                    f"high_range must start at or above the end of low_range, got "
                    f"low_range={low_range!r}, high_range={high_range!r}"
                )
        if separated:
            ends = (*low_range, *high_range)  # type: ignore[misc]
            gaussian_reward_bounds(noise_std, max(abs(v) for v in ends), "low_range/high_range")
        else:
            gaussian_reward_bounds(noise_std, max(abs(lo), abs(hi)), "value_range")
        if config_seed is None:
            config_seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
        elif isinstance(config_seed, bool) or not isinstance(config_seed, int | np.integer):
            raise ValueError(f"config_seed must be a non-negative int or None, got {config_seed!r}")
        elif config_seed < 0:
            raise ValueError(f"config_seed must be a non-negative int or None, got {config_seed!r}")
        self.config_seed = int(config_seed)
        self.value_range = (lo, hi)
        # every arm keeps its switch times (int64, about switch_prob * max_steps of them)
        check_block_memory(
            n_arms,
            max_steps,
            f"n_arms = {n_arms} with max_steps = {max_steps}",
            per_arm=16 * (self.switch_prob * max_steps + 16),
        )

        self.low_range, self.high_range = low_range, high_range
        rng = np.random.default_rng(self.config_seed)
        if low_range is not None and high_range is not None:  # the separated setting
            values = np.column_stack(
                [rng.uniform(*low_range, size=n_arms), rng.uniform(*high_range, size=n_arms)]
            )
        else:
            values = np.sort(rng.uniform(lo, hi, size=(n_arms, 2)), axis=1)
        self.low_values: np.ndarray = values[:, 0].copy()
        self.high_values: np.ndarray = values[:, 1].copy()
        self.initial_high: np.ndarray = rng.random(n_arms) < 0.5
        self.switch_times: list[np.ndarray] = [
            _switch_times(rng, self.switch_prob, max_steps) for _ in range(n_arms)
        ]
        for arr in (self.low_values, self.high_values, self.initial_high, *self.switch_times):
            arr.flags.writeable = False
        self._init_bandit(
            n_arms,
            max_steps,
            "gaussian",
            noise_std,
            render_mode,
            (float(self.low_values.min()), float(self.high_values.max())),
        )

    def _means_block(self, start: int, stop: int) -> np.ndarray:
        steps = np.arange(start, stop)
        high = np.empty((stop - start, self.n_arms), dtype=bool)
        for k, times in enumerate(self.switch_times):
            # number of switches at or before each step; even parity keeps the initial value
            parity = np.searchsorted(times, steps, side="right") & 1
            high[:, k] = self.initial_high[k] ^ parity.astype(bool)
        return np.where(high, self.high_values, self.low_values)


def _switch_times(rng: np.random.Generator, p: float, horizon: int) -> np.ndarray:
    """Steps ``1 <= s < horizon`` at which a Bernoulli(p)-per-step switch process fires."""
    if p == 0.0:
        return np.empty(0, dtype=np.int64)
    chunks = []
    last = 0
    while last < horizon:
        size = max(16, int(1.5 * p * (horizon - last)) + 16)
        times = last + np.cumsum(rng.geometric(p, size=size))
        chunks.append(times)
        last = int(times[-1])
    times = np.concatenate(chunks)
    return times[times < horizon].astype(np.int64)


def _interval(name: str, value: Any) -> tuple[float, float]:
    """``(low, high)`` of finite floats with ``low <= high``, or ``ValueError`` naming ``name``."""
    try:
        lo, hi = (finite_float(name, v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be two finite floats (low, high), got {value!r}") from exc
    if lo > hi:
        raise ValueError(f"{name} must satisfy low <= high, got {value!r}")
    return lo, hi
