"""Sinusoidal Binomial stream: online tracking of a drifting success probability (paper §4.1)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from bam_rl.checks import check_memory, finite_float, positive_int, scalar_action

from . import _canvas

__all__ = ["BinomialStreamEnv"]

_BLOCK = 1024  # counts are drawn from `np_random` in blocks of this many steps
_BYTES_PER_STEP = 64  # the precomputed θ path: measured 56 bytes a step at its peak
_WINDOW = 200  # steps shown by `render` (two periods of the default sinusoid); <= _BLOCK


class BinomialStreamEnv(gym.Env[np.int64, np.ndarray]):
    r"""Track the success probability of a Binomial stream that drifts along a sinusoid.

    ## Description
    The environment of the BAM paper's first experiment (Nassar et al., ICLR 2022, §4.1). At
    step ``t = 1, 2, ...`` a hidden parameter

    $$\theta_t = \text{amplitude} \cdot \sin(2 \pi t / \text{period}) + \text{offset}$$

    generates one datum, the count $k_t \sim \mathrm{Binomial}(n, \theta_t)$. Before the count
    is revealed the agent states its estimate of $\theta_t$ and is scored by squared error, so
    an agent is rewarded for tracking (and, with a model of the drift, predicting) $\theta_t$.
    With the defaults $\theta_t$ oscillates between 0.2 and 0.8 with period 100.

    ## Action Space
    `Box(0.0, 1.0, (1,), float32)`: the estimate $a_t$ of $\theta_t$, made before $k_t$ is seen.
    A scalar or any one-element array is accepted; values outside $[0, 1]$, NaN, or a wrong
    number of elements raise `ValueError`.

    ## Observation Space
    `Discrete(n + 1)`: the last count $k_t \in \{0, \dots, n\}$ (an `np.int64`).

    ## Rewards
    $-(a_t - \theta_t)^2$ as a Python `float` (0 is perfect; the worst is -1).

    ## Starting State
    Time $t = 0$ and the observation is the placeholder count `0` (no datum has been drawn
    yet); `info["theta"]` is $\theta_0 =$ offset. The first `step` plays $t = 1$.

    ## Episode End
    No termination. The episode is truncated after `max_steps` steps (default 500, i.e. five
    periods), at $t$ = `max_steps`.

    ## Arguments
    ```python
    import gymnasium as gym
    import bam_rl  # registers the environments
    env = gym.make("bam_rl/BinomialStream-v0", n=15, amplitude=0.3, offset=0.5, period=100)
    ```

    | Parameter     | Type        | Default | Description                                          |
    |---------------|-------------|---------|------------------------------------------------------|
    | `n`           | int         | 15      | trials per datum (> 0)                               |
    | `amplitude`   | float       | 0.3     | sinusoid amplitude (>= 0)                            |
    | `offset`      | float       | 0.5     | sinusoid centre; needs [offset ± amplitude] ⊆ [0, 1] |
    | `period`      | float       | 100.0   | sinusoid period in steps (> 0)                       |
    | `max_steps`   | int         | 500     | steps before truncation (>= 1)                       |
    | `render_mode` | str or None | None    | or `"rgb_array"`: θ_t and k_t / n, last 200 steps    |

    `info` (after `reset` and every `step`) holds `theta` (float, $\theta_t$ of the last datum,
    hidden truth) and `t` (int, the time index of the last datum).

    ## Non-stationarity
    $\theta_t$ is a deterministic function of $t$; all randomness (the counts) comes from
    `self.np_random`, seeded by `reset(seed=...)`. The same seed gives the same stream.

    ## Version History
    * v0: Initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        n: int = 15,
        amplitude: float = 0.3,
        offset: float = 0.5,
        period: float = 100.0,
        max_steps: int = 500,
        render_mode: str | None = None,
    ) -> None:
        """Create the stream.

        Args:
            n: Number of Bernoulli trials per datum, a positive int.
            amplitude: Amplitude of the sinusoid, >= 0.
            offset: Centre of the sinusoid; ``offset - amplitude >= 0`` and
                ``offset + amplitude <= 1`` so that θ_t is a probability.
            period: Period of the sinusoid in steps, > 0.
            max_steps: Number of steps before the episode is truncated, a positive int.
            render_mode: ``None`` or ``"rgb_array"`` (:meth:`render` draws θ_t and the
                observed counts of the last 200 steps).

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        self.n = positive_int("n", n)
        self.amplitude = finite_float("amplitude", amplitude)
        self.offset = finite_float("offset", offset)
        self.period = finite_float("period", period)
        self.max_steps = positive_int("max_steps", max_steps)
        # θ_t is precomputed for every step: float64 arrays and a list of Python floats
        check_memory(f"max_steps = {self.max_steps}", _BYTES_PER_STEP * (self.max_steps + 1))
        if self.amplitude < 0.0:
            raise ValueError(f"amplitude must be >= 0, got {amplitude!r}")
        if self.period <= 0.0:
            raise ValueError(f"period must be > 0, got {period!r}")
        if self.offset - self.amplitude < 0.0 or self.offset + self.amplitude > 1.0:
            raise ValueError(
                "offset and amplitude must keep theta in [0, 1] "
                f"(0 <= offset - amplitude and offset + amplitude <= 1), got offset={offset!r}, "
                f"amplitude={amplitude!r}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.render_mode = render_mode

        self.observation_space = spaces.Discrete(self.n + 1)
        self.action_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)

        # θ_t for t = 0..max_steps, clipped against rounding just outside [0, 1].
        t = np.arange(self.max_steps + 1, dtype=np.float64)
        theta = self.amplitude * np.sin(2.0 * np.pi * t / self.period) + self.offset
        self._theta = np.clip(theta, 0.0, 1.0)
        self._theta_list: list[float] = self._theta.tolist()
        self._counts: list[int] = []
        self._previous_counts: list[int] = []  # the block before `_counts` (for `render`)
        self._t = 0

    @property
    def theta(self) -> np.ndarray:
        """θ_t for ``t = 0, ..., max_steps`` (a read-only copy of the hidden parameter path)."""
        out = self._theta.copy()
        out.flags.writeable = False
        return out

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.int64, dict[str, Any]]:
        """Start a new stream at ``t = 0``.

        Args:
            seed: Seed for ``self.np_random`` (the counts).
            options: Unused; accepted for API compatibility.

        Returns:
            The placeholder observation ``0`` and ``info`` with ``theta`` and ``t``.
        """
        super().reset(seed=seed)
        self._t = 0
        self._counts = []
        self._previous_counts = []
        return np.int64(0), {"theta": self._theta_list[0], "t": 0}

    def step(self, action: Any) -> tuple[np.int64, float, bool, bool, dict[str, Any]]:
        """Score the estimate of θ_t, then reveal the count drawn from Binomial(n, θ_t).

        Args:
            action: The estimate of θ_t in [0, 1] (shape ``(1,)``, a scalar is also accepted).

        Returns:
            ``(count, reward, terminated, truncated, info)``.

        Raises:
            ValueError: If the action is not a single number in [0, 1].
            RuntimeError: If called after truncation without ``reset``.
        """
        estimate = scalar_action(action, 0.0, 1.0, "estimate of theta")
        t = self._t + 1
        if t > self.max_steps:
            raise RuntimeError("step() called after the episode was truncated; call reset()")
        i = (t - 1) % _BLOCK
        if i == 0:
            theta_block = self._theta[t : t + _BLOCK]
            self._previous_counts = self._counts
            self._counts = self.np_random.binomial(self.n, theta_block).tolist()
        self._t = t
        theta = self._theta_list[t]
        err = estimate - theta
        info = {"theta": theta, "t": t}
        return np.int64(self._counts[i]), -err * err, False, t == self.max_steps, info

    def render(self) -> np.ndarray | None:
        """A 240 × 320 RGB frame (``render_mode="rgb_array"``) of the stream's recent past.

        The last 200 steps (fewer at the start: the axis is filled from the left), time to the
        right, on a probability axis from 0 (bottom) to 1 (top) with grid lines at 0.25, 0.5
        and 0.75: the hidden θ_t as a blue line and each observed count as the proportion
        ``k_t / n``, an orange square. A grey strip at the top shows the steps played out of
        ``max_steps``.

        Returns:
            The ``(240, 320, 3)`` ``uint8`` frame, or ``None`` (with a warning, as Gymnasium's
            environments do) when the environment was made without a ``render_mode``.
        """
        t = self._t
        frame = _canvas.progress_frame(self.render_mode, t, self.max_steps)
        if frame is None:
            return None
        palette = _canvas.PALETTE
        top, left, bottom, right = 12, 8, 232, _canvas.FRAME_WIDTH - 8
        _canvas.fill_rect(frame, top, left, bottom, right, palette["panel"])
        for level in (0.25, 0.5, 0.75):
            row = round(bottom - 1 - level * (bottom - 1 - top))
            _canvas.fill_rect(frame, row, left, row + 1, right, palette["grid"])
        window = min(_WINDOW, self.max_steps + 1)
        start = max(0, t - window + 1)
        steps = np.arange(start, t + 1)

        def x(s: np.ndarray) -> np.ndarray:
            return left + (s - start) * (right - 1 - left) / max(window - 1, 1)

        def y(p: np.ndarray) -> np.ndarray:
            return bottom - 1 - p * (bottom - 1 - top)

        seen = steps[steps >= 1]
        if seen.size:
            current = (t - 1) // _BLOCK
            counts = np.array(
                [
                    (self._counts if (s - 1) // _BLOCK == current else self._previous_counts)[
                        (s - 1) % _BLOCK
                    ]
                    for s in seen.tolist()
                ],
                dtype=np.float64,
            )
            _canvas.markers(frame, x(seen), y(counts / self.n), palette["observation"])
        _canvas.polyline(frame, x(steps), y(self._theta[start : t + 1]), palette["mean"])
        return frame
