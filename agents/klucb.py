"""klUCB and its change-point variants for Bernoulli bandits (beyond the paper).

The Bernoulli-KL upper confidence index shared by every klUCB variant, the stationary klUCB
agent, GLR-klUCB (Besson, Kaufmann, Maillard & Seznec, arXiv:1902.01575, Algorithm 1: local or
global restarts, deterministic forced exploration) and the Oracle-Restart klUCB that is told the
true breakpoints. Tuning follows the reference code, SMPyBandits (``Policies/GLR_UCB.py``,
``Policies/klUCB_forGLR.py``): ``delta = 1 / sqrt(Upsilon_T T)`` (times ``K`` for local
restarts inside the root), ``alpha = 0.1 sqrt(Upsilon_T log(T) / T)`` (times ``K`` for local),
threshold ``beta(n, delta) = log(3 n^{3/2} / delta)``, tests every ``10`` pulls of an arm over
every ``10``-th split (their defaults).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bam_rl.checks import check_finite_scalar

from .base import BaseAgent, check_arm, check_observation

__all__ = [
    "GLRKLUCB",
    "KLUCB",
    "OracleRestartKLUCB",
    "bernoulli_kl",
    "glr_statistic",
    "klucb_index",
]

_EPS = 1e-15


def bernoulli_kl(p: Any, q: Any) -> np.ndarray:
    """KL(Bernoulli(p) || Bernoulli(q)), elementwise, with p, q clipped to [1e-15, 1 - 1e-15]."""
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    q = np.clip(np.asarray(q, dtype=np.float64), _EPS, 1.0 - _EPS)
    return np.maximum(p * np.log(p / q) + (1.0 - p) * np.log((1.0 - p) / (1.0 - q)), 0.0)


def klucb_index(means: Any, bounds: Any, iterations: int = 50) -> np.ndarray:
    """``sup {q in [mean, 1] : kl(mean, q) <= bound}``, elementwise, by vectorised bisection.

    50 halvings give the root to 2^-50 (about 1e-15). A bound of ``inf`` gives 1.
    """
    low = np.clip(np.asarray(means, dtype=np.float64), 0.0, 1.0).copy()
    bounds = np.asarray(bounds, dtype=np.float64)
    low, bounds = np.broadcast_arrays(low, bounds)
    low = low.copy()
    high = np.ones_like(low)
    means0 = low.copy()
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        inside = bernoulli_kl(means0, mid) <= bounds
        low = np.where(inside, mid, low)
        high = np.where(inside, high, mid)
    return low


def glr_statistic(rewards: Any, step: int = 1) -> float:
    """Bernoulli GLR change statistic ``max_s [s kl(mu_1:s, mu) + (n-s) kl(mu_s+1:n, mu)]``.

    ``s`` runs over ``1..n-1`` (splits with ``s % step == 0``, as SMPyBandits' 0-based ``s-1``
    index is tested when divisible by ``step``); ``-inf`` for fewer than two rewards.
    """
    y = np.asarray(rewards, dtype=np.float64)
    n = y.size
    if n < 2:
        return -math.inf
    splits = np.arange(1, n)
    splits = splits[(splits - 1) % step == 0]
    cumulative = np.cumsum(y)
    before = cumulative[splits - 1] / splits
    after = (cumulative[-1] - cumulative[splits - 1]) / (n - splits)
    mean = cumulative[-1] / n
    glr = splits * bernoulli_kl(before, mean) + (n - splits) * bernoulli_kl(after, mean)
    return float(glr.max())


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


class KLUCB(BaseAgent):
    """klUCB (Garivier & Cappé 2011) for Bernoulli rewards: ``f(t) = log t`` (``c = 1``).

    Args:
        n_arms: Number of arms (>= 1).
        seed: Seed of :attr:`rng` (klUCB itself is deterministic; ties go to the lowest arm).
    """

    def __init__(self, n_arms: int, seed: int | None = None):
        super().__init__(seed)
        self.n_arms = _positive_int("n_arms", n_arms)
        self.pulls = np.zeros(self.n_arms)
        self.sums = np.zeros(self.n_arms)
        self.t = 0

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        """Starts an episode: forgets every pull."""
        self.pulls[:] = 0.0
        self.sums[:] = 0.0
        self.t = 0

    def _times(self) -> np.ndarray:
        return np.full(self.n_arms, float(max(self.t, 1)))

    def indices(self) -> np.ndarray:
        """klUCB index of every arm (``inf`` for an unpulled arm)."""
        pulled = self.pulls > 0
        out = np.full(self.n_arms, np.inf)
        if pulled.any():
            n = self.pulls[pulled]
            bounds = np.log(np.maximum(self._times()[pulled], 1.0)) / n
            out[pulled] = klucb_index(self.sums[pulled] / n, bounds)
        return out

    def act(self, observation: Any) -> int:
        """The arm with the highest index (unpulled arms first, lowest arm on ties)."""
        check_observation(observation)
        return int(np.argmax(self.indices()))

    def observe(
        self,
        action: Any,
        reward: float,
        next_observation: Any,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> None:
        """Adds a reward in [0, 1] to the pulled arm.

        Raises:
            ValueError: For an action outside ``[0, n_arms)`` or a reward outside [0, 1].
        """
        arm = check_arm("action", action, self.n_arms)
        value = check_finite_scalar("reward", reward)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"reward must lie in [0, 1] (Bernoulli bandit), got {value!r}")
        self.t += 1
        self.pulls[arm] += 1.0
        self.sums[arm] += value


class OracleRestartKLUCB(KLUCB):
    """klUCB that forgets an arm at the true breakpoints where that arm's mean changes.

    As SMPyBandits' ``OracleSequentiallyRestartPolicy`` (``per_arm_restart=True``, optimized
    change points): with ``means`` (the (segments, arms) table) only the arms whose mean moves
    at a breakpoint are reset; without it every arm is.

    Raises:
        ValueError: If ``breakpoints`` is missing (``None``) or holds a non-positive step.
    """

    def __init__(
        self, n_arms: int, breakpoints: Any = None, means: Any = None, seed: int | None = None
    ):
        if breakpoints is None:
            raise ValueError("breakpoints must be given to oracle-restart-klucb (the true ones)")
        super().__init__(n_arms, seed)
        self.breakpoints = np.array([_positive_int("breakpoints", int(b)) for b in breakpoints])
        if means is None:
            self.changes = np.ones((self.breakpoints.size, self.n_arms), dtype=bool)
        else:
            table = np.asarray(means, dtype=np.float64)
            if table.shape != (self.breakpoints.size + 1, self.n_arms):
                raise ValueError(
                    f"means must have shape (len(breakpoints) + 1, n_arms), got {table.shape}"
                )
            self.changes = table[1:] != table[:-1]
        self.restart_times = np.zeros(self.n_arms)
        self.step = 0

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.restart_times[:] = 0.0
        self.step = 0

    def _times(self) -> np.ndarray:
        return np.maximum(self.t - self.restart_times, 1.0)

    def observe(self, action: Any, reward: float, *rest: Any) -> None:
        super().observe(action, reward, *rest)
        self.step += 1
        hit = np.flatnonzero(self.breakpoints == self.step)
        if hit.size:
            arms = self.changes[hit[0]]
            self.pulls[arms] = 0.0
            self.sums[arms] = 0.0
            self.restart_times[arms] = self.t


class GLRKLUCB(KLUCB):
    """GLR-klUCB (Besson et al., Algorithm 1) with local (per-arm) or global restarts.

    Args:
        n_arms: Number of arms K.
        horizon: T, required (the tuning of ``delta`` and ``alpha`` needs it).
        n_breakpoints: Upsilon_T, required.
        local: Restart only the arm whose test fires (``True``) or all arms.
        check_every: Test an arm after every ``check_every``-th pull of it (SMPyBandits: 10).
        split_every: Try every ``split_every``-th split (SMPyBandits: 10).
        seed: Seed of :attr:`rng` (unused: the exploration is deterministic).

    Raises:
        ValueError: If ``horizon`` or ``n_breakpoints`` is missing or not a positive int.
    """

    def __init__(
        self,
        n_arms: int,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        local: bool = True,
        check_every: int = 10,
        split_every: int = 10,
        seed: int | None = None,
    ):
        if horizon is None:
            raise ValueError("horizon must be given to glr-klucb (delta and alpha use it)")
        if n_breakpoints is None:
            raise ValueError("n_breakpoints must be given to glr-klucb (delta and alpha use it)")
        super().__init__(n_arms, seed)
        self.horizon = _positive_int("horizon", horizon)
        self.n_breakpoints = _positive_int("n_breakpoints", max(int(n_breakpoints), 1))
        self.local = bool(local)
        self.check_every = _positive_int("check_every", check_every)
        self.split_every = _positive_int("split_every", split_every)
        factor = self.n_arms if self.local else 1
        ratio = factor * self.n_breakpoints / self.horizon
        self.delta = 1.0 / math.sqrt(factor * self.n_breakpoints * self.horizon)
        self.alpha = min(1.0, 0.1 * math.sqrt(ratio * math.log(self.horizon)))
        self.history = np.zeros((self.n_arms, self.horizon))
        self.restart_times = np.zeros(self.n_arms)
        self.last_restart = 0

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.restart_times[:] = 0.0
        self.last_restart = 0

    def threshold(self, n: int) -> float:
        """``beta(n, delta) = log(3 n^{3/2} / delta)``."""
        return -math.log(self.delta) + 1.5 * math.log(n) + math.log(3.0)

    def _times(self) -> np.ndarray:
        return np.maximum(self.t - self.restart_times, 1.0)

    def act(self, observation: Any) -> int:
        """Forced exploration of arm ``(t - tau) mod floor(K / alpha)`` if below K, else klUCB."""
        check_observation(observation)
        period = max(int(self.n_arms / self.alpha), self.n_arms)
        slot = (self.t - self.last_restart) % period
        if slot < self.n_arms:
            return int(slot)
        return int(np.argmax(self.indices()))

    def observe(self, action: Any, reward: float, *rest: Any) -> None:
        super().observe(action, reward, *rest)
        arm = int(action)
        n = int(self.pulls[arm])
        if n > self.history.shape[1]:  # a run longer than the horizon: grow, never fail
            self.history = np.concatenate([self.history, np.zeros_like(self.history)], axis=1)
        self.history[arm, n - 1] = float(reward)
        if n % self.check_every != 0 or n < 2:
            return
        if glr_statistic(self.history[arm, :n], self.split_every) < self.threshold(n):
            return
        arms = [arm] if self.local else range(self.n_arms)
        for a in arms:
            self.pulls[a] = 0.0
            self.sums[a] = 0.0
            self.restart_times[a] = self.t
        self.last_restart = self.t
