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

from typing import Any, NamedTuple

import numpy as np
from scipy.linalg import lapack, solve_triangular
from scipy.special import digamma, gammaln

from bam_rl.checks import as_float_array, check_int, check_memory, check_positive_real
from bam_rl.families.base import (
    ConjugateFamily,
    Fields,
    NaturalParams,
    _finite_result,
    make_stats,
)

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Relative tolerance on ``|Λ − Λᵀ|`` accepted for a belief's precision matrix.
_SYMMETRY_RTOL = 1e-8


# ----------------------------------------------------------------------------- linear algebra
def _cholesky(precision: np.ndarray, name: str = "belief precision") -> np.ndarray:
    """Batched lower Cholesky factor; ``ValueError`` when a matrix is not positive definite."""
    try:
        return np.linalg.cholesky(precision)
    except np.linalg.LinAlgError as error:
        raise ValueError(f"{name} must be symmetric positive definite") from error


def _solve_lower(factor: np.ndarray, rhs: np.ndarray, *, transpose: bool = False) -> np.ndarray:
    """Solves ``L X = rhs`` (or ``Lᵀ X = rhs``) for lower-triangular ``L``; batched.

    ``factor`` has shape ``(..., d, d)`` and ``rhs`` shape ``(..., d, k)``; leading axes
    broadcast. A single factor solves every right-hand side in one LAPACK call; otherwise the
    batch is looped over (one ``O(d² k)`` call per entry, independent of the SciPy version).
    """
    d = factor.shape[-1]
    k = rhs.shape[-1]
    trans = 1 if transpose else 0
    if factor.ndim == 2:
        lead = rhs.shape[:-2]
        if not lead:
            return solve_triangular(factor, rhs, lower=True, trans=trans, check_finite=False)
        stacked = np.moveaxis(rhs, -2, 0).reshape(d, -1)
        solved = solve_triangular(factor, stacked, lower=True, trans=trans, check_finite=False)
        return np.moveaxis(solved.reshape((d, *lead, k)), 0, -2)
    batch = np.broadcast_shapes(factor.shape[:-2], rhs.shape[:-2])
    factors = np.broadcast_to(factor, (*batch, d, d)).reshape(-1, d, d)
    rhss = np.broadcast_to(rhs, (*batch, d, k)).reshape(-1, d, k)
    out = np.empty(rhss.shape)
    for i in range(out.shape[0]):
        out[i] = solve_triangular(factors[i], rhss[i], lower=True, trans=trans, check_finite=False)
    return out.reshape((*batch, d, k))


def _cho_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``Λ⁻¹ rhs`` from the lower Cholesky factor of ``Λ`` (two triangular solves)."""
    return _solve_lower(factor, _solve_lower(factor, rhs), transpose=True)


def _logdet(factor: np.ndarray) -> np.ndarray:
    """``log|Λ|`` from the lower Cholesky factor of ``Λ``."""
    return 2.0 * np.log(np.diagonal(factor, axis1=-2, axis2=-1)).sum(axis=-1)


def _frobenius_sq(matrix: np.ndarray) -> np.ndarray:
    return np.einsum("...ij,...ij->...", matrix, matrix)


def _inverse_factor(factor: np.ndarray) -> np.ndarray:
    """``L⁻¹`` (so that ``Λ⁻¹ = L⁻ᵀ L⁻¹``), for the covariance itself."""
    eye = np.eye(factor.shape[-1])
    return _solve_lower(factor, eye if factor.ndim == 2 else np.broadcast_to(eye, factor.shape))


def _covariance(factor: np.ndarray) -> np.ndarray:
    """``Λ⁻¹`` from the Cholesky factor (the posterior covariance of a row of ``M``)."""
    inv = _inverse_factor(factor)
    cov = np.swapaxes(inv, -1, -2) @ inv
    return 0.5 * (cov + np.swapaxes(cov, -1, -2))


def _size_tuple(size: int | tuple[int, ...] | None) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


class Datum(NamedTuple):
    """A datum's statistics prepared for stable evidence evaluations (see :meth:`prepare`).

    With the datum's precision statistic ``S`` (``XᵀX/σ²``, or ``XᵀX`` for the NIG) and its
    ``B`` statistic ``XᵀY/σ²`` (``XᵀY``), a pivoted Cholesky factorisation gives ``U``
    (``dim_in × r``, ``r`` the numerical rank of ``S``) with ``U Uᵀ = S`` and ``c``
    (``r × dim_out``) with ``U c = B``: the datum reduced to ``r`` rows.
    """

    stats: NaturalParams  # the datum's statistics
    factor: np.ndarray  # U, (dim_in, r)
    coef: np.ndarray  # c, (r, dim_out)
    rank: int  # r
    coef_sq: float  # ‖c‖²


def _pivoted_factor(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Rank-revealing Cholesky ``matrix = U Uᵀ``: returns ``U`` (``d × r``), the pivot order
    and ``r``. Trailing pivots below LAPACK's default tolerance (``d·ε·max diag``) are
    dropped, a perturbation of the size of the rounding already in ``matrix``."""
    d = matrix.shape[-1]
    if not np.any(matrix):
        return np.zeros((d, 0)), np.arange(d), 0
    factor, piv, rank, info = lapack.dpstrf(np.array(matrix, order="F"), lower=1, tol=-1.0)
    if info < 0:  # pragma: no cover - LAPACK argument error
        raise ValueError("pivoted Cholesky failed")
    order = piv[:d] - 1
    lower = np.tril(factor[:, :rank])
    u = np.empty((d, rank))
    u[order] = lower
    return u, order, int(rank)


