"""Bayesian linear regression with matrix-valued weights: known and unknown noise variance.

Both families model ``dim_out`` outputs that share their inputs,
``Y = X Mᵀ + E`` with ``X`` of shape ``(n, dim_in)``, ``Y`` of shape ``(n, dim_out)`` and
``M`` of shape ``(dim_out, dim_in)``. The rows ``m_i`` of ``M`` are independent a priori
with one shared prior precision ``Λ0`` and means ``M0``, so every belief keeps one
``(dim_in, dim_in)`` precision matrix for all outputs (App. D.1–D.2 of the paper).

Everything is computed from batched Cholesky factors and triangular solves (never an
explicit inverse in ``A``, the log marginal likelihood or the KL divergence) and every
method evaluates over the leading batch axes of a :class:`NaturalParams`, so a readout
selector scores many candidate beliefs in one call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bam_rl.checks import as_float_array, check_int, check_memory, check_positive_real
from bam_rl.families.base import (
    ConjugateFamily,
    Fields,
    NaturalParams,
    Size,
    _finite_result,
    make_stats,
)
from bam_rl.families.linalg import (
    Datum,
    EvidenceTerms,
    Solved,
    cholesky,
    covariance,
    datum_from_stats,
    evidence_terms,
    frobenius_columns,
    frobenius_sq,
    inverse_factor,
    logdet,
    size_tuple,
    solve_lower,
)

__all__ = ["BayesianLinearRegression", "LinearRegressionFamily"]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Relative tolerance on ``|Λ − Λᵀ|`` accepted for a belief's precision matrix.
_SYMMETRY_RTOL = 1e-8


# --------------------------------------------------------------------------------- validation
def _check_symmetric(name: str, matrix: np.ndarray) -> None:
    asym = np.abs(matrix - np.swapaxes(matrix, -1, -2)).max(axis=(-2, -1), initial=0.0)
    scale = np.abs(matrix).max(axis=(-2, -1), initial=0.0)
    if np.any(asym > _SYMMETRY_RTOL * scale):
        raise ValueError(f"{name} must be symmetric")


def _prior_precision_matrix(value: Any, dim: int) -> np.ndarray:
    """``λ`` → ``λI``, ``(d,)`` → diagonal, ``(d, d)`` → checked symmetric positive definite."""
    array = as_float_array("prior_precision", value)
    if array.ndim == 0 or array.shape == (dim,):
        if np.any(array <= 0):
            raise ValueError(f"prior_precision must be > 0, got {value!r}")
        return np.diag(np.broadcast_to(array, (dim,))).astype(np.float64)
    if array.shape != (dim, dim):
        raise ValueError(
            f"prior_precision must be a scalar, shape ({dim},) or ({dim}, {dim}), "
            f"got shape {array.shape}"
        )
    _check_symmetric("prior_precision", array)
    matrix = 0.5 * (array + array.T)
    cholesky(matrix, "prior_precision")
    return matrix


def _prior_mean_matrix(value: Any, dim_out: int, dim_in: int) -> np.ndarray:
    array = as_float_array("prior_mean", value)
    if array.ndim == 0:
        return np.full((dim_out, dim_in), float(array))
    if array.shape != (dim_out, dim_in):
        raise ValueError(
            f"prior_mean must be a scalar or have shape ({dim_out}, {dim_in}) "
            f"= (dim_out, dim_in), got shape {array.shape}"
        )
    return array.copy()


def _describe(value: Any) -> str:
    array = np.asarray(value)
    return f"{float(array):g}" if array.ndim == 0 else f"<array {array.shape}>"


class LinearRegressionFamily(ConjugateFamily):
    """Shared data parsing and linear algebra for both regression families."""

    dim_in: int
    dim_out: int
    #: The family's own settings, after ``prior_precision`` in its ``repr`` (numbers, ``:g``).
    _REPR_SETTINGS: tuple[str, ...] = ()

    def __repr__(self) -> str:
        settings = "".join(f", {name}={getattr(self, name):g}" for name in self._REPR_SETTINGS)
        return (
            f"{type(self).__name__}(dim_in={self.dim_in}, dim_out={self.dim_out}, "
            f"prior_precision={self._precision_repr}{settings})"
        )

    def _setup(self, dim_in: Any, dim_out: Any, prior_precision: Any, prior_mean: Any) -> None:
        self.dim_in = check_int("dim_in", dim_in)
        self.dim_out = check_int("dim_out", dim_out)
        # the prior's (dim_in, dim_in) precision and its Cholesky check, the (dim_out, dim_in)
        # mean and B: measured 16 bytes per precision entry and 17 per mean entry at the peak
        check_memory(
            f"dim_in = {self.dim_in} with dim_out = {self.dim_out}",
            24 * self.dim_in * (self.dim_in + self.dim_out),
        )
        self.prior_precision = _prior_precision_matrix(prior_precision, self.dim_in)
        self.prior_mean = _prior_mean_matrix(prior_mean, self.dim_out, self.dim_in)
        self._precision_repr = _describe(prior_precision)

    def _data(self, X: Any, Y: Any, axis: Any = None) -> tuple[np.ndarray, np.ndarray, int]:
        """Validates ``X (..., n, dim_in)``, ``Y (..., n, dim_out)``; returns them and the rows
        per datum (``axis=()`` makes every row its own datum: a trailing batch axis ``n``)."""
        X = as_float_array("X", X)
        Y = as_float_array("Y", Y)
        d, p = self.dim_in, self.dim_out
        if X.ndim < 2 or X.shape[-1] != d:
            raise ValueError(f"X must have shape (..., n, {d}) = (..., n, dim_in), got {X.shape}")
        if p == 1 and Y.ndim == X.ndim - 1:
            Y = Y[..., None]
        if Y.ndim < 2 or Y.shape[-1] != p:
            raise ValueError(f"Y must have shape (..., n, {p}) = (..., n, dim_out), got {Y.shape}")
        if X.shape[-2] != Y.shape[-2]:
            raise ValueError(
                f"X and Y must have the same number of rows, got "
                f"{X.shape[-2]} (X) and {Y.shape[-2]} (Y)"
            )
        try:
            np.broadcast_shapes(X.shape[:-2], Y.shape[:-2])
        except ValueError as error:
            raise ValueError(
                f"batch axes of X {X.shape} and Y {Y.shape} do not broadcast"
            ) from error
        if axis is None:
            return X, Y, X.shape[-2]
        if isinstance(axis, tuple) and not axis:
            return X[..., None, :], Y[..., None, :], 1
        raise ValueError(
            f"axis must be None (sum the rows) or () (one datum per row), got {axis!r}"
        )

    @staticmethod
    def _moments(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``XᵀX`` (exactly symmetric), ``XᵀY`` and ``tr(YᵀY)``, summed over rows."""
        Xt = np.swapaxes(X, -1, -2)
        xx = Xt @ X
        xx = 0.5 * (xx + np.swapaxes(xx, -1, -2))
        return xx, Xt @ Y, np.einsum("...ij,...ij->...", Y, Y)

    def stats(self, X: Any, Y: Any, *, axis: tuple[()] | None = None) -> NaturalParams:
        """Sufficient statistics of the rows of ``(X, Y)``, summed into one datum.

        Args:
            X: Inputs, shape ``(n, dim_in)`` or ``(..., n, dim_in)`` (one datum per leading
                index).
            Y: Outputs, shape ``(..., n, dim_out)``; ``(..., n)`` is accepted when
                ``dim_out == 1``. Leading axes broadcast against those of ``X``.
            axis: ``None`` (default) sums the rows of each leading index into one datum;
                ``()`` keeps every row as its own datum (batch shape ``(..., n)``).

        Raises:
            ValueError: On shape mismatches, non-finite entries or another ``axis``.
        """
        X, Y, n = self._data(X, Y, axis)
        with np.errstate(over="ignore", invalid="ignore"):
            xx, xy, yy = self._moments(X, Y)
        return self._stats_from_moments(xx, xy, yy, n)

    def stats_from_moments(self, gram: Any, cross: Any, yy: Any, n: Any) -> NaturalParams:
        """Statistics of one datum from its moments, as :meth:`stats` computes them from the
        rows: ``gram = XᵀX`` ``(..., dim_in, dim_in)``, ``cross = XᵀY``
        ``(..., dim_in, dim_out)``, ``yy = tr(YᵀY)`` and ``n`` rows (for data summarised
        elsewhere, e.g. the per-domain moments of rotated MNIST).

        Raises:
            ValueError: Naming the argument, for a wrong shape, a non-finite entry, a
                non-symmetric ``gram`` or a negative ``yy`` or ``n``.
        """
        d, p = self.dim_in, self.dim_out
        gram, cross = as_float_array("gram", gram), as_float_array("cross", cross)
        yy, n = as_float_array("yy", yy), as_float_array("n", n)
        if gram.shape[-2:] != (d, d) or cross.shape[-2:] != (d, p):
            raise ValueError(
                f"gram and cross must have shapes (..., {d}, {d}) and (..., {d}, {p}), got "
                f"{gram.shape} and {cross.shape}"
            )
        if not np.array_equal(gram, np.swapaxes(gram, -1, -2)):
            raise ValueError("gram must be symmetric (XᵀX)")
        if np.any(yy < 0) or np.any(n < 0):
            raise ValueError(f"yy and n must be >= 0, got {yy} and {n}")
        return self._stats_from_moments(gram, cross, yy, n)

    def _stats_from_moments(
        self, xx: np.ndarray, xy: np.ndarray, yy: np.ndarray, n: Any
    ) -> NaturalParams:
        raise NotImplementedError  # pragma: no cover - both families define it

    def _check_matrices(self, fields: Fields) -> None:
        precision = fields["precision"]
        if not np.all(np.isfinite(precision)) or not np.all(np.isfinite(fields["B"])):
            raise ValueError("belief precision and B must be finite")
        _check_symmetric("belief precision", precision)

    def _validated(self, belief: NaturalParams) -> Fields:
        self.check_params(belief)
        self._check_belief(belief.fields)
        return belief.fields

    @staticmethod
    def _solve(fields: Fields, *, mean: bool = False) -> Solved:
        """Cholesky factor ``L`` of ``Λ``, ``log|Λ|``, ``tr(Bᵀ Λ⁻¹ B) = ‖L⁻¹B‖²`` and, when
        asked, the posterior mean ``Λ⁻¹B`` (shape ``(..., dim_in, dim_out)``)."""
        factor = cholesky(fields["precision"])
        whitened = solve_lower(factor, fields["B"])
        posterior_mean = solve_lower(factor, whitened, transpose=True) if mean else None
        return Solved(factor, logdet(factor), frobenius_sq(whitened), posterior_mean)

    def _gaussian_kl_terms(self, p: Solved, q: Solved) -> tuple[np.ndarray, np.ndarray]:
        """The two parts of ``2·Σ_i KL(N(m_i^p, Λp⁻¹) ‖ N(m_i^q, Λq⁻¹))``.

        Returns ``p·tr(Λq Λp⁻¹) − p·d + p·log(|Λp|/|Λq|)`` and the quadratic part
        ``Σ_i δ_iᵀ Λq δ_i`` (``δ = M_q − M_p``), separately because the NIG scales the
        latter by ``E_p[1/σ²]``. Both solves must carry their means.
        """
        trace = frobenius_sq(solve_lower(p.factor, q.factor))  # tr(Λq Λp⁻¹)
        delta = q.posterior_mean - p.posterior_mean
        quad = frobenius_sq(np.swapaxes(q.factor, -1, -2) @ delta)  # Σ_i δ_iᵀ Λq δ_i
        return self.dim_out * (trace - self.dim_in + p.logdet - q.logdet), quad

    def _standard_draws(
        self, factor: np.ndarray, rng: np.random.Generator, shape: tuple[int, ...]
    ) -> np.ndarray:
        """``(L⁻ᵀ Z)ᵀ`` with ``Z`` standard normal, shape ``shape + (dim_out, dim_in)``."""
        z = rng.standard_normal((*shape, self.dim_in, self.dim_out))
        return np.swapaxes(solve_lower(factor, z, transpose=True), -1, -2)

    def _predictive_quadratic(self, factor: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``x Λ⁻¹ xᵀ`` for every row of ``X``, shape ``(..., n)``."""
        whitened = solve_lower(factor, np.swapaxes(X, -1, -2))
        return np.einsum("...ij,...ij->...j", whitened, whitened)

    # ---------------------------------------------------------------- evidence
    def prepare_datum(self, s: NaturalParams) -> Datum:
        """Reduces one datum's statistics to ``r`` rows (:class:`Datum`), once per datum.

        Raises:
            ValueError: If ``s`` is batched or from another family.
        """
        if isinstance(s, Datum):
            return s
        self.check_params(s, "s")
        if s.batch_shape != ():
            raise ValueError(f"s must be a single datum (batch shape ()), got {s.batch_shape}")
        return datum_from_stats(s)

    def log_marginal_fields(self, fields: Fields, datum: Any) -> np.ndarray:
        """``log p(D | η)`` for raw belief fields (batched, unchecked) in a stable form.

        ``datum`` is a :class:`Datum` from :meth:`prepare_datum` or unbatched statistics.
        Instead of ``A(η + s) − A(η)``, which subtracts two numbers of the size of
        ``tr(YᵀY)/σ²`` and loses every digit for small noise and ill-conditioned ``Λ``, the
        evidence is assembled from :func:`evidence_terms` (the datum's ``r × r`` predictive
        covariance and its residuals under the belief).
        """
        datum = self.prepare_datum(datum)
        terms = evidence_terms(fields["precision"], fields["B"], datum)
        return self._evidence(fields, datum, terms)

    def log_marginal(self, belief: NaturalParams, s: NaturalParams) -> np.ndarray | float:
        """``log p(D | belief)``; broadcasts over batches (see :meth:`log_marginal_fields`).

        Returns a float for unbatched inputs, else an array of the broadcast batch shape.
        """
        self.check_params(belief)
        self.check_params(s, "s")
        self._check_belief(belief.fields)
        if s.batch_shape == ():
            value = self.log_marginal_fields(belief.fields, s)
        else:
            batch = np.broadcast_shapes(belief.batch_shape, s.batch_shape)
            beliefs, data = belief.broadcast_to(batch), s.broadcast_to(batch)
            value = np.empty(batch)
            for index in np.ndindex(*batch):
                value[index] = self.log_marginal_fields(beliefs[index].fields, data[index].copy())
        value = _finite_result("log_marginal", value)
        return value if value.ndim else float(value)

    def _evidence(self, fields: Fields, datum: Datum, terms: EvidenceTerms) -> np.ndarray:
        raise NotImplementedError

    def _broadcast_predictive(
        self, belief: NaturalParams, X: np.ndarray, mean: np.ndarray | None, spread: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The predictive's location ``X @ mean`` and ``spread`` (a variance or scale per row),
        broadcast to the batch: shapes ``(..., n, dim_out)`` and ``(..., n)``, copies.
        ``mean`` is a solve's (``_solve(..., mean=True)``, which always gives one)."""
        if mean is None:
            raise ValueError("mean: the posterior mean was not solved for (mean=True)")
        batch = np.broadcast_shapes(belief.batch_shape, X.shape[:-2])
        n = X.shape[-2]
        return (
            np.broadcast_to(X @ mean, (*batch, n, self.dim_out)).copy(),
            np.broadcast_to(spread, (*batch, n)).copy(),
        )

    def _check_inputs(self, X: Any) -> np.ndarray:
        X = as_float_array("X", X)
        if X.ndim < 2 or X.shape[-1] != self.dim_in:
            raise ValueError(
                f"X must have shape (..., n, {self.dim_in}) = (..., n, dim_in), got {X.shape}"
            )
        return X


# -------------------------------------------------------------------------- known noise
class BayesianLinearRegression(LinearRegressionFamily):
    """Matrix-weight linear regression with known noise variance.

    Model: rows ``m_i ~ N(m0_i, Λ0⁻¹)`` independently (``i < dim_out``), and every row of
    data ``y = M x + e`` with ``e ~ N(0, σ² I)``.

    Coordinates: ``precision`` ``Λ`` (``dim_in × dim_in``) and ``B`` (``dim_in × dim_out``),
    the belief's density over ``M`` being ``∝ exp(tr(M B) − ½ tr(M Λ Mᵀ))``; the prior is
    ``(Λ0, Λ0 M0ᵀ)``. A datum ``(X, Y)`` adds ``(XᵀX/σ², XᵀY/σ²)`` and carries
    ``log h = −tr(YᵀY)/(2σ²) − (n·dim_out/2)·log(2πσ²)``. The log-normaliser is
    ``A(Λ, B) = ½ tr(Bᵀ Λ⁻¹ B) − (dim_out/2) log|Λ| + (dim_out·dim_in/2) log 2π``.

    Args:
        dim_in: Number of inputs (features) ``d``.
        dim_out: Number of outputs ``p``.
        prior_precision: ``Λ0``: a scalar ``λ`` (``λI``), a ``(d,)`` vector (diagonal) or a
            symmetric positive-definite ``(d, d)`` matrix, shared by every row of ``M``.
        noise_var: Known observation noise variance ``σ² > 0``.
        prior_mean: ``M0``: a scalar (every entry) or a ``(dim_out, dim_in)`` matrix.

    Examples:
        >>> model = BayesianLinearRegression(dim_in=2, dim_out=1, noise_var=0.5)
        >>> s = model.stats([[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]])
        >>> posterior = model.prior + s
        >>> np.round(posterior.mean, 4)  # Λ = 3I, B = 2Xᵀy
        array([[0.6667, 1.3333]])
        >>> round(model.log_marginal(model.prior, s), 6)  # y_k ~ N(0, 1 + 0.5) independently
        -3.910009
    """

    # the statistics are scaled by 1/σ²: models with different noise variances cannot mix
    _SIGNATURE_SETTINGS = ("noise_var",)
    _REPR_SETTINGS = ("noise_var",)

    def __init__(
        self,
        dim_in: int,
        dim_out: int,
        prior_precision: Any = 1.0,
        noise_var: float = 1.0,
        prior_mean: Any = 0.0,
    ):
        self._setup(dim_in, dim_out, prior_precision, prior_mean)
        self.noise_var = check_positive_real("noise_var", noise_var)
        self.field_shapes = {
            "precision": (self.dim_in, self.dim_in),
            "B": (self.dim_in, self.dim_out),
        }
        self.prior = NaturalParams(
            self, {"precision": self.prior_precision, "B": self.prior_precision @ self.prior_mean.T}
        )

    def _stats_from_moments(
        self, xx: np.ndarray, xy: np.ndarray, yy: np.ndarray, n: Any
    ) -> NaturalParams:
        noise = self.noise_var
        with np.errstate(over="ignore", invalid="ignore"):
            log_h = -0.5 * yy / noise - 0.5 * n * self.dim_out * (_LOG_2PI + np.log(noise))
            fields = {"precision": xx / noise, "B": xy / noise}
        return make_stats(self, "X and Y", fields, log_h)

    def _check_belief(self, fields: Fields) -> None:
        self._check_matrices(fields)

    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        solved = self._solve(fields)
        p, d = self.dim_out, self.dim_in
        return 0.5 * solved.quad - 0.5 * p * solved.logdet + 0.5 * p * d * _LOG_2PI

    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        solved = self._solve(fields, mean=True)
        cov = covariance(solved.factor)
        outer = solved.posterior_mean @ np.swapaxes(solved.posterior_mean, -1, -2)  # Λ⁻¹ B Bᵀ Λ⁻¹
        return {"precision": -0.5 * (self.dim_out * cov + outer), "B": solved.posterior_mean}

    def _evidence(self, fields: Fields, datum: Datum, terms: EvidenceTerms) -> np.ndarray:
        # log h + ½‖c‖² − (p/2) log|K| − ½ tr(EᵀK⁻¹E): log h + ½‖c‖² cancels only the part of
        # tr(YᵀY)/σ² outside the datum's row space, once per datum
        return (
            datum.stats.log_h
            + 0.5 * datum.coef_sq
            - 0.5 * self.dim_out * terms.logdet_ratio
            - 0.5 * terms.residual
        )

    def kl(self, p: NaturalParams, q: NaturalParams) -> np.ndarray | float:
        """``KL(p ‖ q)`` in closed form, ``Σ_i KL(N(m_i, Λp⁻¹) ‖ N(m0_i, Λq⁻¹))``; batched.

        ``½[p·tr(Λq Λp⁻¹) + Σ_i δ_iᵀ Λq δ_i − p·d + p·log(|Λp|/|Λq|)]`` with traces from
        triangular solves; rounding below zero is clipped to 0.
        """
        self.check_params(p, "p")
        self.check_params(q, "q")
        self._check_belief(p.fields)
        self._check_belief(q.fields)
        logs, quad = self._gaussian_kl_terms(
            self._solve(p.fields, mean=True), self._solve(q.fields, mean=True)
        )
        value = np.maximum(_finite_result("kl", 0.5 * (logs + quad)), 0.0)
        return value if value.ndim else float(value)

    def mean(self, belief: NaturalParams) -> np.ndarray:
        """Posterior mean of ``M``, shape ``batch + (dim_out, dim_in)``."""
        mean = self._solve(self._validated(belief), mean=True).posterior_mean
        shape = (*belief.batch_shape, self.dim_out, self.dim_in)
        return np.broadcast_to(np.swapaxes(mean, -1, -2), shape).copy()

    def variance(self, belief: NaturalParams) -> np.ndarray:
        """Marginal variance of every entry of ``M``, shape ``batch + (dim_out, dim_in)``."""
        fields = self._validated(belief)
        diag = frobenius_columns(inverse_factor(cholesky(fields["precision"])))
        shape = (*belief.batch_shape, self.dim_out, self.dim_in)
        return np.broadcast_to(diag[..., None, :], shape).copy()

    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> np.ndarray:
        """Draws ``M``: shape ``size + batch + (dim_out, dim_in)``; reuses the Cholesky factor."""
        solved = self._solve(self._validated(belief), mean=True)
        shape = (*size_tuple(size), *belief.batch_shape)
        return np.swapaxes(solved.posterior_mean, -1, -2) + self._standard_draws(
            solved.factor, rng, shape
        )

    def predict(self, belief: NaturalParams, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Posterior predictive of each row of ``X``: ``y ~ N(M̄ x, (σ² + x Λ⁻¹ xᵀ) I)``.

        Args:
            belief: A (batched) belief.
            X: Inputs, shape ``(..., n, dim_in)`` (leading axes broadcast with the belief's).

        Returns:
            ``(mean, variance)``: shapes ``(..., n, dim_out)`` and ``(..., n)``; the outputs
            of one row are independent with the same variance.
        """
        X = self._check_inputs(X)
        solved = self._solve(self._validated(belief), mean=True)
        variance = self.noise_var + self._predictive_quadratic(solved.factor, X)
        return self._broadcast_predictive(belief, X, solved.mean, variance)

    def predictive_sample(
        self, belief: NaturalParams, X: Any, rng: np.random.Generator, size: Size = None
    ) -> np.ndarray:
        """Draws outputs for inputs ``X (n, dim_in)``: ``M`` from the belief, then
        ``Y = X Mᵀ + E``; shape ``size + batch + (n, dim_out)``."""
        X = self._check_inputs(X)
        M = self.sample(belief, rng, size)
        mean = X @ np.swapaxes(M, -1, -2)
        return mean + np.sqrt(self.noise_var) * rng.standard_normal(mean.shape)
