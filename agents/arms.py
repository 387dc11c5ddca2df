"""What the bandit agents share: rewards as conjugate statistics, UCB's counts and confidence.

:mod:`bam_rl.agents.bandits` (UCB, Thompson sampling) and :mod:`bam_rl.agents.ucbam` (UCBAM)
both build on these; neither imports the other.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from bam_rl.checks import all_finite, check_finite_scalar, check_int
from bam_rl.families import (
    BetaBinomial,
    ConjugateFamily,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)

__all__ = [
    "UCBStatistics",
    "check_reward_model",
    "expected_reward",
    "gaussian_model",
    "reward_statistics",
    "ucb_confidence",
]


def ucb_confidence(t: int) -> float:
    """``log f(t)`` for the confidence level ``f(t) = 1 + t · log²(t)`` (App. D.3)."""
    log_t = math.log(t)
    return math.log(1.0 + t * log_t * log_t)


#: Per Beta-Binomial model: the statistics of a Bernoulli 0 and 1, built once (read-only
#: arrays; statistics are never changed in place, only added), since a bandit step needs one.
_BERNOULLI_STATS: weakref.WeakKeyDictionary[Any, tuple[NaturalParams, NaturalParams]] = (
    weakref.WeakKeyDictionary()
)


def _bernoulli_statistics(model: BetaBinomial, value: float) -> NaturalParams:
    both = _BERNOULLI_STATS.get(model)
    if both is None:
        both = (model.stats(successes=0.0, trials=1), model.stats(successes=1.0, trials=1))
        for stats in both:
            for array in (*stats.fields.values(), stats.log_h):
                array.flags.writeable = False
        _BERNOULLI_STATS[model] = both
    return both[int(value)]


def reward_statistics(model: ConjugateFamily, reward: float) -> NaturalParams:
    """Sufficient statistics of one reward as one datum of ``model``.

    Args:
        model: :class:`NormalKnownVariance` or :class:`NormalGamma` (real rewards),
            :class:`BetaBinomial` (Bernoulli rewards, exactly 0 or 1: one trial) or
            :class:`GammaPoisson` (count rewards).
        reward: The reward of one pull.

    Raises:
        ValueError: For another family, a non-finite reward, or a reward the family cannot
            take (a Bernoulli reward other than 0/1, a negative or fractional count).
    """
    value = check_finite_scalar("reward", reward)
    if isinstance(model, BetaBinomial):
        if value not in (0.0, 1.0):
            raise ValueError(
                f"reward must be 0 or 1 for Bernoulli arms (BetaBinomial), got {reward!r}"
            )
        return _bernoulli_statistics(model, value)
    if isinstance(model, (NormalKnownVariance, NormalGamma)):
        return model.stats(value)
    if isinstance(model, GammaPoisson):
        return model.stats(value)
    raise ValueError(
        f"no reward model for {model!r}: use NormalKnownVariance, NormalGamma, "
        "BetaBinomial or GammaPoisson"
    )


def expected_reward(theta: Any) -> float:
    """The expected reward of a parameter draw or mean: θ itself for scalar θ (Gaussian mean,
    Bernoulli probability, Poisson rate), its first component μ for NormalGamma's (μ, τ)."""
    return float(np.asarray(theta).reshape(-1)[0])


def check_reward_model(model: Any) -> None:
    if not isinstance(model, (BetaBinomial, NormalKnownVariance, NormalGamma, GammaPoisson)):
        raise ValueError(
            f"model must be NormalKnownVariance, NormalGamma, BetaBinomial or "
            f"GammaPoisson for bandit rewards, got {model!r}"
        )


def gaussian_model(noise_std: Any, prior_mean: Any, prior_var: Any) -> NormalKnownVariance:
    """``NormalKnownVariance(prior_mean, prior_var, noise_std²)`` after checking
    ``noise_std`` is a finite number > 0 (Gaussian arms of the ``gaussian`` factories)."""
    noise_std = check_finite_scalar("noise_std", noise_std)
    if noise_std <= 0:
        raise ValueError(f"noise_std must be > 0, got {noise_std!r}")
    return NormalKnownVariance(mean=prior_mean, var=prior_var, noise_var=noise_std**2)


class UCBStatistics:
    """Per-arm pull counts and empirical means, and the UCB choice over them.

    ``choose`` returns the lowest-index arm never pulled if there is one, otherwise
    ``argmax_i  mean_i + sqrt(2 log f(t) / N_i)`` with ``t = Σ N_i`` and
    ``f(t) = 1 + t log² t``; ties go to the lowest index (deterministic: no random draw).
    """

    t: int
    n_unpulled: int

    def __init__(self, n_arms: int):
        self.n_arms = n_arms
        self.clear()

    def _check_restored(self) -> None:
        """Per-arm float64 arrays of ``n_arms`` finite entries, whole counts >= 0, and ``t``
        and ``n_unpulled`` those the counts give."""
        self.n_arms = check_int("n_arms", self.n_arms)
        for name in ("counts", "sums", "means"):
            value = getattr(self, name, None)
            if (
                not isinstance(value, np.ndarray)
                or value.dtype != np.float64
                or value.shape != (self.n_arms,)
                or not all_finite(value)
            ):
                raise ValueError(f"{name} must be a finite float64 array of shape ({self.n_arms},)")
        counts = self.counts
        if (counts < 0).any() or (counts != np.floor(counts)).any():
            raise ValueError("counts must be whole numbers >= 0")
        self.t = check_int("t", self.t, minimum=0)
        if self.t != counts.sum() or self.n_unpulled != np.count_nonzero(counts == 0):
            raise ValueError("t and n_unpulled must be those the counts give")

    def clear(self) -> None:
        self.counts = np.zeros(self.n_arms)
        self.sums = np.zeros(self.n_arms)
        self.means = np.zeros(self.n_arms)
        self.t = 0
        self.n_unpulled = self.n_arms

    def choose(self) -> int:
        if self.n_unpulled:
            return int(np.argmin(self.counts))  # first arm with a zero count
        bonus = np.sqrt(2.0 * ucb_confidence(self.t) / self.counts)
        return int(np.argmax(self.means + bonus))

    def update(self, arm: int, reward: float) -> None:
        counts, sums = self.counts, self.sums
        if counts[arm] == 0:
            self.n_unpulled -= 1
        counts[arm] += 1.0
        sums[arm] += reward
        self.means[arm] = sums[arm] / counts[arm]
        self.t += 1
