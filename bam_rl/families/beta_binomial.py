"""Beta prior on a success probability with Binomial observations."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import betaln, digamma, gammaln

from bam_rl.checks import check_axis, check_integer_valued
from bam_rl.families.base import (
    Fields,
    NaturalParams,
    ScalarPairPrior,
    Size,
    make_stats,
    scalar_of,
)


def log_binomial_coefficient(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)`` for whole-number arrays."""
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


class BetaBinomial(ScalarPairPrior):
    """θ ~ Beta(alpha, beta); each observation k ~ Binomial(n, θ), n may vary.

    Coordinates: ``alpha`` and ``beta`` themselves (an affine image of the canonical natural
    parameters ``(α − 1, β − 1)``); a datum adds ``(Σk, Σ(n − k))`` and carries
    ``log h = Σ log C(n, k)``.

    Args:
        alpha: Prior pseudo-count of successes, > 0.
        beta: Prior pseudo-count of failures, > 0.

    Examples:
        >>> model = BetaBinomial(alpha=1.0, beta=1.0)
        >>> s = model.stats(successes=4, trials=10)
        >>> round(model.log_marginal(model.prior, s), 6)  # uniform prior: 1 / (n + 1)
        -2.397895
    """

    def stats(
        self, successes: Any, trials: Any, *, axis: int | tuple[int, ...] | None = None
    ) -> NaturalParams:
        """Sufficient statistics of Binomial counts.

        Args:
            successes: Whole numbers ``k >= 0``.
            trials: Whole numbers ``n >= k`` (broadcast against ``successes``).
            axis: Axes summed into one datum; ``None`` (default) sums everything, ``()``
                keeps every count as its own datum (a batch of statistics).

        Raises:
            ValueError: For negative, fractional or non-finite counts, or ``successes > trials``.
        """
        k = check_integer_valued("successes", successes)
        n = check_integer_valued("trials", trials)
        try:
            k, n = np.broadcast_arrays(k, n)
        except ValueError as error:
            raise ValueError(
                f"successes {k.shape} and trials {n.shape} do not broadcast"
            ) from error
        if np.any(k > n):
            raise ValueError("successes must be <= trials")
        axes = check_axis(axis, k.ndim)
        with np.errstate(over="ignore", invalid="ignore"):
            log_h = log_binomial_coefficient(n, k).sum(axis=axes)
            fields = {"alpha": k.sum(axis=axes), "beta": (n - k).sum(axis=axes)}
        return make_stats(self, "successes and trials", fields, log_h)

    def _check_belief(self, fields: Fields) -> None:
        a, b = scalar_of(fields["alpha"]), scalar_of(fields["beta"])
        if a is not None and b is not None and a > 0 and b > 0:
            return  # one proper belief (a bandit arm's, every step): no reduction
        alpha, beta = np.asarray(fields["alpha"]), np.asarray(fields["beta"])
        if not ((alpha > 0).all() and (beta > 0).all()):  # NaN fails too
            raise ValueError("belief alpha and beta must be > 0")

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        return betaln(fields["alpha"], fields["beta"])

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        a, b = fields["alpha"], fields["beta"]
        total = digamma(a + b)
        return {"alpha": digamma(a) - total, "beta": digamma(b) - total}

    def mean(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        a, b = belief.fields["alpha"], belief.fields["beta"]
        return a / (a + b)

    def variance(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        a, b = belief.fields["alpha"], belief.fields["beta"]
        total = a + b
        # (a / total)(b / total) / (total + 1): no overflow of a·b or total² for huge counts
        return (a / total) * (b / total) / (total + 1.0)

    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> np.ndarray:
        return rng.beta(belief.fields["alpha"], belief.fields["beta"], size=size)

    def predictive_sample(
        self, belief: NaturalParams, trials: int, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws counts from the Beta-Binomial posterior predictive."""
        theta = self.sample(belief, rng, size)
        return rng.binomial(trials, theta)
