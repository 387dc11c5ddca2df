"""Dirichlet prior on the probabilities of a categorical variable."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, gammaln

from bam_rl.checks import (
    check_axis,
    check_integer_valued,
    check_positive,
    check_size,
)
from bam_rl.families.base import ConjugateFamily, Fields, NaturalParams, Size, make_stats


def _leading_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """Normalises ``axis`` against the ``ndim`` leading (observation) axes of an array."""
    axes = check_axis(axis, ndim)
    return tuple(range(ndim)) if axes is None else axes


class DirichletCategorical(ConjugateFamily):
    """θ ~ Dirichlet(alpha) on the K-simplex; each observation is a category in {0..K−1}
    drawn with probabilities θ.

    Coordinates: ``alpha`` itself, shape ``(K,)`` (an affine image of the canonical natural
    parameters ``α − 1`` of ``T(θ) = log θ``); a datum adds its per-category counts.

    The likelihood is that of an *ordered sequence* of categories, ``Π_k θ_k^{c_k}``, so
    ``log h = 0`` whether the datum is given as indices or as counts. For the multinomial
    probability of unordered counts add ``log(n! / Π_k c_k!)`` yourself; it does not depend
    on the belief, so it changes neither posteriors nor readout selection.

    Statistics of models with a different number of categories cannot be mixed (``K`` is
    part of :meth:`signature`, through the field shape).

    Args:
        alpha: Concentrations, an array of ``K >= 2`` positive values, or one positive value
            shared by ``n_categories`` categories.
        n_categories: ``K`` when ``alpha`` is a scalar (or a check on ``len(alpha)``).

    Examples:
        >>> model = DirichletCategorical(alpha=1.0, n_categories=3)
        >>> s = model.stats(observations=[0, 2, 2])
        >>> (model.prior + s).mean.round(4).tolist()
        [0.3333, 0.1667, 0.5]
    """

    def __init__(self, alpha: Any = 1.0, n_categories: int | None = None):
        concentration = np.array(check_positive("alpha", alpha), dtype=np.float64)
        if concentration.ndim > 1:
            raise ValueError(
                f"alpha must be a scalar or a 1-D array, got shape {concentration.shape}"
            )
        if n_categories is not None:
            n_categories = check_size("n_categories", n_categories, 16, minimum=2)
        if concentration.ndim == 0:
            if n_categories is None:
                raise ValueError("n_categories is required when alpha is a scalar")
            concentration = np.full(n_categories, float(concentration))
        elif n_categories is not None and n_categories != concentration.shape[0]:
            raise ValueError(
                f"alpha has {concentration.shape[0]} entries but n_categories is {n_categories}"
            )
        if concentration.shape[0] < 2:
            raise ValueError(f"alpha must have at least 2 categories, got {concentration.shape[0]}")
        self.n_categories = int(concentration.shape[0])
        self.alpha = concentration
        self.alpha.setflags(write=False)
        self.field_shapes = {"alpha": (self.n_categories,)}
        self.prior = NaturalParams(self, {"alpha": self.alpha})

    def __repr__(self) -> str:
        alpha = np.array2string(self.alpha, precision=4, threshold=6, separator=", ")
        return f"DirichletCategorical(alpha={alpha})"

    def stats(
        self,
        observations: Any = None,
        counts: Any = None,
        *,
        axis: int | tuple[int, ...] | None = None,
    ) -> NaturalParams:
        """Sufficient statistics of categorical observations, given as indices or counts.

        Pass exactly one of ``observations`` and ``counts``. Either way the datum is a
        sequence whose order is known, so ``log h = 0`` (see the class docstring).

        Args:
            observations: Category indices in ``{0, ..., K−1}`` (any shape).
            counts: Per-category counts of such a sequence, whole numbers ``>= 0`` with last
                axis of length ``K``.
            axis: Observation axes summed into one datum (for ``counts``: its leading axes,
                never the category axis); ``None`` (default) sums everything, ``()`` keeps
                each observation (each row of counts) as its own datum.

        Raises:
            ValueError: Unless exactly one of the two is given; for an index out of range,
                negative, fractional or non-finite values, or a category axis that is not
                of length ``K``.
        """
        if (observations is None) == (counts is None):
            raise ValueError("pass exactly one of observations and counts")
        k = self.n_categories
        if observations is not None:
            obs = check_integer_valued("observations", observations)
            if np.any(obs >= k):
                raise ValueError(
                    f"observations must lie in {{0, ..., {k - 1}}}, got {observations!r}"
                )
            table = (obs[..., None] == np.arange(k)).astype(np.float64)
        else:
            table = check_integer_valued("counts", counts)
            if table.ndim == 0 or table.shape[-1] != k:
                raise ValueError(
                    f"counts must have a last axis of length {k} (one per "
                    f"category), got shape {table.shape}"
                )
        axes = _leading_axes(axis, table.ndim - 1)
        with np.errstate(over="ignore", invalid="ignore"):
            summed = table.sum(axis=axes)
        return make_stats(
            self,
            "observations" if counts is None else "counts",
            {"alpha": summed},
            np.zeros(summed.shape[:-1]),
        )

    def _check_belief(self, fields: Fields) -> None:
        if np.any(~(fields["alpha"] > 0)):
            raise ValueError("belief alpha must be > 0 in every category")

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        a = fields["alpha"]
        return gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        a = fields["alpha"]
        # E[log θ_k]
        return {"alpha": digamma(a) - digamma(a.sum(axis=-1, keepdims=True))}

    def mean(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        a = belief.fields["alpha"]
        return a / a.sum(axis=-1, keepdims=True)

    def variance(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        a = belief.fields["alpha"]
        total = a.sum(axis=-1, keepdims=True)
        p = a / total  # p (1 − p) / (total + 1): no overflow of a·total or total²
        return p * (1.0 - p) / (total + 1.0)

    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> np.ndarray:
        """Draws probability vectors, shape ``size + (K,)``.

        For a single belief this is ``rng.dirichlet(alpha, size)``; for a batch of beliefs
        ``size`` is the full output shape as in numpy (default: the batch shape), with the
        beliefs broadcast to it.
        """
        a = belief.fields["alpha"]
        if a.ndim == 1:
            return rng.dirichlet(a, size=size)
        batch = a.shape[:-1]
        shape = batch if size is None else tuple(int(n) for n in np.atleast_1d(size))
        try:
            a = np.broadcast_to(a, tuple(shape) + (self.n_categories,))
        except ValueError as error:
            raise ValueError(f"size {size!r} does not broadcast with the batch {batch}") from error
        out = np.empty(a.shape)
        for index in np.ndindex(*shape):
            out[index] = rng.dirichlet(a[index])
        return out

    def predictive_sample(
        self, belief: NaturalParams, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws category indices from the posterior predictive of a single belief."""
        theta = np.asarray(self.sample(belief, rng, size))
        u = rng.random(theta.shape[:-1] + (1,))
        index = (np.cumsum(theta, axis=-1) < u).sum(axis=-1)
        return np.minimum(index, self.n_categories - 1)
