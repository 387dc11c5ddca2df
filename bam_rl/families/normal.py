"""Normal observations: known noise variance (Normal prior on the mean) and unknown precision
(Normal-Gamma prior on mean and precision)."""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import numpy as np
from scipy.special import digamma, gammaln

from bam_rl.checks import as_float_array, check_axis, check_positive_real, check_real
from bam_rl.families.base import (
    ConjugateFamily,
    Fields,
    NaturalParams,
    Size,
    _finite_result,
    make_stats,
    scalar_of,
)

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Smallest float64 variance whose precision ``1 / var`` is finite.
_TINY = float(np.nextafter(1.0 / np.finfo(np.float64).max, 1.0))
#: ``NormalGamma``: ``β`` below this fraction of ``beta_shifted`` has lost its precision.
_BETA_RTOL = 1e-11


def _count(y: np.ndarray, axis: int | tuple[int, ...] | None) -> np.ndarray:
    """Number of observations summed into each datum by ``y.sum(axis=axis)``."""
    return np.ones_like(y).sum(axis=axis)


class _RealObservations(ConjugateFamily):
    """The two Normal families' :meth:`stats`: the checks and counts of real observations,
    then the family's own fields (:meth:`_observation_stats`)."""

    def stats(
        self, observations: Any, *, axis: int | tuple[int, ...] | None = None
    ) -> NaturalParams:
        """Sufficient statistics of real observations.

        Args:
            observations: Finite real values (any shape).
            axis: Axes summed into one datum; ``None`` (default) sums everything, ``()``
                keeps every observation as its own datum (a batch of statistics).

        Raises:
            ValueError: For NaN or infinite observations.
        """
        y = as_float_array("observations", observations)
        axes = check_axis(axis, y.ndim)
        with np.errstate(over="ignore", invalid="ignore"):
            fields, log_h = self._observation_stats(y, axes, _count(y, axes))
        return make_stats(self, "observations", fields, log_h)

    @abstractmethod
    def _observation_stats(
        self, y: np.ndarray, axes: int | tuple[int, ...] | None, n: np.ndarray
    ) -> tuple[Fields, np.ndarray]:
        """The fields and ``log h`` of the data ``y`` summed over ``axes`` (``n`` of them in
        each datum)."""


