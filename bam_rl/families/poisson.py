"""Gamma prior on a Poisson rate."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, gammaln

from bam_rl.checks import check_axis, check_integer_valued
from bam_rl.families.base import (
    Fields,
    NaturalParams,
    ScalarPairPrior,
    Size,
    make_stats,
    scalar_of,
)


class GammaPoisson(ScalarPairPrior):
    """λ ~ Gamma(alpha, rate beta); each observation x ~ Poisson(λ).

    Coordinates: ``alpha`` and ``beta`` themselves (an affine image of the canonical natural
    parameters ``(α − 1, −β)`` of ``T(λ) = (log λ, λ)``); a datum ``x_1..x_n`` adds
    ``(Σx, n)`` and carries ``log h = −Σ log x!``. The predictive of one count is negative
    binomial with ``n = α`` and ``p = β / (β + 1)``.

    Args:
        alpha: Shape of the Gamma prior, > 0.
        beta: Rate of the Gamma prior, > 0.

    Examples:
        >>> model = GammaPoisson(alpha=1.0, beta=1.0)
        >>> s = model.stats([0])
        >>> round(model.log_marginal(model.prior, s), 6)  # P(x = 0) = β / (β + 1)
        -0.693147
    """

    def stats(self, counts: Any, *, axis: int | tuple[int, ...] | None = None) -> NaturalParams:
        """Sufficient statistics of Poisson counts.

        Args:
            counts: Whole numbers ``x >= 0`` (any shape).
            axis: Axes summed into one datum; ``None`` (default) sums everything, ``()``
                keeps every count as its own datum (a batch of statistics).

        Raises:
            ValueError: For negative, fractional or non-finite counts.
        """
        x = check_integer_valued("counts", counts)
        axes = check_axis(axis, x.ndim)
        with np.errstate(over="ignore", invalid="ignore"):
            fields = {"alpha": x.sum(axis=axes), "beta": np.ones_like(x).sum(axis=axes)}
            log_h = -gammaln(x + 1.0).sum(axis=axes)
        return make_stats(self, "counts", fields, log_h)

    def _check_belief(self, fields: Fields) -> None:
        alpha, beta = scalar_of(fields["alpha"]), scalar_of(fields["beta"])
        if alpha is not None and beta is not None and alpha > 0 and beta > 0:
            return  # one proper belief: no reduction
        if np.any(~(fields["alpha"] > 0)) or np.any(~(fields["beta"] > 0)):
            raise ValueError("belief alpha and beta must be > 0")

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        a, b = fields["alpha"], fields["beta"]
        return gammaln(a) - a * np.log(b)

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        a, b = fields["alpha"], fields["beta"]
        # E[log λ] and E[−λ]
        return {"alpha": digamma(a) - np.log(b), "beta": -a / b}

    def mean(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        return belief.fields["alpha"] / belief.fields["beta"]

    def variance(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        b = belief.fields["beta"]
        return belief.fields["alpha"] / b / b  # no overflow of b² for huge rates

    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> np.ndarray:
        return rng.gamma(belief.fields["alpha"], 1.0 / belief.fields["beta"], size=size)

    def predictive_sample(
        self, belief: NaturalParams, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws counts from the negative-binomial posterior predictive."""
        return rng.poisson(self.sample(belief, rng, size))
