"""The rotated-MNIST domains of Exp. 4 (§4.4): rotation and pooling operators, features, the
per-domain moments every estimator shares, the evidence-maximising noise variance and OLS.
:mod:`bam_rl.experiments.mnist` runs the experiment on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.optimize import minimize_scalar

from bam_rl.checks import check_int
from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    ConjugateFamily,
    NaturalParams,
)
from bam_rl.hyperparams import MNIST_PRIOR_PRECISION
from bam_rl.memory import Memory

#: Image side of MNIST.
SIDE = 28
N_CLASSES = 10
#: Search interval of the evidence-maximising noise variance.
EVIDENCE_BOUNDS = (1e-6, 10.0)
#: Relative eigenvalue cut-off of the OLS pseudo-solve (pixels never lit give exact zeros).
OLS_RCOND = 1e-12

_LOG_2PI = float(np.log(2.0 * np.pi))


# ------------------------------------------------------------------------------ features
def rotation_operator(angle: float, side: int = SIDE) -> scipy.sparse.csr_matrix:
    """Bilinear rotation of a ``side × side`` image about its centre, as a sparse matrix.

    ``(operator @ image.ravel()).reshape(side, side)`` equals
    ``scipy.ndimage.rotate(image, np.degrees(angle), order=1, reshape=False)`` (mode
    ``"constant"``: samples falling outside the image are 0), so a batch of images rotates in
    one sparse product.

    Args:
        angle: Rotation angle in radians (counter-clockwise as displayed).
        side: Image side.
    """
    side = check_int("side", side)
    cos, sin = np.cos(angle), np.sin(angle)
    centre = (side - 1) / 2.0
    out = np.indices((side, side)).reshape(2, -1).astype(np.float64) - centre
    # scipy.ndimage.rotate samples the input at R (o − c) + c with R = [[cos, sin], [−sin, cos]]
    row = cos * out[0] + sin * out[1] + centre
    col = -sin * out[0] + cos * out[1] + centre
    inside = (row >= 0) & (row <= side - 1) & (col >= 0) & (col <= side - 1)
    row0, col0 = np.floor(row), np.floor(col)
    frac_r, frac_c = row - row0, col - col0
    targets = np.arange(side * side)
    rows, cols, values = [], [], []
    for dr, weight_r in ((0, 1.0 - frac_r), (1, frac_r)):
        for dc, weight_c in ((0, 1.0 - frac_c), (1, frac_c)):
            r = (row0 + dr).astype(np.int64)
            c = (col0 + dc).astype(np.int64)
            weight = weight_r * weight_c
            keep = inside & (weight != 0) & (r >= 0) & (r < side) & (c >= 0) & (c < side)
            rows.append(targets[keep])
            cols.append((r * side + c)[keep])
            values.append(weight[keep])
    return scipy.sparse.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
        shape=(side * side, side * side),
    )


def pooling_operator(side: int = SIDE, out_side: int = SIDE) -> scipy.sparse.csr_matrix:
    """Average pooling of ``side × side`` images to ``out_side × out_side`` (blocks of
    ``side // out_side``), as a sparse ``(out_side², side²)`` matrix."""
    side = check_int("side", side)
    out_side = check_int("out_side", out_side)
    if side % out_side:
        raise ValueError(f"out_side must divide {side}, got {out_side!r}")
    factor = side // out_side
    r, c = np.indices((side, side)).reshape(2, -1)
    target = (r // factor) * out_side + c // factor
    return scipy.sparse.csr_matrix(
        (np.full(side * side, 1.0 / factor**2), (target, np.arange(side * side))),
        shape=(out_side * out_side, side * side),
    )


def domain_features(images: np.ndarray, angle: float, side: int = SIDE) -> np.ndarray:
    """Features of one domain: rotated (and pooled) pixels in [0, 1] followed by a bias 1.

    Args:
        images: ``uint8`` images, shape ``(n, 28, 28)``.
        angle: The domain's rotation in radians.
        side: Output image side (a divisor of 28; 14 averages 2 × 2 blocks).

    Returns:
        ``float64`` array of shape ``(n, side² + 1)``.
    """
    images = np.asarray(images)
    if images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"images must have shape (n, side, side), got {images.shape}")
    full = images.shape[1]
    operator = rotation_operator(angle, full)
    if side != full:
        operator = pooling_operator(full, side) @ operator
    # pixels as columns, contiguous: the sparse product then runs over rows of both
    columns = np.ascontiguousarray(images.reshape(len(images), -1).T, dtype=np.float64)
    features = np.empty((len(images), side * side + 1))
    features[:, :-1] = (operator @ columns).T
    features[:, :-1] /= 255.0
    features[:, -1] = 1.0
    return features


def one_hot(labels: np.ndarray, n_classes: int = N_CLASSES) -> np.ndarray:
    """``(n, n_classes)`` one-hot float64 targets."""
    labels = np.asarray(labels, dtype=np.int64)
    targets = np.zeros((labels.size, n_classes))
    targets[np.arange(labels.size), labels] = 1.0
    return targets


# -------------------------------------------------------------------- shared statistics
class DomainMoments:
    """Raw moments of a set of domains, computed once and shared by every model and σ².

    Attributes:
        gram: ``XᵀX`` per domain, shape ``(m, d, d)`` (exactly symmetric).
        cross: ``XᵀY``, shape ``(m, d, p)``.
        yy: ``tr(YᵀY)``, shape ``(m,)``.
        n: Rows per domain, shape ``(m,)``.
    """

    def __init__(self, features: Sequence[np.ndarray], targets: Sequence[np.ndarray]):
        self.gram = np.stack([_gram(x) for x in features])
        self.cross = np.stack([x.T @ y for x, y in zip(features, targets, strict=True)])
        self.yy = np.array([float(np.vdot(y, y)) for y in targets])
        self.n = np.array([len(x) for x in features], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.n)

    def stats(self, model: ConjugateFamily, index: int) -> NaturalParams:
        """Sufficient statistics of domain ``index`` for ``model`` (what ``model.stats(X, Y)``
        returns, from the shared moments)."""
        if not isinstance(model, (BayesianLinearRegression, BayesianLinearRegressionNIG)):
            raise ValueError(
                f"model must be a BayesianLinearRegression(NIG), got {type(model).__name__}"
            )
        return model.stats_from_moments(
            self.gram[index], self.cross[index], self.yy[index], self.n[index]
        )

    def memory(self, model: ConjugateFamily, labels: Sequence[Any] | None = None) -> Memory:
        """A :class:`Memory` with one record per domain."""
        memory = Memory()
        for index in range(len(self)):
            memory.add(self.stats(model, index), label=None if labels is None else labels[index])
        return memory


def _gram(x: np.ndarray) -> np.ndarray:
    """``XᵀX``, exactly symmetric, computed over the columns that are not all zero (rotation
    leaves the corners of every image empty, so about a fifth of the pixels are)."""
    active = np.flatnonzero(np.any(x != 0, axis=0))
    sub = x[:, active]
    block = sub.T @ sub
    gram = np.zeros((x.shape[1], x.shape[1]))
    gram[np.ix_(active, active)] = 0.5 * (block + block.T)
    return gram


# --------------------------------------------------------------------- noise variance
def domain_spectra(moments: DomainMoments) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues ``e`` of each ``XᵀX`` and the squared projections ``Σ_i (Vᵀ XᵀY)²_ki``,
    both ``(m, d)``: all the evidence needs for any σ² (one ``eigh`` per domain)."""
    eigenvalues = np.zeros(moments.gram.shape[:2])
    projections = np.zeros_like(eigenvalues)
    for index in range(len(moments)):
        gram = moments.gram[index]
        # a feature that is zero in every row adds an eigenvalue 0 with no projection
        active = np.flatnonzero(np.diagonal(gram) > 0)
        values, vectors = scipy.linalg.eigh(gram[np.ix_(active, active)], check_finite=False)
        eigenvalues[index, : active.size] = np.maximum(values, 0.0)
        projections[index, : active.size] = np.sum(
            (vectors.T @ moments.cross[index][active]) ** 2, axis=1
        )
    return eigenvalues, projections


def log_evidence(
    noise_var: float,
    spectra: tuple[np.ndarray, np.ndarray],
    yy: np.ndarray,
    n: np.ndarray,
    prior_precision: float,
    dim_out: int,
) -> float:
    """``Σ_j log p(D_j | base prior, σ²)`` over the domains, from :func:`domain_spectra`.

    Each output's ``y ~ N(0, σ² I + X Xᵀ/α)``; by the determinant lemma and Woodbury, per
    domain ``−(np/2) log 2πσ² − (p/2) Σ_k log(1 + e_k/(ασ²))
    − (tr YᵀY − Σ_k z_k/(e_k + ασ²))/(2σ²)``, with ``e_k`` the eigenvalues of ``XᵀX`` and
    ``z_k`` the squared projections of ``XᵀY`` on its eigenvectors.
    """
    eigenvalues, projections = spectra
    alpha, noise = float(prior_precision), float(noise_var)
    ridge = alpha * noise
    logdet = np.log1p(eigenvalues / ridge).sum(axis=1)
    fit = yy - (projections / (eigenvalues + ridge)).sum(axis=1)
    per_domain = (
        -0.5 * n * dim_out * (_LOG_2PI + np.log(noise)) - 0.5 * dim_out * logdet - 0.5 * fit / noise
    )
    return float(per_domain.sum())


def evidence_noise_var(
    moments: DomainMoments,
    prior_precision: float = MNIST_PRIOR_PRECISION,
    bounds: tuple[float, float] = EVIDENCE_BOUNDS,
) -> float:
    """The noise variance maximising the training domains' evidence (type-II ML).

    ``argmax_σ² Σ_j log p(D_j | σ², prior)``, each training domain scored on its own under the
    base prior ``N(0, prior_precision⁻¹ I)``: a grid over ``log σ²`` in ``bounds``, refined by
    a bounded scalar search around the best grid point. Uses training data only.
    """
    spectra = domain_spectra(moments)
    p = moments.cross.shape[-1]

    def negative(log_noise: float) -> float:
        return -log_evidence(np.exp(log_noise), spectra, moments.yy, moments.n, prior_precision, p)

    grid = np.linspace(np.log(bounds[0]), np.log(bounds[1]), 41)
    values = np.array([negative(g) for g in grid])
    best = int(np.argmin(values))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = minimize_scalar(
        negative, bounds=(low, high), method="bounded", options={"xatol": 1e-6}
    )
    return float(np.exp(result.x if result.fun <= values[best] else grid[best]))


def ols_weights(gram: np.ndarray, cross: np.ndarray, rcond: float = OLS_RCOND) -> np.ndarray:
    """Minimum-norm least squares from the pooled ``XᵀX`` and ``XᵀY``: shape ``(p, d)``.

    Solves the normal equations in the eigenbasis of ``XᵀX``, dropping eigenvalues below
    ``rcond · max`` (pixels that are never lit make ``XᵀX`` singular); equal to
    ``numpy.linalg.lstsq`` on the stacked data where the latter is well conditioned.
    """
    values, vectors = scipy.linalg.eigh(gram, check_finite=False)
    keep = values > rcond * values.max()
    projected = vectors[:, keep].T @ cross
    return (vectors[:, keep] @ (projected / values[keep, None])).T