class NormalKnownVariance(_RealObservations):
    """θ ~ N(mean, var); each observation y ~ N(θ, noise_var) with noise_var known.

    Coordinates: ``precision_mean = m / v`` and ``precision = 1 / v`` of the belief N(m, v),
    whose density is ``∝ exp(precision_mean · θ − precision · θ² / 2)``. A datum
    ``y_1..y_n`` adds ``(Σy / σ², n / σ²)`` and carries
    ``log h = −Σy² / (2σ²) − (n / 2) log(2πσ²)``, ``σ² = noise_var``. Because the statistics
    are scaled by ``noise_var``, it is part of :meth:`signature`: statistics of models with
    different noise variances cannot be mixed.

    Args:
        mean: Prior mean of θ.
        var: Prior variance of θ, > 0.
        noise_var: Variance of each observation about θ, > 0.

    Examples:
        >>> model = NormalKnownVariance(mean=0.0, var=1.0, noise_var=1.0)
        >>> s = model.stats([0.5])
        >>> round(model.log_marginal(model.prior, s), 6)  # y ~ N(0, 2)
        -1.328012
    """

    field_shapes = {"precision_mean": (), "precision": ()}
    _SIGNATURE_SETTINGS = ("noise_var",)

    def __init__(self, mean: float = 0.0, var: float = 1.0, noise_var: float = 1.0):
        self.prior_mean = check_real("mean", mean)
        self.prior_var = check_positive_real("var", var)
        self.noise_var = check_positive_real("noise_var", noise_var)
        for name, value in (("var", self.prior_var), ("noise_var", self.noise_var)):
            if not math.isfinite(1.0 / value):
                raise ValueError(
                    f"{name} must be a finite number > 0 whose precision 1/{name} "
                    f"is finite (at least {_TINY:g}), got {value!r}"
                )
        if not math.isfinite(self.prior_mean / self.prior_var):
            raise ValueError(
                f"mean / var must be finite (the prior's natural parameter "
                f"overflows float64), got mean={self.prior_mean!r}, "
                f"var={self.prior_var!r}"
            )
        self.prior = NaturalParams(
            self,
            {"precision_mean": self.prior_mean / self.prior_var, "precision": 1.0 / self.prior_var},
        )

    def __repr__(self) -> str:
        return self._repr(mean=self.prior_mean, var=self.prior_var, noise_var=self.noise_var)

    def _observation_stats(
        self, y: np.ndarray, axes: int | tuple[int, ...] | None, n: np.ndarray
    ) -> tuple[Fields, np.ndarray]:
        noise = self.noise_var
        fields = {"precision_mean": y.sum(axis=axes) / noise, "precision": n / noise}
        log_h = -(y * y).sum(axis=axes) / (2.0 * noise) - 0.5 * n * np.log(2.0 * np.pi * noise)
        return fields, log_h

    def _check_belief(self, fields: Fields) -> None:
        precision = scalar_of(fields["precision"])
        if precision is not None and precision > 0:
            return  # one proper belief: no reduction
        if not (np.asarray(fields["precision"]) > 0).all():  # NaN fails too
            raise ValueError("belief precision must be > 0")

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        h1, h2 = fields["precision_mean"], fields["precision"]
        return 0.5 * h1 * h1 / h2 - 0.5 * np.log(h2) + 0.5 * _LOG_2PI

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        h1, h2 = fields["precision_mean"], fields["precision"]
        m = h1 / h2
        # E[θ] and E[−θ²/2]
        return {"precision_mean": m, "precision": -0.5 * (m * m + 1.0 / h2)}

    def kl(self, p: NaturalParams, q: NaturalParams) -> np.ndarray | float:
        """``KL(p ‖ q)`` between Gaussian beliefs, in the closed form.

        Equal to the generic Bregman divergence, but without the cancellation of the large
        terms ``m² / (2v)`` of tightly concentrated beliefs; clipped at 0 against rounding.
        """
        self.check_params(p, "p")
        self.check_params(q, "q")
        self._check_belief(p.fields)
        self._check_belief(q.fields)
        hp, hq = p.fields["precision"], q.fields["precision"]
        diff = p.fields["precision_mean"] / hp - q.fields["precision_mean"] / hq
        ratio_minus_1 = hq / hp - 1.0  # v_p / v_q − 1
        with np.errstate(all="ignore"):
            value = 0.5 * (ratio_minus_1 - np.log1p(ratio_minus_1) + hq * diff * diff)
        value = np.maximum(_finite_result("kl", value), 0.0)
        return value if value.ndim else float(value)

    def mean(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        return belief.fields["precision_mean"] / belief.fields["precision"]

    def variance(self, belief: NaturalParams) -> np.ndarray:
        self._check_belief(belief.fields)
        return 1.0 / belief.fields["precision"]

    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> np.ndarray:
        fields = belief.fields  # mean h1 / h2 and variance 1 / h2, as mean() and variance()
        h1, h2 = fields["precision_mean"], fields["precision"]
        return rng.normal(h1 / h2, np.sqrt(1.0 / h2), size=size)

    def predictive_sample(
        self, belief: NaturalParams, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws observations from the posterior predictive N(m, v + noise_var)."""
        theta = self.sample(belief, rng, size)
        return rng.normal(theta, np.sqrt(self.noise_var))


class NormalGamma(_RealObservations):
    """θ = (μ, τ): τ ~ Gamma(alpha, rate beta), μ | τ ~ N(mean, 1 / (kappa τ)); each
    observation y ~ N(μ, 1 / τ).

    Coordinates (affine in the canonical natural parameters of
    ``T(θ) = (τμ, −τμ²/2, −τ, log τ)``):
    ``kappa_mean = κm``, ``kappa = κ``, ``beta_shifted = β + κm² / 2``, ``alpha = α``; the
    belief's density is ``∝ τ^(α − 1/2) exp(κm τμ − κ τμ² / 2 − (β + κm²/2) τ)``. A datum
    ``y_1..y_n`` adds ``(Σy, n, Σy² / 2, n / 2)`` and carries ``log h = −(n / 2) log 2π``.

    The predictive of one observation is Student-t with ``2α`` degrees of freedom, location
    ``m`` and scale ``sqrt(β (κ + 1) / (α κ))``.

    ``β`` is recovered as ``beta_shifted − kappa_mean² / (2 kappa)``; for data whose spread
    is tiny next to its magnitude (``Var y ≲ 1e-11 · E[y²]``, e.g. 1e8 ± 1) this difference
    loses its precision, and every use of such a belief (moments, sampling, ``A``, KL, the
    evidence) raises ``ValueError`` naming the precision loss; centre such data first.

    Args:
        mean: Prior location ``m`` of μ.
        kappa: Prior pseudo-count of μ (precision multiplier), > 0.
        alpha: Shape of τ's Gamma prior, > 0.
        beta: Rate of τ's Gamma prior, > 0, and above ``1e-11 · (beta + kappa · mean² / 2)``
            (so ``|mean| < ~4.5e5 · sqrt(beta / kappa)``): a prior beyond it would lose its
            precision like the data above, so it is refused with a ``ValueError``.

    Examples:
        >>> model = NormalGamma()
        >>> s = model.stats([0.3, -1.2, 0.8])
        >>> b = model.prior + s
        >>> b.mean.round(4).tolist()  # [E μ, E τ]
        [-0.025, 1.1998]
    """

    field_shapes = {"kappa_mean": (), "kappa": (), "beta_shifted": (), "alpha": ()}

    def __init__(
        self, mean: float = 0.0, kappa: float = 1.0, alpha: float = 1.0, beta: float = 1.0
    ):
        self.prior_mean = check_real("mean", mean)
        self.kappa = check_positive_real("kappa", kappa)
        self.alpha = check_positive_real("alpha", alpha)
        self.beta = check_positive_real("beta", beta)
        kappa_mean = self.kappa * self.prior_mean
        beta_shifted = self.beta + 0.5 * kappa_mean * self.prior_mean
        if not (math.isfinite(kappa_mean) and math.isfinite(beta_shifted)):
            raise ValueError(
                f"mean must be a finite number with kappa·mean²/2 + beta finite "
                f"(the prior's natural parameters overflow float64), got "
                f"mean={self.prior_mean!r}, kappa={self.kappa!r}"
            )
        fields = {
            "kappa_mean": np.float64(kappa_mean),
            "kappa": np.float64(self.kappa),
            "beta_shifted": np.float64(beta_shifted),
            "alpha": np.float64(self.alpha),
        }
        try:  # the prior itself must be usable (its moments, A, KL), as every belief must
            self._precise_beta(fields, self.standard_params(fields)[3])
        except ValueError:
            raise ValueError(
                f"mean={self.prior_mean!r} is too far from 0 for kappa={self.kappa!r} and "
                f"beta={self.beta!r}: beta must exceed {_BETA_RTOL:g} · (beta + kappa·mean²/2) "
                "for NormalGamma to recover it with precision (every use of the prior would "
                "raise); centre the data (a mean near 0) or raise beta"
            ) from None
        self.prior = NaturalParams(
            self,
            {
                "kappa_mean": kappa_mean,
                "kappa": self.kappa,
                "beta_shifted": beta_shifted,
                "alpha": self.alpha,
            },
        )

    def __repr__(self) -> str:
        return self._repr(mean=self.prior_mean, kappa=self.kappa, alpha=self.alpha, beta=self.beta)

    def _observation_stats(
        self, y: np.ndarray, axes: int | tuple[int, ...] | None, n: np.ndarray
    ) -> tuple[Fields, np.ndarray]:
        fields = {
            "kappa_mean": y.sum(axis=axes),
            "kappa": n,
            "beta_shifted": 0.5 * (y * y).sum(axis=axes),
            "alpha": 0.5 * n,
        }
        return fields, -0.5 * n * _LOG_2PI

    @staticmethod
    def standard_params(fields: Fields) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(m, κ, α, β)`` of a belief given in this family's coordinates."""
        kappa = fields["kappa"]
        m = fields["kappa_mean"] / kappa
        beta = fields["beta_shifted"] - 0.5 * fields["kappa_mean"] * m
        return m, kappa, fields["alpha"], beta

    @staticmethod
    def _precise_beta(fields: Fields, beta: np.ndarray) -> np.ndarray:
        """``β`` after checking the belief is proper and ``β`` kept its precision.

        ``β = beta_shifted − kappa_mean² / (2 kappa)`` is a difference; when it falls below
        ``1e-11 · beta_shifted`` it carries a relative rounding error above ~1e-4 and may come
        out as 0 or negative (data whose spread is tiny next to their magnitude), so a
        ``ValueError`` naming the precision loss is raised instead of returning ``E[τ] = inf``
        or a negative variance. A ``β`` clearly below zero is an improper belief.
        """
        bound = _BETA_RTOL * np.abs(fields["beta_shifted"])
        if np.all(beta > bound):
            return beta
        if np.any(beta < -bound):
            raise ValueError("belief beta (beta_shifted − kappa_mean² / (2 kappa)) must be > 0")
        raise ValueError(
            "NormalGamma belief lost its precision: beta = beta_shifted − kappa_mean² / "
            "(2 kappa) is below 1e-11 · beta_shifted, so E[τ] and the variances would be "
            "rounding noise (data whose spread is tiny next to their magnitude, e.g. 1e8 ± 1, "
            "or a prior mean far from 0 with a small beta); centre or rescale the data first"
        )

    def _check_belief(self, fields: Fields) -> None:
        kappa_mean, kappa = scalar_of(fields["kappa_mean"]), scalar_of(fields["kappa"])
        beta_shifted, alpha = scalar_of(fields["beta_shifted"]), scalar_of(fields["alpha"])
        if (
            kappa_mean is not None
            and kappa is not None
            and beta_shifted is not None
            and alpha is not None
            and kappa > 0
            and alpha > 0
        ):  # one belief: the array path's comparisons (standard_params, _precise_beta)
            rate = beta_shifted - 0.5 * kappa_mean * (kappa_mean / kappa)
            if rate > _BETA_RTOL * abs(beta_shifted):
                return  # a proper belief; anything else raises below
        if np.any(~(fields["kappa"] > 0)):
            raise ValueError("belief kappa must be > 0")
        if np.any(~(fields["alpha"] > 0)):
            raise ValueError("belief alpha must be > 0")
        _, _, _, beta = self.standard_params(fields)
        self._precise_beta(fields, beta)

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        _, kappa, alpha, beta = self.standard_params(fields)
        beta = self._precise_beta(fields, beta)
        return gammaln(alpha) - alpha * np.log(beta) + 0.5 * _LOG_2PI - 0.5 * np.log(kappa)

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        m, kappa, alpha, beta = self.standard_params(fields)
        beta = self._precise_beta(fields, beta)
        e_tau = alpha / beta
        return {
            "kappa_mean": m * e_tau,  # E[τμ]
            "kappa": -0.5 * (1.0 / kappa + m * m * e_tau),  # E[−τμ²/2]
            "beta_shifted": -e_tau,  # E[−τ]
            "alpha": digamma(alpha) - np.log(beta),  # E[log τ]
        }

    def mean(self, belief: NaturalParams) -> np.ndarray:
        """``[E μ, E τ]`` along a trailing axis of length 2.

        For ``α <= 1/2`` the marginal of μ (Student-t with ``2α`` degrees of freedom) has no
        mean; its location ``m`` (median and mode) is reported instead.
        """
        self._check_belief(belief.fields)
        m, _, alpha, beta = self.standard_params(belief.fields)
        m, e_tau = np.broadcast_arrays(m, alpha / beta)
        return np.stack([m, e_tau], axis=-1)

    def variance(self, belief: NaturalParams) -> np.ndarray:
        """``[Var μ, Var τ]`` along a trailing axis; ``Var μ`` is infinite for ``α <= 1``."""
        self._check_belief(belief.fields)
        _, kappa, alpha, beta = self.standard_params(belief.fields)
        with np.errstate(divide="ignore", invalid="ignore"):
            var_mu = np.where(alpha > 1.0, beta / (kappa * (alpha - 1.0)), np.inf)
        var_mu, var_tau = np.broadcast_arrays(var_mu, alpha / beta / beta)
        return np.stack([var_mu, var_tau], axis=-1)

    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> np.ndarray:
        """Draws ``(μ, τ)`` pairs, shape ``size + (2,)`` (``size`` as in numpy).

        Raises:
            ValueError: For a belief with ``kappa <= 0`` or ``alpha <= 0`` (no distribution).
        """
        m, kappa, alpha, beta = self.standard_params(belief.fields)
        beta = self._precise_beta(belief.fields, beta)
        tau = rng.gamma(alpha, 1.0 / beta, size=size)
        mu = rng.normal(m, 1.0 / np.sqrt(kappa * tau))
        return np.stack([mu, tau], axis=-1)

    def predictive_sample(
        self, belief: NaturalParams, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws observations from the Student-t posterior predictive."""
        theta = np.asarray(self.sample(belief, rng, size))
        return rng.normal(theta[..., 0], 1.0 / np.sqrt(theta[..., 1]))