def _prepare_datum(s: NaturalParams) -> Datum:
    """:class:`Datum` of one unbatched statistic (both regression families)."""
    u, order, rank = _pivoted_factor(s.fields["precision"])
    B = s.fields["B"]
    if rank == 0:
        coef = np.zeros((0, B.shape[-1]))
    else:
        lower = u[order[:rank]]  # the r × r lower-triangular block
        coef = solve_triangular(lower, B[order[:rank]], lower=True, check_finite=False)
    return Datum(s, u, coef, rank, float(np.sum(coef * coef)))


def low_rank_route(dim_in: int, rank: int) -> bool:
    """True when ``K = I + UᵀΛ⁻¹U`` (one factorisation of ``Λ`` per belief) is cheaper than
    factoring ``Λ + UUᵀ`` as well (``d²r + dr² + r³/3 < d³/3``)."""
    d, r = dim_in, rank
    return 3 * r * d * (d + r) + r**3 < d**3


class EvidenceTerms(NamedTuple):
    """Per-belief pieces of a datum's evidence (shapes: the belief batch)."""

    logdet_ratio: np.ndarray  # log|Λ + UUᵀ| − log|Λ| = log|K|
    residual: np.ndarray  # tr(Eᵀ K⁻¹ E), E = c − Uᵀ Λ⁻¹ B  (≥ 0)
    quad: np.ndarray  # tr(Bᵀ Λ⁻¹ B) of the belief


def evidence_terms(precision: np.ndarray, B: np.ndarray, datum: Datum) -> EvidenceTerms:
    """Stable evidence pieces of ``datum`` under beliefs ``(Λ, B)`` (batched, unchecked).

    ``E = c − UᵀM̄`` (``M̄ = Λ⁻¹B``) is the prior residual of the reduced datum in units of
    the noise, so nothing of the size of ``tr(YᵀY)/σ²`` is ever subtracted. Low-rank data use
    ``K = I + WᵀW`` (``W = L⁻¹U``, the matrix-determinant lemma and Woodbury: one Cholesky
    factorisation of ``Λ`` per belief); high-rank data factor ``Λ + S`` as well and use
    ``tr(EᵀK⁻¹E) = Σ E ∘ E'`` with ``E' = c − Uᵀ(Λ + S)⁻¹(B + B_s) = K⁻¹E``.
    """
    u, coef, rank = datum.factor, datum.coef, datum.rank
    batch = np.broadcast_shapes(precision.shape[:-2], B.shape[:-2])
    factor = _cholesky(precision)
    if rank == 0:
        whitened = _solve_lower(factor, B)
        zeros = np.zeros(batch)
        return EvidenceTerms(
            zeros, zeros.copy(), np.broadcast_to(_frobenius_sq(whitened), batch).copy()
        )
    d = precision.shape[-1]
    if low_rank_route(d, rank):
        rhs = np.concatenate(
            [np.broadcast_to(u, (*batch, d, rank)), np.broadcast_to(B, (*batch, *B.shape[-2:]))],
            axis=-1,
        )
        solved = _solve_lower(factor, rhs)
        w, z = solved[..., :rank], solved[..., rank:]
        wt = np.swapaxes(w, -1, -2)
        gram = wt @ w
        gram = 0.5 * (gram + np.swapaxes(gram, -1, -2))
        gram[..., np.arange(rank), np.arange(rank)] += 1.0
        k_factor = _cholesky(gram, "evidence matrix")
        residual = _solve_lower(k_factor, coef - wt @ z)
        return EvidenceTerms(_logdet(k_factor), _frobenius_sq(residual), _frobenius_sq(z))
    stats = datum.stats.fields
    post_factor = _cholesky(precision + stats["precision"])
    whitened = _solve_lower(factor, B)
    prior_mean = _solve_lower(factor, whitened, transpose=True)
    post_mean = _cho_solve(post_factor, B + stats["B"])
    ut = u.T
    prior_res = coef - ut @ prior_mean
    post_res = coef - ut @ post_mean
    residual = np.maximum(np.einsum("...ij,...ij->...", prior_res, post_res), 0.0)
    return EvidenceTerms(_logdet(post_factor) - _logdet(factor), residual, _frobenius_sq(whitened))


