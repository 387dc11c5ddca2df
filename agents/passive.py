"""Passively adaptive bandits of the piecewise-stationary benchmark (beyond the paper).

They forget at a fixed rate instead of detecting changes: Discounted klUCB (Garivier &
Moulines, ALT 2011), Sliding-Window klUCB (the same paper), Discounted Thompson sampling (Raj &
Kalyani, arXiv:1707.09727) and Exp3.S (Auer, Cesa-Bianchi, Freund & Schapire 2002). Tuned as
Besson, Kaufmann, Maillard & Seznec's benchmark (arXiv:1902.01575) ran them, from SMPyBandits'
``configuration_nonstationary.py`` and ``Policies/{DiscountedUCB,SlidingWindowUCB,
DiscountedThompson,Exp3S}.py``; where that code departs from its paper the docstring says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bam_rl.checks import check_int, check_memory, check_real

from .base import beta_draws, check_observation
from .klucb import (
    KLUCB,
    BernoulliBanditAgent,
    check_array,
    check_range,
    check_variant,
    kernels,
    tuning,
)

__all__ = ["VARIANTS", "DiscountedKLUCB", "DiscountedThompson", "Exp3S", "SlidingWindowKLUCB"]


#: ``variant`` values: the paper's algorithm, or the reference code as the benchmark ran it.
VARIANTS = ("paper", "smpybandits-0.9.7")


def _discount(name: str, value: Any) -> float:
    """A discount factor: one finite number in the open interval (0, 1) (not a string)."""
    return check_real(name, value, lower=0.0, upper=1.0, open_lower=True, open_upper=True)


class _Discounting(BernoulliBanditAgent):
    """The settings of the discounting agents: a discount ``gamma`` in (0, 1) and a
    ``variant`` of :data:`VARIANTS` (checked before the base's)."""

    gamma: float
    variant: str

    def _check_settings(self) -> dict[str, Any]:
        self.gamma = _discount("gamma", self.gamma)
        self.variant = check_variant(self.variant, VARIANTS)
        return super()._check_settings()


class DiscountedKLUCB(_Discounting, KLUCB):
    """D-klUCB: klUCB on discounted counts ``N_k <- gamma N_k + 1{A=k}`` (and sums alike).

    Index ``sup {q : kl(X_k / N_k, q) <= log(n_gamma) / N_k}`` with ``n_gamma = sum_k N_k``,
    ``inf`` while ``N_k < 1``. The benchmark ran ``gamma = 0.95`` on every problem (its
    ``GAMMAS``; the horizon-tuned ``1 - sqrt(Upsilon_T / T) / 4`` is commented out there), so
    that is the default here; ``gamma="tuned"`` takes the tuned value from ``horizon`` and
    ``n_breakpoints``.

    ``variant="paper"`` (default) discounts every arm every step. ``"smpybandits-0.9.7"`` is
    the reference code as the published table ran it: an arm's counts are discounted by
    ``gamma^(1 + steps since its last pull)`` only when it is pulled, and its discounted pull
    count is stored in an *integer* array (``np.zeros(nbArms, dtype=int)``, fixed upstream on
    2019-12-23 in commit 266168e, "discounted_pulls is not int"), so ``gamma N + 1`` truncates
    to 1 while the discounted reward sum grows: the "mean" exceeds 1 and the bisection returns
    ``(mean + 1) / 2``. That bug is the published regret (see ``docs/piecewise.md``).

    Raises:
        ValueError: For a ``gamma`` outside (0, 1), ``"tuned"`` without its arguments, or an
            unknown ``variant``.
    """

    _ARM_ARRAYS = ("pulls", "sums", "last_pull")

    def __init__(
        self,
        n_arms: int,
        gamma: float | str = 0.95,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        variant: str = "paper",
        seed: int | None = None,
    ):
        super().__init__(n_arms, seed)
        if isinstance(gamma, str) and gamma == "tuned":
            horizon_, upsilon = tuning("d-klucb", horizon, n_breakpoints)
            gamma = 1.0 - math.sqrt(upsilon / horizon_) / 4.0
        self.gamma, self.variant = gamma, variant  # type: ignore[assignment]
        self._settle()
        self.last_pull = np.zeros(self.n_arms)

    def _check_restored(self) -> None:
        super()._check_restored()
        check_range(self, "last_pull", 0.0, self.t, whole=True)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.last_pull[:] = 0.0

    def _fill_indices(self) -> tuple[int, int]:
        """Every arm's discounted index into ``_index`` (``inf`` while ``N_k < 1``); returns
        (first best arm, number of ties)."""
        pulls = self.pulls  # the kernel gives inf below 1
        self._log_t.fill(math.log(pulls.sum()) if self.t > 0 else 0.0)
        best, ties = kernels().klucb_indices(self.sums, pulls, self._log_t, self._index)
        # a "mean" above 1 (the reference's integer counts): its bisection never runs
        if self.variant != "paper" and (self.sums > pulls).any():
            over = (pulls >= 1.0) & (self.sums > pulls)
            self._index[over] = 0.5 * (self.sums[over] / pulls[over] + 1.0)
            best = int(np.argmax(self._index))
            ties = int(np.count_nonzero(self._index == self._index[best]))
        return best, ties

    def indices(self) -> np.ndarray:
        """Every arm's discounted index (``inf`` while ``N_k < 1``)."""
        self._fill_indices()
        return self._index.copy()

    def _best_index(self) -> int:
        best, ties = self._fill_indices()
        return self._argmax(self._index, best, ties)

    def _learn(self, arm: int, reward: float) -> None:
        if self.variant == "paper":
            self.pulls *= self.gamma
            self.sums *= self.gamma
            self.pulls[arm] += 1.0
            self.sums[arm] += reward
            return
        scale = self.gamma ** (self.t - self.last_pull[arm])  # gamma^(1 + idle steps)
        self.pulls[arm] = math.floor(scale * self.pulls[arm] + 1.0)  # the integer array
        self.sums[arm] = scale * self.sums[arm] + reward
        self.last_pull[arm] = self.t


class SlidingWindowKLUCB(KLUCB):
    """SW-klUCB: klUCB on the pulls of the last ``tau`` steps.

    ``tau = int(2 sqrt(T log(T) / Upsilon_T))`` (Garivier & Moulines' choice, as the benchmark);
    index ``sup {q : kl(mean_k, q) <= log(min(t, tau)) / N_k}`` over the window, ``inf`` for an
    arm absent from it.

    Raises:
        ValueError: If ``horizon`` or ``n_breakpoints`` is missing (and no ``tau`` is given).
    """

    def __init__(
        self,
        n_arms: int,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        tau: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(n_arms, seed)
        if tau is None:
            horizon_, upsilon = tuning("sw-klucb", horizon, n_breakpoints)
            tau = int(2 * math.sqrt(horizon_ * math.log(horizon_) / upsilon))
            if tau < 1:  # name the arguments given, not the derived window
                raise ValueError(
                    f"horizon must be >= 2 for sw-klucb (its window tau = "
                    f"int(2 sqrt(T log(T) / Upsilon_T)) must be >= 1), got horizon={horizon_}"
                )
            check_memory(f"horizon = {horizon_} (sw-klucb's window tau = {tau})", 16.0 * tau)
        self.tau = tau
        self._settle()
        self.arms = np.full(self.tau, -1, dtype=np.int64)
        self.rewards = np.zeros(self.tau)

    def _check_settings(self) -> dict[str, Any]:
        self.tau = check_int("tau", self.tau)
        check_memory(f"tau = {self.tau} (sw-klucb's window)", 16.0 * self.tau)
        return super()._check_settings()

    def _check_restored(self) -> None:
        super()._check_restored()
        arms = self.arms
        if not isinstance(arms, np.ndarray) or arms.dtype != np.int64 or arms.shape != (self.tau,):
            raise ValueError(f"arms must be an int64 array of shape ({self.tau},)")
        if arms.size and (arms.min() < -1 or arms.max() >= self.n_arms):
            raise ValueError(f"arms must lie in [-1, n_arms = {self.n_arms})")
        check_array(self, "rewards", (self.tau,))
        check_range(self, "rewards", 0.0, 1.0)
        inside = arms >= 0
        counts = np.bincount(arms[inside], minlength=self.n_arms).astype(np.float64)
        sums = np.bincount(arms[inside], weights=self.rewards[inside], minlength=self.n_arms)
        if not np.array_equal(counts, self.pulls) or not np.allclose(sums, self.sums, atol=1e-6):
            raise ValueError("pulls and sums must be those of the window's steps (arms, rewards)")

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.arms[:] = -1

    def _log_times(self) -> np.ndarray:
        """``log min(t, tau)`` for every arm (the index of the windowed counts)."""
        self._log_t.fill(math.log(max(min(self.t, self.tau), 1)))
        return self._log_t

    def _learn(self, arm: int, reward: float) -> None:
        slot = (self.t - 1) % self.tau
        old = self.arms[slot]
        if old >= 0:  # the step leaving the window
            self.pulls[old] -= 1.0
            self.sums[old] -= self.rewards[slot]
            if self.pulls[old] == 0.0:
                self.sums[old] = 0.0  # no rounding residue on an empty arm
        self.arms[slot] = arm
        self.rewards[slot] = reward
        self.pulls[arm] += 1.0
        self.sums[arm] += reward


class DiscountedThompson(_Discounting):
    """DTS: Thompson sampling from ``Beta(1 + S_k, 1 + F_k)`` with discounted counts.

    ``variant="paper"`` (default, Raj & Kalyani's algorithm): every step every arm's counts
    are multiplied by ``gamma`` and the pulled arm's success or failure count gains 1.
    ``"smpybandits-0.9.7"`` is the reference code as the benchmark ran it (and still is):
    ``DiscountedBayesianIndexPolicy.getReward`` discounts the *pulled* arm's posterior ``K-1``
    more times and never the others, so the pulled arm's counts become
    ``gamma^(K-1) (gamma N + e_reward)`` and the others stay. ``gamma = 0.95`` as the
    benchmark.

    Raises:
        ValueError: For ``gamma`` outside (0, 1) or an unknown ``variant``.
    """

    _ARM_ARRAYS = ("successes", "failures")

    def __init__(
        self, n_arms: int, gamma: float = 0.95, variant: str = "paper", seed: int | None = None
    ):
        super().__init__(n_arms, seed)
        self.gamma, self.variant = gamma, variant
        self._settle()
        self.successes = np.zeros(self.n_arms)
        self.failures = np.zeros(self.n_arms)

    def _check_restored(self) -> None:
        super()._check_restored()
        check_range(self, "successes", 0.0, math.inf)
        check_range(self, "failures", 0.0, math.inf)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.successes[:] = 0.0
        self.failures[:] = 0.0

    def act(self, observation: Any) -> int:
        """The arm with the largest posterior draw."""
        check_observation(observation)
        return int(np.argmax(beta_draws(self.rng, 1.0 + self.successes, 1.0 + self.failures)))

    def _learn(self, arm: int, reward: float) -> None:
        if self.variant == "paper":
            self.successes *= self.gamma
            self.failures *= self.gamma
            self.successes[arm] += reward
            self.failures[arm] += 1.0 - reward
            return
        scale = self.gamma ** (self.n_arms - 1)
        self.successes[arm] = scale * (self.gamma * self.successes[arm] + reward)
        self.failures[arm] = scale * (self.gamma * self.failures[arm] + 1.0 - reward)


class Exp3S(BernoulliBanditAgent):
    """Exp3.S: exponential weights with a uniform share of every weight mixed back each step.

    ``gamma = min(1, sqrt(K (Upsilon_T log(K T) + e) / ((e - 1) T)))``, ``alpha = 1/T`` (the
    reference code's defaults from ``horizon`` and ``n_breakpoints``). Arm ``k`` is drawn with
    probability ``p_k = (1 - gamma) w_k / sum(w) + gamma / K``; after reward ``r`` of arm
    ``a``: ``w_a <- w_a exp(gamma r / (p_a K)) + e alpha / K sum(w)`` and
    ``w_k <- w_k + e alpha / K sum(w)`` for the others. The weights are renormalised to sum 1
    each step (the update is scale-free, so the probabilities are the same; it only keeps
    ``exp`` from overflowing on long runs).

    State files written before ``horizon`` and ``n_breakpoints`` were kept (up to commit
    034ed49) hold only ``gamma`` and ``alpha``: such an agent loads with both rates as stored
    (each checked to lie in (0, 1]) and ``horizon = n_breakpoints = None``.

    Raises:
        ValueError: If ``horizon`` or ``n_breakpoints`` is missing or out of range.
    """

    gamma: float
    alpha: float
    horizon: int | None
    n_breakpoints: int | None

    _ARM_ARRAYS = ("weights",)

    def __init__(
        self,
        n_arms: int,
        horizon: int | None = None,
        n_breakpoints: int | None = None,
        seed: int | None = None,
    ):
        super().__init__(n_arms, seed)
        self.horizon, self.n_breakpoints = horizon, n_breakpoints
        self._settle()
        self.weights = np.full(self.n_arms, 1.0 / self.n_arms)

    def _check_settings(self) -> dict[str, Any]:
        if self._rates_only():
            derived = super()._check_settings()
            for name in ("gamma", "alpha"):  # as the formulas give them: in (0, 1]
                derived[name] = check_real(
                    name, getattr(self, name), lower=0.0, upper=1.0, open_lower=True
                )
            return derived
        self.horizon, self.n_breakpoints = tuning("exp3s", self.horizon, self.n_breakpoints)
        derived = super()._check_settings()
        k, e, horizon, upsilon = self.n_arms, math.e, self.horizon, self.n_breakpoints
        derived["gamma"] = min(
            1.0, math.sqrt(k * (upsilon * math.log(k * horizon) + e) / ((e - 1.0) * horizon))
        )
        derived["alpha"] = 1.0 / horizon
        return derived

    def _rates_only(self) -> bool:
        """Whether this is a restored agent from a file that holds the rates ``gamma`` and
        ``alpha`` but not the ``horizon`` and ``n_breakpoints`` they came from (written up to
        commit 034ed49, or re-saved from such an agent). The constructor sets neither rate
        before its settings are checked, so it never takes this path."""
        state = vars(self)
        return (
            state.get("horizon") is None
            and state.get("n_breakpoints") is None
            and "gamma" in state
            and "alpha" in state
        )

    def _check_restored(self) -> None:
        vars(self).setdefault("horizon", None)  # files written up to 034ed49 hold neither
        vars(self).setdefault("n_breakpoints", None)
        super()._check_restored()
        if not (self.weights > 0).all():
            raise ValueError("weights must be > 0 (Exp3.S mixes a share of the total back in)")

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.weights[:] = 1.0 / self.n_arms

    def probabilities(self) -> np.ndarray:
        """The arm probabilities ``p`` of the next draw."""
        return (1.0 - self.gamma) * self.weights / self.weights.sum() + self.gamma / self.n_arms

    def act(self, observation: Any) -> int:
        """An arm drawn from :meth:`probabilities` (inverse CDF of one uniform)."""
        check_observation(observation)
        cdf = np.cumsum(self.probabilities())
        return int(
            min(np.searchsorted(cdf, self.rng.random() * cdf[-1], side="right"), self.n_arms - 1)
        )

    def _learn(self, arm: int, reward: float) -> None:
        total = self.weights.sum()
        p = (1.0 - self.gamma) * self.weights[arm] / total + self.gamma / self.n_arms  # p[arm]
        share = math.e * self.alpha / self.n_arms * total
        grown = self.weights[arm] * math.exp(self.gamma * reward / (p * self.n_arms))
        self.weights += share
        self.weights[arm] = grown + share
        self.weights /= self.weights.sum()
