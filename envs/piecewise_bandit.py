"""Piecewise-stationary bandit given by a means table and breakpoints."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from bam_rl.checks import check_memory, finite_float, gaussian_reward_bounds, positive_int

from .switching_bandit import _BlockBandit, check_block_memory

__all__ = [
    "BESSON_KAUFMANN_HORIZONS",
    "BESSON_KAUFMANN_PROBLEMS",
    "DEFAULT_BREAKPOINTS",
    "DEFAULT_MEANS",
    "PiecewiseBanditEnv",
    "besson_kaufmann_problem",
    "random_problem",
]

#: Default means (4 segments × 3 arms); the best arm is 0, 2, 1, 0 in turn.
DEFAULT_MEANS: tuple[tuple[float, ...], ...] = (
    (0.9, 0.5, 0.1),
    (0.1, 0.5, 0.9),
    (0.5, 0.9, 0.1),
    (0.9, 0.1, 0.5),
)
#: Default breakpoints: segments 2, 3, 4 begin at steps 2500, 5000, 7500 (of 10 000).
DEFAULT_BREAKPOINTS: tuple[int, ...] = (2500, 5000, 7500)
#: Default horizon of a bandit given by ``means``/``breakpoints`` (no ``problem``).
DEFAULT_MAX_STEPS = 10_000

_REWARDS = ("bernoulli", "gaussian")

# Besson, Kaufmann, Maillard & Seznec (arXiv:1902.01575), thesis numbering, transcribed from
# SMPyBandits/configuration_nonstationary.py (problems 1, 2, 5, 4, 6 of that file). Breakpoints
# are given at the reference horizon ``REF`` and scaled to ``max_steps`` as
# ``int(b * max_steps / REF)``, exactly as that file scales them with HORIZON.
_P5_MEANS: tuple[tuple[float, ...], ...] = (
    (0.07, 0.044, 0.043, 0.029, 0.039),
    (0.063, 0.044, 0.044, 0.029, 0.04),
    (0.063, 0.045, 0.044, 0.028, 0.04),
    (0.063, 0.045, 0.046, 0.028, 0.034),
    (0.055, 0.045, 0.046, 0.028, 0.034),
    (0.055, 0.049, 0.045, 0.024, 0.035),
    (0.052, 0.049, 0.041, 0.024, 0.035),
    (0.052, 0.048, 0.041, 0.02, 0.037),
    (0.052, 0.048, 0.037, 0.02, 0.037),
    (0.045, 0.05, 0.037, 0.02, 0.035),
    (0.045, 0.05, 0.033, 0.018, 0.035),
    (0.0455, 0.047, 0.033, 0.018, 0.035),
    (0.0455, 0.047, 0.033, 0.018, 0.034),
    (0.037, 0.042, 0.03, 0.02, 0.034),
    (0.029, 0.032, 0.03, 0.02, 0.034),
    (0.031, 0.026, 0.032, 0.02, 0.033),
    (0.033, 0.026, 0.025, 0.02, 0.033),
    (0.033, 0.035, 0.023, 0.02, 0.03),
    (0.045, 0.038, 0.015, 0.02, 0.023),
    (0.045, 0.038, 0.02, 0.014, 0.023),
    (0.045, 0.038, 0.021, 0.014, 0.023),
    (0.049, 0.042, 0.029, 0.014, 0.016),
    (0.049, 0.042, 0.029, 0.016, 0.016),
    (0.049, 0.042, 0.03, 0.014, 0.016),
    (0.046, 0.04, 0.035, 0.02, 0.019),
    (0.046, 0.04, 0.035, 0.02, 0.029),
    (0.046, 0.04, 0.035, 0.023, 0.029),
    (0.046, 0.037, 0.034, 0.023, 0.033),
    (0.05, 0.037, 0.034, 0.024, 0.033),
    (0.05, 0.04, 0.034, 0.024, 0.033),
    (0.05, 0.04, 0.032, 0.024, 0.035),
    (0.049, 0.04, 0.029, 0.0235, 0.035),
    (0.049, 0.0405, 0.029, 0.0235, 0.037),
    (0.047, 0.038, 0.0295, 0.025, 0.037),
    (0.047, 0.038, 0.034, 0.025, 0.037),
    (0.047, 0.041, 0.034, 0.025, 0.038),
    (0.051, 0.041, 0.035, 0.025, 0.038),
    (0.051, 0.04, 0.035, 0.025, 0.038),
    (0.051, 0.038, 0.033, 0.025, 0.039),
    (0.047, 0.038, 0.033, 0.026, 0.039),
    (0.047, 0.035, 0.032, 0.026, 0.039),
    (0.045, 0.033, 0.032, 0.024, 0.038),
    (0.045, 0.03, 0.031, 0.024, 0.038),
    (0.045, 0.027, 0.031, 0.024, 0.038),
    (0.043, 0.027, 0.026, 0.021, 0.0375),
    (0.043, 0.03, 0.026, 0.021, 0.0375),
    (0.043, 0.03, 0.026, 0.021, 0.0375),
    (0.043, 0.034, 0.025, 0.021, 0.0375),
    (0.045, 0.034, 0.015, 0.02, 0.0375),
    (0.045, 0.033, 0.016, 0.02, 0.036),
    (0.043, 0.033, 0.02, 0.018, 0.036),
    (0.043, 0.035, 0.02, 0.018, 0.032),
    (0.043, 0.035, 0.027, 0.018, 0.032),
    (0.04, 0.035, 0.027, 0.018, 0.032),
    (0.033, 0.036, 0.029, 0.019, 0.033),
    (0.028, 0.036, 0.029, 0.019, 0.033),
    (0.028, 0.038, 0.029, 0.017, 0.033),
    (0.032, 0.038, 0.034, 0.017, 0.03),
    (0.031, 0.038, 0.034, 0.015, 0.03),
    (0.031, 0.04, 0.034, 0.015, 0.03),
    (0.038, 0.04, 0.034, 0.014, 0.029),
    (0.038, 0.038, 0.034, 0.012, 0.026),
    (0.042, 0.038, 0.034, 0.018, 0.026),
    (0.042, 0.037, 0.034, 0.018, 0.019),
    (0.042, 0.037, 0.034, 0.018, 0.0185),
    (0.043, 0.037, 0.034, 0.023, 0.017),
    (0.044, 0.038, 0.036, 0.023, 0.024),
    (0.044, 0.038, 0.036, 0.023, 0.029),
    (0.044, 0.038, 0.036, 0.025, 0.029),
    (0.044, 0.037, 0.034, 0.025, 0.034),
    (0.044, 0.035, 0.034, 0.028, 0.034),
    (0.044, 0.035, 0.034, 0.028, 0.037),
    (0.049, 0.035, 0.034, 0.028, 0.037),
    (0.048, 0.032, 0.037, 0.028, 0.037),
    (0.048, 0.032, 0.037, 0.027, 0.037),
    (0.047, 0.029, 0.037, 0.027, 0.038),
    (0.047, 0.027, 0.039, 0.027, 0.038),
    (0.047, 0.023, 0.039, 0.03, 0.039),
    (0.049, 0.022, 0.035, 0.03, 0.039),
    (0.049, 0.031, 0.035, 0.03, 0.039),
    (0.049, 0.031, 0.035, 0.027, 0.039),
    (0.049, 0.032, 0.033, 0.027, 0.039),
)

#: Problem k -> (means, breakpoints at the reference horizon, reference horizon).
BESSON_KAUFMANN_PROBLEMS: dict[int, tuple[tuple[tuple[float, ...], ...], tuple[int, ...], int]] = {
    1: (
        ((0.3, 0.5, 0.9), (0.3, 0.2, 0.9), (0.3, 0.2, 0.1), (0.7, 0.2, 0.1), (0.7, 0.5, 0.1)),
        (400, 800, 1200, 1600),
        2000,
    ),
    2: (
        ((0.4, 0.5, 0.9), (0.5, 0.4, 0.7), (0.6, 0.3, 0.5), (0.7, 0.2, 0.3), (0.8, 0.1, 0.1)),
        (400, 800, 1200, 1600),
        2000,
    ),
    3: (
        (
            (0.071, 0.041, 0.032, 0.030, 0.020, 0.011),
            (0.055, 0.053, 0.032, 0.030, 0.008, 0.011),
            (0.040, 0.063, 0.032, 0.030, 0.008, 0.011),
            (0.040, 0.042, 0.043, 0.030, 0.008, 0.011),
            (0.030, 0.032, 0.055, 0.030, 0.008, 0.011),
            (0.030, 0.032, 0.020, 0.030, 0.008, 0.021),
            (0.020, 0.022, 0.020, 0.045, 0.008, 0.021),
            (0.020, 0.022, 0.020, 0.057, 0.008, 0.011),
            (0.020, 0.022, 0.034, 0.057, 0.022, 0.011),
        ),
        tuple(range(1, 9)),  # np.linspace(0, T, num=9, endpoint=False): b = int(k * T / 9)
        9,
    ),
    4: (
        ((0.1, 0.5, 0.9), (0.3, 0.4, 0.1), (0.5, 0.3, 0.2), (0.7, 0.4, 0.3), (0.1, 0.5, 0.2)),
        (1000, 1250, 1500, 1750),
        2000,
    ),
    5: (_P5_MEANS, tuple(range(1, 82)), 82),  # np.linspace(0, T, num=82, endpoint=False)
}

#: Problem k -> the horizon T of its published column (Besson's thesis, Tables 6.3 and 6.4):
#: the default ``max_steps`` of ``problem=k``. Problem 4 is also published at T = 10 000;
#: problems 3 and 5 follow the tables' cells, not their captions (docs/piecewise.md).
BESSON_KAUFMANN_HORIZONS: dict[int, int] = {1: 5000, 2: 5000, 3: 100_000, 4: 5000, 5: 20_000}


def _scaled(problem: int, max_steps: int) -> list[int]:
    _, breakpoints, reference = BESSON_KAUFMANN_PROBLEMS[problem]
    return [int(b * max_steps / reference) for b in breakpoints]


def _shortest_horizon(problem: int) -> int:
    """The smallest ``max_steps`` from which on every horizon puts problem ``problem``'s
    scaled breakpoints on distinct steps >= 1."""
    _, breakpoints, reference = BESSON_KAUFMANN_PROBLEMS[problem]
    gaps = [breakpoints[0], *np.diff(breakpoints).tolist()]
    steps = -(-reference // min(gaps))  # from here on every gap scales to >= 1 step
    while steps > 1:
        scaled = _scaled(problem, steps - 1)
        if scaled[0] < 1 or any(a >= b for a, b in itertools.pairwise(scaled)):
            break
        steps -= 1
    return steps


#: Problem k -> the shortest accepted ``max_steps`` (its breakpoints, fractions of the
#: horizon, must fall on distinct steps >= 1): 5, 5, 9, 7 and 82 for problems 1..5.
BESSON_KAUFMANN_MIN_STEPS: dict[int, int] = {
    k: _shortest_horizon(k) for k in BESSON_KAUFMANN_PROBLEMS
}


def besson_kaufmann_problem(
    problem: int, max_steps: int | None = None
) -> tuple[np.ndarray, list[int]]:
    """Means table and breakpoints of Besson & Kaufmann's problem ``problem`` at ``max_steps``.

    Args:
        problem: 1..5 (thesis numbering).
        max_steps: The horizon the breakpoints are scaled to; ``None``: the problem's
            published horizon (:data:`BESSON_KAUFMANN_HORIZONS`).

    Raises:
        ValueError: If ``problem`` is not an int in 1..5 (``1.0`` and ``True`` are refused), or
            ``max_steps`` is not an int >= :data:`BESSON_KAUFMANN_MIN_STEPS` of the problem.
    """
    if (
        isinstance(problem, bool)
        or not isinstance(problem, int | np.integer)
        or problem not in BESSON_KAUFMANN_PROBLEMS
    ):
        raise ValueError(f"problem must be one of 1, 2, 3, 4, 5 (or None), got {problem!r}")
    problem = int(problem)
    if max_steps is None:
        max_steps = BESSON_KAUFMANN_HORIZONS[problem]
    max_steps = positive_int("max_steps", max_steps)
    shortest = BESSON_KAUFMANN_MIN_STEPS[problem]
    if max_steps < shortest:
        count = len(BESSON_KAUFMANN_PROBLEMS[problem][1])
        raise ValueError(
            f"max_steps must be an int >= {shortest} for problem={problem} (its {count} "
            f"breakpoints, fractions of max_steps, must fall on distinct steps >= 1), "
            f"got {max_steps!r}"
        )
    means = BESSON_KAUFMANN_PROBLEMS[problem][0]
    return np.array(means, dtype=np.float64), _scaled(problem, max_steps)


def random_problem(
    rng: np.random.Generator,
    n_arms: int = 5,
    max_steps: int = 20_000,
    n_breakpoints: int = 6,
    min_gap: int = 1000,
) -> tuple[np.ndarray, list[int]]:
    """Besson & Kaufmann's random instance: first means U[0, 1]; ``n_breakpoints`` breakpoints
    at least ``min_gap`` apart (and from 0 and ``max_steps``); at each one every arm moves, with
    probability 0.5, by ±U[0.05, 0.3] (clipped to [0, 1]).
    """
    slack = max_steps - (n_breakpoints + 1) * min_gap
    if slack < 0:
        raise ValueError(
            f"max_steps must be >= (n_breakpoints + 1) * min_gap, got max_steps={max_steps}"
        )
    extra = np.sort(rng.integers(0, slack + 1, size=n_breakpoints))
    breakpoints = [int(min_gap * (j + 1) + extra[j]) for j in range(n_breakpoints)]
    rows = [rng.uniform(0.0, 1.0, size=n_arms)]
    for _ in range(n_breakpoints):
        move = rng.random(n_arms) < 0.5
        step = rng.uniform(0.05, 0.3, size=n_arms) * rng.choice((-1.0, 1.0), size=n_arms)
        rows.append(np.clip(rows[-1] + move * step, 0.0, 1.0))
    return np.array(rows), breakpoints


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
    $\mu_a(t) +$ `noise_std` $\cdot N(0, 1)$.

    ## Starting State
    $t = 0$, segment 1.

    ## Episode End
    No termination; truncation after `max_steps` pulls (default 10 000; with `problem=k`, the
    horizon T of problem k's published column, below).

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

    | Parameter     | Type              | Default                  | Description                   |
    |---------------|-------------------|--------------------------|-------------------------------|
    | `means`       | (S, K) array-like | `DEFAULT_MEANS` (4 × 3)  | arm means per segment         |
    | `breakpoints` | S-1 ints          | `(2500, 5000, 7500)`     | first step of segments 2..S   |
    | `reward`      | str               | `"bernoulli"`            | `"bernoulli"` or `"gaussian"` |
    | `noise_std`   | float             | 0.25                     | Gaussian noise std (>= 0, †)  |
    | `max_steps`   | int or None       | 10_000; `problem`: its T | horizon (>= 1)                |
    | `problem`     | int or None       | None                     | Besson-Kaufmann problem 1..5  |
    | `render_mode` | str or None       | None                     | or `"rgb_array"`              |

    † With `reward="gaussian"`, |mean| + 40 · `noise_std` must stay within 1e150
    (`MAX_REWARD_MAGNITUDE`), so rewards and their squares stay finite. `problem=k` needs
    `max_steps` >= 5, 5, 9, 7, 82 for k = 1..5 (`BESSON_KAUFMANN_MIN_STEPS`).

    ### Besson & Kaufmann's problems (`problem=k`)
    From SMPyBandits' `configuration_nonstationary.py` (Besson, Kaufmann, Maillard & Seznec,
    arXiv:1902.01575; thesis numbering: 1, 2, 3 = config 5, 4 = config 4, 5 = config 6).
    Breakpoints are fractions of the horizon, scaled to `max_steps` as theirs are with T.
    Without `max_steps`, `problem=k` runs at the published T in bold
    (:data:`BESSON_KAUFMANN_HORIZONS`): `gym.make(id, problem=1)` has breakpoints 1000, 2000,
    3000, 4000 of 5000 steps.

    | k | K | T (published tables)      | breakpoints (fraction of T)         | means           |
    |---|---|---------------------------|-------------------------------------|-----------------|
    | 1 | 3 | **5000**                  | 0.2, 0.4, 0.6, 0.8                  | one arm changes |
    | 2 | 3 | **5000**                  | 0.2, 0.4, 0.6, 0.8                  | all arms change |
    | 3 | 6 | **1e5** (caption: 20 000) | k/9, k = 1..8 (Yahoo!, M-UCB paper) | 0.008 .. 0.071  |
    | 4 | 3 | **5000** and 10 000       | 0.5, 0.625, 0.75, 0.875             | all arms change |
    | 5 | 5 | **20 000** (caption: 1e5) | k/82, k = 1..81 (Yahoo!, SW-UCB#)   | 0.012 .. 0.070  |

    The full tables are :data:`BESSON_KAUFMANN_PROBLEMS`; :func:`random_problem` draws their
    random instances (K = 5, T = 20 000, 6 breakpoints at least 1000 apart).

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
        max_steps: int | None = None,
        render_mode: str | None = None,
        problem: int | None = None,
    ) -> None:
        """Create the bandit.

        Args:
            means: Finite (segments, arms) table, at least 1 × 1; in [0, 1] for Bernoulli
                rewards.
            breakpoints: ``segments - 1`` strictly increasing positive ints.
            reward: ``"bernoulli"`` or ``"gaussian"``.
            noise_std: Standard deviation of Gaussian rewards, >= 0 (unused for Bernoulli);
                for Gaussian rewards every ``|mean| + 40 · noise_std`` must be <= 1e150.
            max_steps: Horizon (pulls per episode), a positive int; ``None`` (default):
                10 000, or with ``problem=k`` the horizon of problem k's published column
                (:data:`BESSON_KAUFMANN_HORIZONS`: 5000 for problems 1, 2 and 4, 100 000 for
                3, 20 000 for 5).
            render_mode: ``None`` or ``"rgb_array"`` (:meth:`render` draws the arm means and
                the pulls so far).
            problem: ``None`` (use ``means``/``breakpoints``) or 1..5, Besson & Kaufmann's
                problem (thesis numbering; see :data:`BESSON_KAUFMANN_PROBLEMS`), which
                replaces ``means`` and ``breakpoints``, breakpoints scaled to ``max_steps``.

        Raises:
            ValueError: If an argument is outside its accepted range.
        """
        if reward not in _REWARDS:
            raise ValueError(f"reward must be one of {_REWARDS}, got {reward!r}")
        noise_std = finite_float("noise_std", noise_std)
        if noise_std < 0.0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
        if problem is not None:
            means, breakpoints = besson_kaufmann_problem(problem, max_steps)
            problem = int(problem)
            if max_steps is None:
                max_steps = BESSON_KAUFMANN_HORIZONS[problem]
        elif max_steps is None:
            max_steps = DEFAULT_MAX_STEPS
        max_steps = positive_int("max_steps", max_steps)
        self.problem = problem
        table = _means_table(means)
        check_block_memory(
            table.shape[1],
            max_steps,
            f"means with {table.shape[1]} arms (columns) and max_steps = {max_steps}",
        )
        if reward == "bernoulli" and (table.min() < 0.0 or table.max() > 1.0):
            raise ValueError("means must lie in [0, 1] for reward='bernoulli'")
        if reward == "gaussian":
            gaussian_reward_bounds(noise_std, float(np.abs(table).max()), "means")
        self.reward = reward
        self.means = table
        self.breakpoints = _breakpoints(breakpoints, table.shape[0])
        self._init_bandit(
            table.shape[1],
            max_steps,
            reward,
            noise_std,
            render_mode,
            (float(table.min()), float(table.max())),
        )

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