class _Solved(NamedTuple):
    """What one Cholesky factorisation of a belief's precision yields."""

    factor: np.ndarray  # L, with Λ = L Lᵀ
    logdet: np.ndarray  # log|Λ|
    quad: np.ndarray  # tr(Bᵀ Λ⁻¹ B)
    mean: np.ndarray | None  # Λ⁻¹ B, when requested

    @property
    def posterior_mean(self) -> np.ndarray:
        """``Λ⁻¹ B``; only for solves that asked for it (``mean=True``)."""
        if self.mean is None:
            raise ValueError("the mean was not solved for (use mean=True)")
        return self.mean


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
    _cholesky(matrix, "prior_precision")
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


class _LinearRegressionFamily(ConjugateFamily):
    """Shared data parsing and linear algebra for both regression families."""

    dim_in: int
    dim_out: int

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
    def _solve(fields: Fields, *, mean: bool = False) -> _Solved:
        """Cholesky factor ``L`` of ``Λ``, ``log|Λ|``, ``tr(Bᵀ Λ⁻¹ B) = ‖L⁻¹B‖²`` and, when
        asked, the posterior mean ``Λ⁻¹B`` (shape ``(..., dim_in, dim_out)``)."""
        factor = _cholesky(fields["precision"])
        whitened = _solve_lower(factor, fields["B"])
        posterior_mean = _solve_lower(factor, whitened, transpose=True) if mean else None
        return _Solved(factor, _logdet(factor), _frobenius_sq(whitened), posterior_mean)

    def _gaussian_kl_terms(self, p: _Solved, q: _Solved) -> tuple[np.ndarray, np.ndarray]:
        """The two parts of ``2·Σ_i KL(N(m_i^p, Λp⁻¹) ‖ N(m_i^q, Λq⁻¹))``.

        Returns ``p·tr(Λq Λp⁻¹) − p·d + p·log(|Λp|/|Λq|)`` and the quadratic part
        ``Σ_i δ_iᵀ Λq δ_i`` (``δ = M_q − M_p``), separately because the NIG scales the
        latter by ``E_p[1/σ²]``. Both solves must carry their means.
        """
        trace = _frobenius_sq(_solve_lower(p.factor, q.factor))  # tr(Λq Λp⁻¹)
        delta = q.posterior_mean - p.posterior_mean
        quad = _frobenius_sq(np.swapaxes(q.factor, -1, -2) @ delta)  # Σ_i δ_iᵀ Λq δ_i
        return self.dim_out * (trace - self.dim_in + p.logdet - q.logdet), quad

    def _standard_draws(
        self, factor: np.ndarray, rng: np.random.Generator, shape: tuple[int, ...]
    ) -> np.ndarray:
        """``(L⁻ᵀ Z)ᵀ`` with ``Z`` standard normal, shape ``shape + (dim_out, dim_in)``."""
        z = rng.standard_normal((*shape, self.dim_in, self.dim_out))
        return np.swapaxes(_solve_lower(factor, z, transpose=True), -1, -2)

    def _predictive_quadratic(self, factor: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``x Λ⁻¹ xᵀ`` for every row of ``X``, shape ``(..., n)``."""
        whitened = _solve_lower(factor, np.swapaxes(X, -1, -2))
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
        return _prepare_datum(s)

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

    def _check_inputs(self, X: Any) -> np.ndarray:
        X = as_float_array("X", X)
        if X.ndim < 2 or X.shape[-1] != self.dim_in:
            raise ValueError(
                f"X must have shape (..., n, {self.dim_in}) = (..., n, dim_in), got {X.shape}"
            )
        return X


# -------------------------------------------------------------------------- known noise
class BayesianLinearRegression(_LinearRegressionFamily):
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

    def __repr__(self) -> str:
        return (
            f"BayesianLinearRegression(dim_in={self.dim_in}, dim_out={self.dim_out}, "
            f"prior_precision={self._precision_repr}, noise_var={self.noise_var:g})"
        )

    def signature(self) -> tuple:
        # the statistics are scaled by 1/σ²: models with different noise variances cannot mix
        return (*super().signature(), ("noise_var", self.noise_var))

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
        cov = _covariance(solved.factor)
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
        diag = _frobenius_columns(_inverse_factor(_cholesky(fields["precision"])))
        shape = (*belief.batch_shape, self.dim_out, self.dim_in)
        return np.broadcast_to(diag[..., None, :], shape).copy()

    def sample(
        self,
        belief: NaturalParams,
        rng: np.random.Generator,
        size: int | tuple[int, ...] | None = None,
    ) -> np.ndarray:
        """Draws ``M``: shape ``size + batch + (dim_out, dim_in)``; reuses the Cholesky factor."""
        solved = self._solve(self._validated(belief), mean=True)
        shape = (*_size_tuple(size), *belief.batch_shape)
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
        batch = np.broadcast_shapes(belief.batch_shape, X.shape[:-2])
        n = X.shape[-2]
        variance = self.noise_var + self._predictive_quadratic(solved.factor, X)
        return (
            np.broadcast_to(X @ solved.mean, (*batch, n, self.dim_out)).copy(),
            np.broadcast_to(variance, (*batch, n)).copy(),
        )

    def predictive_sample(
        self,
        belief: NaturalParams,
        X: Any,
        rng: np.random.Generator,
        size: int | tuple[int, ...] | None = None,
    ) -> np.ndarray:
        """Draws outputs for inputs ``X (n, dim_in)``: ``M`` from the belief, then
        ``Y = X Mᵀ + E``; shape ``size + batch + (n, dim_out)``."""
        X = self._check_inputs(X)
        M = self.sample(belief, rng, size)
        mean = X @ np.swapaxes(M, -1, -2)
        return mean + np.sqrt(self.noise_var) * rng.standard_normal(mean.shape)


def _frobenius_columns(inverse_factor: np.ndarray) -> np.ndarray:
    """``diag(Λ⁻¹)`` from ``L⁻¹``: column sums of squares."""
    return np.einsum("...ij,...ij->...j", inverse_factor, inverse_factor)


# ------------------------------------------------------------------------ unknown noise
class BayesianLinearRegressionNIG(_LinearRegressionFamily):
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

    def __repr__(self) -> str:
        return (
            f"BayesianLinearRegressionNIG(dim_in={self.dim_in}, dim_out={self.dim_out}, "
            f"prior_precision={self._precision_repr}, a={self.a:g}, b={self.b:g})"
        )

    def stats(self, X: Any, Y: Any, *, axis: tuple[()] | None = None) -> NaturalParams:
        """Sufficient statistics of the rows of ``(X, Y)``, summed into one datum.

        Shapes and ``axis`` as for :meth:`BayesianLinearRegression.stats`.
        """
        X, Y, n = self._data(X, Y, axis)
        with np.errstate(over="ignore", invalid="ignore"):
            xx, xy, yy = self._moments(X, Y)
        return self._stats_from_moments(xx, xy, yy, n)

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
    ) -> tuple[_Solved, np.ndarray, np.ndarray]:
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
        cov = _covariance(solved.factor)
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
        diag = _frobenius_columns(_inverse_factor(solved.factor))
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

    def sample(
        self,
        belief: NaturalParams,
        rng: np.random.Generator,
        size: int | tuple[int, ...] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draws ``(M, σ²)`` jointly: shapes ``size + batch + (dim_out, dim_in)`` and
        ``size + batch``; ``σ² = b_n / Gamma(a, 1)``, then ``M | σ²`` from the factor."""
        solved, scale, a = self._with_scale(self._validated(belief), mean=True)
        batch = belief.batch_shape
        shape = (*_size_tuple(size), *batch)
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
        batch = np.broadcast_shapes(belief.batch_shape, X.shape[:-2])
        n = X.shape[-2]
        return (
            np.broadcast_to(X @ solved.mean, (*batch, n, self.dim_out)).copy(),
            np.broadcast_to(scale_sq, (*batch, n)).copy(),
            np.broadcast_to(2.0 * a, belief.batch_shape).copy(),
        )

    def predictive_sample(
        self,
        belief: NaturalParams,
        X: Any,
        rng: np.random.Generator,
        size: int | tuple[int, ...] | None = None,
    ) -> np.ndarray:
        """Draws outputs for inputs ``X (n, dim_in)``: ``(M, σ²)`` from the belief, then
        ``Y = X Mᵀ + E`` with ``E ~ N(0, σ² I)``; shape ``size + batch + (n, dim_out)``."""
        X = self._check_inputs(X)
        M, noise = self.sample(belief, rng, size)
        mean = X @ np.swapaxes(M, -1, -2)
        scale = np.sqrt(noise)[..., None, None]
        return mean + scale * rng.standard_normal(mean.shape)
