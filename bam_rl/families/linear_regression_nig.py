"""The Bayesian linear regression with unknown noise variance (Normal-inverse-gamma prior):
:class:`BayesianLinearRegressionNIG`, beside the known-noise family of
:mod:`bam_rl.families.linear_regression` whose base class it shares.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, gammaln

from bam_rl.checks import check_positive_real
from bam_rl.families.base import Fields, NaturalParams, Size, _finite_result, make_stats
from bam_rl.families.linalg import (
    Datum,
    EvidenceTerms,
    Solved,
    covariance,
    frobenius_columns,
    inverse_factor,
    size_tuple,
)
from bam_rl.families.linear_regression import LinearRegressionFamily

__all__ = ["BayesianLinearRegressionNIG"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class BayesianLinearRegressionNIG(LinearRegressionFamily):
    """Matrix-weight linear regression with unknown noise variance (Normal-inverse-gamma).

    Model: ``σ² ~ InvGamma(a, b)`` shared by every output; rows
    ``m_i | σ² ~ N(m0_i, σ² Λ0⁻¹)`` independently; ``y = M x + e``, ``e ~ N(0, σ² I)``.

    Coordinates (linear in the canonical natural parameters paired with
    ``(−MᵀM/(2σ²), Mᵀ/σ², −1/(2σ²), −log σ²)``): ``precision`` ``Λ``, ``B``, the scalar
    ``c`` and the shape ``a``; the prior is ``(Λ0, Λ0 M0ᵀ, 2b + tr(M0 Λ0 M0ᵀ), a)``. A datum
    ``(X, Y)`` adds ``(XᵀX, XᵀY, tr(YᵀY), n·dim_out/2)`` and carries
    ``log h = −(n·dim_out/2) log 2π``. With ``b_n = (c − tr(Bᵀ Λ⁻¹ B))/2`` (the posterior
    scale of σ²),
    ``A = (dim_out·dim_in/2) log 2π − (dim_out/2) log|Λ| + log Γ(a) − a log b_n``.

    Args:
        dim_in: Number of inputs ``d``.
        dim_out: Number of outputs ``p``.
        prior_precision: ``Λ0`` (scalar, ``(d,)`` diagonal or SPD ``(d, d)``), in units of σ².
        a: Inverse-gamma shape, > 0.
        b: Inverse-gamma scale, > 0.
        prior_mean: ``M0``: a scalar or a ``(dim_out, dim_in)`` matrix.
    """

    _REPR_SETTINGS = ("a", "b")

    def __init__(
        self,
        dim_in: int,
        dim_out: int,
        prior_precision: Any = 1.0,
        a: float = 1.0,
        b: float = 1.0,
        prior_mean: Any = 0.0,
    ):
        self._setup(dim_in, dim_out, prior_precision, prior_mean)
        self.a = check_positive_real("a", a)
        self.b = check_positive_real("b", b)
        d, p = self.dim_in, self.dim_out
        self.field_shapes = {"precision": (d, d), "B": (d, p), "c": (), "a": ()}
        b0 = self.prior_precision @ self.prior_mean.T
        c0 = 2.0 * self.b + float(np.sum(self.prior_mean.T * b0))
        self.prior = NaturalParams(
            self, {"precision": self.prior_precision, "B": b0, "c": c0, "a": self.a}
        )

    def _stats_from_moments(
        self, xx: np.ndarray, xy: np.ndarray, yy: np.ndarray, n: Any
    ) -> NaturalParams:
        half_count = 0.5 * n * self.dim_out
        return make_stats(
            self,
            "X and Y",
            {"precision": xx, "B": xy, "c": yy, "a": half_count},
            -half_count * _LOG_2PI,
        )

    def _check_belief(self, fields: Fields) -> None:
        self._check_matrices(fields)
        if not np.all(np.isfinite(fields["c"])):
            raise ValueError("belief c must be finite")
        if not np.all(np.isfinite(fields["a"])) or np.any(fields["a"] <= 0):
            raise ValueError("belief a must be > 0")

    def _with_scale(
        self, fields: Fields, *, mean: bool = False
    ) -> tuple[Solved, np.ndarray, np.ndarray]:
        """Factorisation, ``b_n = (c − tr(BᵀΛ⁻¹B))/2`` (checked > 0) and ``a``, broadcast."""
        solved = self._solve(fields, mean=mean)
        scale = 0.5 * (fields["c"] - solved.quad)
        if np.any(scale <= 0):
            raise ValueError("belief c must exceed tr(Bᵀ Λ⁻¹ B) (non-positive noise scale)")
        scale, a = np.broadcast_arrays(scale, fields["a"])
        return solved, scale, a

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        solved, scale, a = self._with_scale(fields)
        p, d = self.dim_out, self.dim_in
        return 0.5 * p * d * _LOG_2PI - 0.5 * p * solved.logdet + gammaln(a) - a * np.log(scale)

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        solved, scale, a = self._with_scale(fields, mean=True)
        mean = solved.posterior_mean
        ratio = a / scale  # E[1/σ²]
        r = ratio[..., None, None]
        cov = covariance(solved.factor)
        outer = mean @ np.swapaxes(mean, -1, -2)
        return {
            "precision": -0.5 * (self.dim_out * cov + r * outer),
            "B": r * mean,
            "c": -0.5 * ratio,
            "a": digamma(a) - np.log(scale),
        }

    def _evidence(self, fields: Fields, datum: Datum, terms: EvidenceTerms) -> np.ndarray:
        # b_n' = b_n + ½[(tr(YᵀY) − ‖c‖²) + tr(EᵀK⁻¹E)]: both increments are >= 0 and small
        stats = datum.stats.fields
        scale = 0.5 * (fields["c"] - terms.quad)
        if np.any(scale <= 0):
            raise ValueError("belief c must exceed tr(Bᵀ Λ⁻¹ B) (non-positive noise scale)")
        outside = max(float(stats["c"]) - datum.coef_sq, 0.0)
        post_scale = scale + 0.5 * (outside + terms.residual)
        a = fields["a"]
        post_a = a + stats["a"]
        return (
            datum.stats.log_h
            - 0.5 * self.dim_out * terms.logdet_ratio
            + gammaln(post_a)
            - gammaln(a)
            + a * np.log(scale)
            - post_a * np.log(post_scale)
        )

    def kl(self, p: NaturalParams, q: NaturalParams) -> np.ndarray | float:
        """``KL(p ‖ q)`` in closed form over ``(M, σ²)``; batched.

        ``KL(IG(a_p, b_p) ‖ IG(a_q, b_q)) + ½[p·tr(Λq Λp⁻¹) + (a_p/b_p) Σ_i δ_iᵀ Λq δ_i −
        p·d + p·log(|Λp|/|Λq|)]``; rounding below zero is clipped to 0.
        """
        self.check_params(p, "p")
        self.check_params(q, "q")
        self._check_belief(p.fields)
        self._check_belief(q.fields)
        solved_p, b_p, a_p = self._with_scale(p.fields, mean=True)
        solved_q, b_q, a_q = self._with_scale(q.fields, mean=True)
        logs, quad = self._gaussian_kl_terms(solved_p, solved_q)
        gamma_kl = (
            (a_p - a_q) * digamma(a_p)
            - gammaln(a_p)
            + gammaln(a_q)
            + a_q * (np.log(b_p) - np.log(b_q))
            + a_p * (b_q - b_p) / b_p
        )
        value = np.maximum(_finite_result("kl", gamma_kl + 0.5 * (logs + (a_p / b_p) * quad)), 0.0)
        return value if value.ndim else float(value)

    def mean(self, belief: NaturalParams) -> tuple[np.ndarray, np.ndarray]:
        """``(E[M], E[σ²])``: shapes ``batch + (dim_out, dim_in)`` and ``batch``.

        ``E[σ²] = b_n/(a − 1)`` is ``inf`` where ``a <= 1``.
        """
        solved, scale, a = self._with_scale(self._validated(belief), mean=True)
        batch = belief.batch_shape
        noise = np.where(a > 1, scale / np.where(a > 1, a - 1, 1.0), np.inf)
        mean = np.swapaxes(solved.posterior_mean, -1, -2)
        return (
            np.broadcast_to(mean, (*batch, self.dim_out, self.dim_in)).copy(),
            np.broadcast_to(noise, batch).copy(),
        )

    def variance(self, belief: NaturalParams) -> tuple[np.ndarray, np.ndarray]:
        """``(Var[M], Var[σ²])`` element-wise: ``b_n/(a−1)·diag(Λ⁻¹)`` per row (``inf`` where
        ``a <= 1``) and ``b_n²/((a−1)²(a−2))`` (``inf`` where ``a <= 2``)."""
        solved, scale, a = self._with_scale(self._validated(belief))
        diag = frobenius_columns(inverse_factor(solved.factor))
        safe1 = np.where(a > 1, a - 1, 1.0)
        safe2 = np.where(a > 2, a - 2, 1.0)
        noise_mean = np.where(a > 1, scale / safe1, np.inf)
        noise_var = np.where(a > 2, scale**2 / (safe1**2 * safe2), np.inf)
        batch = belief.batch_shape
        matrix = noise_mean[..., None, None] * diag[..., None, :]
        return (
            np.broadcast_to(matrix, (*batch, self.dim_out, self.dim_in)).copy(),
            np.broadcast_to(noise_var, batch).copy(),
        )

    def _sample(
        self, belief: NaturalParams, rng: np.random.Generator, size: Size
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draws ``(M, σ²)`` jointly: shapes ``size + batch + (dim_out, dim_in)`` and
        ``size + batch``; ``σ² = b_n / Gamma(a, 1)``, then ``M | σ²`` from the factor."""
        solved, scale, a = self._with_scale(self._validated(belief), mean=True)
        batch = belief.batch_shape
        shape = (*size_tuple(size), *batch)
        noise = np.broadcast_to(scale, batch) / rng.gamma(np.broadcast_to(a, batch), size=shape)
        draws = self._standard_draws(solved.factor, rng, shape)
        mean = np.swapaxes(solved.posterior_mean, -1, -2)
        return mean + np.sqrt(noise)[..., None, None] * draws, noise

    def predict(self, belief: NaturalParams, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Posterior predictive of one row: ``y ~ t_{2a}(M̄ x, (b_n/a)(1 + x Λ⁻¹ xᵀ) I)``.

        Args:
            belief: A (batched) belief.
            X: Inputs, shape ``(..., n, dim_in)``.

        Returns:
            ``(loc, scale_sq, df)``: shapes ``(..., n, dim_out)``, ``(..., n)`` and ``batch``.
            Each row's outputs are jointly multivariate-t (they share σ²) with shape matrix
            ``scale_sq · I``; different rows are not independent.
        """
        X = self._check_inputs(X)
        solved, scale, a = self._with_scale(self._validated(belief), mean=True)
        quad = self._predictive_quadratic(solved.factor, X)
        scale_sq = (scale / a)[..., None] * (1.0 + quad)
        mean, scale_sq = self._broadcast_predictive(belief, X, solved.mean, scale_sq)
        return mean, scale_sq, np.broadcast_to(2.0 * a, belief.batch_shape).copy()

    def predictive_sample(
        self, belief: NaturalParams, X: Any, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws outputs for inputs ``X (n, dim_in)``: ``(M, σ²)`` from the belief, then
        ``Y = X Mᵀ + E`` with ``E ~ N(0, σ² I)``; shape ``size + batch + (n, dim_out)``."""
        X = self._check_inputs(X)
        M, noise = self.sample(belief, rng, size)
        mean = X @ np.swapaxes(M, -1, -2)
        scale = np.sqrt(noise)[..., None, None]
        return mean + scale * rng.standard_normal(mean.shape)
