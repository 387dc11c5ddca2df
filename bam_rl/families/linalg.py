"""The linear algebra of the Bayesian-linear-regression families: batched Cholesky factors and
triangular solves (never an explicit inverse), the reduced new datum of a readout
(:class:`Datum`, a pivoted Cholesky factor of its precision statistic) and the evidence of
many candidate priors from residuals (:func:`evidence_terms`), with the low-rank route of the
matrix-determinant lemma and Woodbury when the datum's rank is small.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bam_rl.families.base import (
    NaturalParams,
)

__all__ = [
    "Datum",
    "EvidenceTerms",
    "Solved",
    "cho_solve",
    "cholesky",
    "covariance",
    "datum_from_stats",
    "evidence_terms",
    "frobenius_columns",
    "frobenius_sq",
    "inverse_factor",
    "logdet",
    "low_rank_route",
    "pivoted_factor",
    "size_tuple",
    "solve_lower",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


def cholesky(precision: np.ndarray, name: str = "belief precision") -> np.ndarray:
    """Batched lower Cholesky factor; ``ValueError`` when a matrix is not positive definite."""
    try:
        return np.linalg.cholesky(precision)
    except np.linalg.LinAlgError as error:
        raise ValueError(f"{name} must be symmetric positive definite") from error


def solve_lower(factor: np.ndarray, rhs: np.ndarray, *, transpose: bool = False) -> np.ndarray:
    """Solves ``L X = rhs`` (or ``Lᵀ X = rhs``) for lower-triangular ``L``; batched.

    ``factor`` has shape ``(..., d, d)`` and ``rhs`` shape ``(..., d, k)``; leading axes
    broadcast. A single factor solves every right-hand side in one LAPACK call; otherwise the
    batch is looped over (one ``O(d² k)`` call per entry, independent of the SciPy version).
    """
    from scipy.linalg import solve_triangular  # deferred: keeps scipy.linalg out of the import

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


def cho_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``Λ⁻¹ rhs`` from the lower Cholesky factor of ``Λ`` (two triangular solves)."""
    return solve_lower(factor, solve_lower(factor, rhs), transpose=True)


def logdet(factor: np.ndarray) -> np.ndarray:
    """``log|Λ|`` from the lower Cholesky factor of ``Λ``."""
    return 2.0 * np.log(np.diagonal(factor, axis1=-2, axis2=-1)).sum(axis=-1)


def frobenius_sq(matrix: np.ndarray) -> np.ndarray:
    return np.einsum("...ij,...ij->...", matrix, matrix)


def inverse_factor(factor: np.ndarray) -> np.ndarray:
    """``L⁻¹`` (so that ``Λ⁻¹ = L⁻ᵀ L⁻¹``), for the covariance itself."""
    eye = np.eye(factor.shape[-1])
    return solve_lower(factor, eye if factor.ndim == 2 else np.broadcast_to(eye, factor.shape))


def covariance(factor: np.ndarray) -> np.ndarray:
    """``Λ⁻¹`` from the Cholesky factor (the posterior covariance of a row of ``M``)."""
    inv = inverse_factor(factor)
    cov = np.swapaxes(inv, -1, -2) @ inv
    return 0.5 * (cov + np.swapaxes(cov, -1, -2))


def size_tuple(size: int | tuple[int, ...] | None) -> tuple[int, ...]:
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


def pivoted_factor(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Rank-revealing Cholesky ``matrix = U Uᵀ``: returns ``U`` (``d × r``), the pivot order
    and ``r``. Trailing pivots below LAPACK's default tolerance (``d·ε·max diag``) are
    dropped, a perturbation of the size of the rounding already in ``matrix``."""
    d = matrix.shape[-1]
    if not np.any(matrix):
        return np.zeros((d, 0)), np.arange(d), 0
    from scipy.linalg import lapack  # deferred: keeps scipy.linalg out of the import

    factor, piv, rank, info = lapack.dpstrf(np.array(matrix, order="F"), lower=1, tol=-1.0)
    if info < 0:  # pragma: no cover - LAPACK argument error
        raise ValueError("pivoted Cholesky failed")
    order = piv[:d] - 1
    lower = np.tril(factor[:, :rank])
    u = np.empty((d, rank))
    u[order] = lower
    return u, order, int(rank)


def datum_from_stats(s: NaturalParams) -> Datum:
    """:class:`Datum` of one unbatched statistic (both regression families)."""
    u, order, rank = pivoted_factor(s.fields["precision"])
    B = s.fields["B"]
    if rank == 0:
        coef = np.zeros((0, B.shape[-1]))
    else:
        from scipy.linalg import solve_triangular

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
    factor = cholesky(precision)
    if rank == 0:
        whitened = solve_lower(factor, B)
        zeros = np.zeros(batch)
        return EvidenceTerms(
            zeros, zeros.copy(), np.broadcast_to(frobenius_sq(whitened), batch).copy()
        )
    d = precision.shape[-1]
    if low_rank_route(d, rank):
        rhs = np.concatenate(
            [np.broadcast_to(u, (*batch, d, rank)), np.broadcast_to(B, (*batch, *B.shape[-2:]))],
            axis=-1,
        )
        solved = solve_lower(factor, rhs)
        w, z = solved[..., :rank], solved[..., rank:]
        wt = np.swapaxes(w, -1, -2)
        gram = wt @ w
        gram = 0.5 * (gram + np.swapaxes(gram, -1, -2))
        gram[..., np.arange(rank), np.arange(rank)] += 1.0
        k_factor = cholesky(gram, "evidence matrix")
        residual = solve_lower(k_factor, coef - wt @ z)
        return EvidenceTerms(logdet(k_factor), frobenius_sq(residual), frobenius_sq(z))
    stats = datum.stats.fields
    post_factor = cholesky(precision + stats["precision"])
    whitened = solve_lower(factor, B)
    prior_mean = solve_lower(factor, whitened, transpose=True)
    post_mean = cho_solve(post_factor, B + stats["B"])
    ut = u.T
    prior_res = coef - ut @ prior_mean
    post_res = coef - ut @ post_mean
    residual = np.maximum(np.einsum("...ij,...ij->...", prior_res, post_res), 0.0)
    return EvidenceTerms(logdet(post_factor) - logdet(factor), residual, frobenius_sq(whitened))


class Solved(NamedTuple):
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


def frobenius_columns(inverse_factor: np.ndarray) -> np.ndarray:
    """``diag(Λ⁻¹)`` from ``L⁻¹``: column sums of squares."""
    return np.einsum("...ij,...ij->...j", inverse_factor, inverse_factor)
