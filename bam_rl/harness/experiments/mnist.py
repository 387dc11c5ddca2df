"""Experiment 4 (paper §4.4, App. D.2): domain adaptation on rotated MNIST.

Protocol, per seed (:func:`run_seed`):

* the 60,000 training images are split at random into 32 domains of 1,875 (without
  replacement) and the 10,000 test images into 8 domains of 1,250;
* each domain is rotated by its own angle ``~ U[0, π]`` (bilinear, same size: exactly
  ``scipy.ndimage.rotate(order=1, reshape=False)``, applied as one sparse matrix per angle);
  ``side=14`` then averages 2 × 2 blocks;
* features are the pixels in [0, 1] plus a bias (785 at full resolution), targets one-hot;
  the model is 10 independent Bayesian linear regressions sharing the prior ``N(0, 0.1⁻¹ I)``
  (:class:`~bam_rl.families.BayesianLinearRegression`), λ = 0;
* each training domain is one :class:`~bam_rl.memory.Memory` record; in each test domain the
  first 10 (randomly ordered) labelled examples choose the readout with
  :func:`bam_rl.readout.select` and update the posterior; the accuracy of the posterior-mean
  prediction (arg-max over the 10 outputs) is measured on the other 1,240.

Methods (:data:`METHODS`): the OLS baseline (least squares over all training domains); BAM
greedy (Alg. 1) at the paper's noise variance σ² = 1e-4 and at a default σ² chosen, per seed,
by maximising the evidence of the training domains under the base prior (empirical Bayes,
:func:`evidence_noise_var`; no test data involved); BAM greedy with unknown noise
(:class:`~bam_rl.families.BayesianLinearRegressionNIG`); the parallel selector (Alg. 2) at the
default σ²; and, as a reference for what selection adds, every training domain plus the 10
labels (W = 1).

Shared work: each training domain's ``XᵀX``, ``XᵀY`` and ``tr(YᵀY)`` are computed once per seed
(:class:`DomainMoments`) and scaled into every model's statistics; one
:class:`~bam_rl.readout.FactorCache` per model lets the 8 selections of a seed reuse the
Cholesky factors of candidate sets (every first round factors the same 32 sets); the parallel
readout takes its single-record scores from the greedy's first round (:func:`parallel_readout`).

Why σ² = 1e-4 remembers nothing: a domain's posterior (1,875 images) predicts a new image of
the *same* rotation with variance σ² + x Λ⁻¹ xᵀ ≈ 1.4e-4 per output, while a linear model's
residuals on one-hot targets have a mean square of ≈ 0.03. The 100 target values of the 10
labelled examples then score ≈ −½ · 100 · 0.03 / 1.4e-4 ≈ −1.0·10⁴ nats under any remembered
domain (measured: −10,394 for a same-angle domain, seed 0) against ≈ −390 under the broad base
prior, so Alg. 1 stops at W = 0 and BAM is left with the base prior and the 10 labels. The
evidence-maximising σ² (≈ 0.037 at full resolution) matches the residuals, and the same domain
then scores +29 nats.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse
from joblib import Parallel, delayed
from scipy.optimize import minimize_scalar
from tqdm.auto import tqdm

from bam_rl.checks import check_int, check_positive, check_seed, check_unit_interval
from bam_rl.datasets import MNIST, load_mnist
from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    ConjugateFamily,
    NaturalParams,
)
from bam_rl.harness import naming
from bam_rl.harness.files import write_frame
from bam_rl.harness.plotting import (
    add_caption,
    count_text,
    mark_smoke_test,
    new_figure,
    plot_points,
    save_figure,
    smoke_test,
)
from bam_rl.hyperparams import MNIST_NOISE_VAR, MNIST_PRIOR_PRECISION
from bam_rl.memory import Memory
from bam_rl.readout import FactorCache, ReadoutResult, select
from bam_rl.readout import objective as readout_objective

#: method -> label in the figure and the summary (the naming table, :mod:`bam_rl.harness.naming`)
METHODS = {key: entry.label for key, entry in naming.methods("mnist").items()}
#: Methods whose readout is the greedy (Alg. 1)
GREEDY = ("bam_paper", "bam", "bam_nig")
#: The paper's results (§4.4): mean and standard deviation of the accuracy over 10 seeds, in %.
PAPER = {"ols": (55.0, 3.7), "bam_paper": (71.8, 5.2)}
#: method -> short tick label of the figure
SHORT = {
    "ols": "OLS",
    "bam_paper": "BAM\n$\\sigma^2=10^{-4}$\n(paper)",
    "bam": "BAM\n$\\sigma^2$ by\nevidence",
    "bam_nig": "BAM\nNIG",
    "bam_parallel": "parallel\n(Alg. 2)",
    "all_domains": "all domains\n+ 10 labels",
}

#: Image side of MNIST.
SIDE = 28
N_CLASSES = 10
#: Inverse-gamma prior of the NIG model: a vague ``IG(1, 1)``; its ``Λ0`` is the paper's 0.1
#: (in units of σ², as the NIG family defines it).
NIG_A = 1.0
NIG_B = 1.0
#: Search interval of the evidence-maximising noise variance.
EVIDENCE_BOUNDS = (1e-6, 10.0)
#: Memory budget of the Cholesky-factor cache shared by one model's selections in a seed.
FACTOR_CACHE_BYTES = 2**30
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


# -------------------------------------------------------------------------- estimators
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


def parallel_readout(singles: np.ndarray, base: float, q: float) -> np.ndarray:
    """Algorithm 2 from the single-record scores ``J({j})``, as ``select(method="parallel")``
    makes it: keep the records scoring above the base prior ``J(∅)`` and select those at or
    above the ``q`` quantile of the kept scores.

    These scores are exactly the first round of the greedy (Alg. 1), so the experiment takes
    them from the greedy it has already run instead of factoring every candidate again.
    """
    singles = np.asarray(singles, dtype=np.float64)
    weights = np.zeros(singles.size)
    kept = singles > base
    if kept.any():
        cutoff = np.quantile(singles[kept], q)
        weights[kept & (singles >= cutoff)] = 1.0
    return weights


def _posterior(
    model: ConjugateFamily, memory: Memory, weights: np.ndarray, s_t: NaturalParams
) -> NaturalParams:
    """``η0 + Σ_j w_j s_j + s_t``; for 0/1 weights only the selected records are added."""
    if np.any((weights != 0) & (weights != 1)):
        return memory.weighted_sum(weights, base=model.prior) + s_t
    stats = memory.stats
    fields = {k: v.copy() for k, v in model.prior.fields.items()}
    for j in np.flatnonzero(weights > 0):
        for k in fields:
            fields[k] += stats.fields[k][j]
    for k in fields:
        fields[k] += s_t.fields[k]
    return NaturalParams(model, fields)


def _pick_order(result: ReadoutResult | None, weights: np.ndarray) -> np.ndarray:
    """The selected records, in the order the greedy added them (each round's arg-max) when
    ``result`` is a greedy readout, else by index."""
    selected = np.flatnonzero(weights > 0)
    if result is None or len(result.scores) < selected.size:
        return selected
    order = np.array([int(np.argmax(result.scores[k])) for k in range(selected.size)], int)
    return order if np.array_equal(np.sort(order), selected) else selected


def _full_round(result: ReadoutResult) -> bool:
    """True when the greedy's first round scored every record (finite scores)."""
    return len(result.scores) > 0 and bool(np.all(np.isfinite(result.scores[0])))


def posterior_mean_weights(model: ConjugateFamily, belief: NaturalParams) -> np.ndarray:
    """Posterior mean of ``M`` (``(p, d)``) for either regression family."""
    mean = model.mean(belief)
    return mean[0] if isinstance(mean, tuple) else mean


def accuracy(weights: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of rows whose arg-max prediction ``features @ weightsᵀ`` is the label."""
    return float(np.mean(np.argmax(features @ weights.T, axis=1) == labels))


# ----------------------------------------------------------------------------- one seed
def _make_domains(
    rng: np.random.Generator, size: int, count: int, per_domain: int
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint index sets ``(count, per_domain)`` of ``range(size)`` and angles ``U[0, π]``."""
    if count * per_domain > size:
        raise ValueError(
            f"{count} domains of {per_domain} need {count * per_domain} images, "
            f"only {size} available"
        )
    indices = rng.permutation(size)[: count * per_domain].reshape(count, per_domain)
    angles = rng.uniform(0.0, np.pi, size=count)
    return indices, angles


def run_seed(
    seed: int,
    data: MNIST,
    *,
    side: int = SIDE,
    n_train: int = 32,
    train_size: int = 1875,
    n_test: int = 8,
    test_size: int = 1250,
    n_labelled: int = 10,
    methods: Sequence[str] = tuple(METHODS),
    paper_noise_var: float = MNIST_NOISE_VAR,
    prior_precision: float = MNIST_PRIOR_PRECISION,
    q: float = 0.5,
) -> pd.DataFrame:
    """One seed of the protocol: one row per (test domain, method).

    Args:
        seed: Seed of every random draw (domain split, angles, labelled examples).
        data: The MNIST arrays.
        side: Image side of the features (28, or a divisor such as 14).
        n_train: Number of training domains (paper: 32).
        train_size: Images per training domain (paper: 1,875).
        n_test: Number of test domains (paper: 8).
        test_size: Images per test domain (paper: 1,250).
        n_labelled: Labelled examples per test domain that choose the readout (paper: 10).
        methods: Keys of :data:`METHODS`.
        paper_noise_var: σ² of ``bam_paper``.
        prior_precision: Prior precision of every regression.
        q: Quantile cut-off of the parallel selector.

    Returns:
        Columns ``seed, side, domain, angle, angle_deg, method, noise_var, accuracy, n_eval,
        n_selected, selected, selected_angles_deg, angle_gap_selected, angle_gap_all,
        angle_gap_first, nearest_selected, objective, base_objective, seconds``: ``selected``
        lists training domains (``;``-separated) in the order the greedy added them (by index
        for the other methods); angle gaps are ``|training angle − test angle|`` in degrees,
        averaged over the selected domains, over all training domains, and for the first pick;
        ``nearest_selected`` tells whether the training domain nearest in angle was selected;
        ``seconds`` is the time of the readout and posterior (the parallel readout reuses the
        greedy's first round, so its time excludes it); ``seed_seconds`` and
        ``seed_cpu_seconds`` are the wall and CPU time of the whole seed.
    """
    checked = check_seed(seed)
    if checked is None:
        raise ValueError("seed must be an integer >= 0, got None")
    seed = checked
    side = check_int("side", side)
    if SIDE % side:
        raise ValueError(f"side must divide {SIDE} (e.g. 28 or 14), got {side!r}")
    n_train = check_int("n_train", n_train)
    train_size = check_int("train_size", train_size)
    n_test = check_int("n_test", n_test)
    test_size = check_int("test_size", test_size)
    n_labelled = check_int("n_labelled", n_labelled)
    if n_labelled >= test_size:
        raise ValueError(f"n_labelled must be < test_size = {test_size}, got {n_labelled!r}")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ValueError(f"methods must be among {sorted(METHODS)}, got {unknown}")
    paper_noise_var = float(check_positive("paper_noise_var", paper_noise_var))
    prior_precision = float(check_positive("prior_precision", prior_precision))
    q = float(check_unit_interval("q", q))

    started, started_cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(seed)
    train_idx, train_angles = _make_domains(rng, len(data.train_labels), n_train, train_size)
    test_idx, test_angles = _make_domains(rng, len(data.test_labels), n_test, test_size)

    train_x = [
        domain_features(data.train_images[i], a, side)
        for i, a in zip(train_idx, train_angles, strict=True)
    ]
    train_y = [one_hot(data.train_labels[i]) for i in train_idx]
    moments = DomainMoments(train_x, train_y)
    del train_x, train_y
    test_x = [
        domain_features(data.test_images[i], a, side)
        for i, a in zip(test_idx, test_angles, strict=True)
    ]
    test_labels = [data.test_labels[i].astype(np.int64) for i in test_idx]
    labelled = DomainMoments(
        [x[:n_labelled] for x in test_x], [one_hot(y[:n_labelled]) for y in test_labels]
    )
    d = side * side + 1
    train_deg = np.degrees(train_angles)

    rows: list[dict[str, Any]] = []

    def record(
        method: str,
        domain: int,
        noise_var: float,
        weights: np.ndarray,
        selected: np.ndarray,
        seconds: float,
        objective: float = np.nan,
        base_objective: float = np.nan,
    ) -> None:
        x_eval, y_eval = test_x[domain][n_labelled:], test_labels[domain][n_labelled:]
        angle_deg = float(np.degrees(test_angles[domain]))
        gaps = np.abs(train_deg - angle_deg)
        rows.append(
            {
                "seed": seed,
                "side": side,
                "domain": domain,
                "angle": float(test_angles[domain]),
                "angle_deg": angle_deg,
                "method": method,
                "noise_var": noise_var,
                "accuracy": accuracy(weights, x_eval, y_eval),
                "n_eval": len(y_eval),
                "n_selected": len(selected),
                "selected": ";".join(str(int(j)) for j in selected),
                "selected_angles_deg": ";".join(f"{train_deg[j]:.1f}" for j in selected),
                "angle_gap_selected": float(gaps[selected].mean()) if len(selected) else np.nan,
                "angle_gap_all": float(gaps.mean()),
                "angle_gap_first": (
                    float(gaps[selected[0]]) if method in GREEDY and len(selected) else np.nan
                ),
                "nearest_selected": bool(np.argmin(gaps) in set(selected.tolist())),
                "objective": objective,
                "base_objective": base_objective,
                "seconds": seconds,
            }
        )

    if "ols" in methods:
        start = time.perf_counter()
        weights = ols_weights(moments.gram.sum(axis=0), moments.cross.sum(axis=0))
        seconds = time.perf_counter() - start
        for domain in range(n_test):
            record("ols", domain, np.nan, weights, np.arange(n_train), seconds / n_test)

    evidence_methods = {"bam", "bam_parallel", "all_domains"} & set(methods)
    noise_var = evidence_noise_var(moments, prior_precision) if evidence_methods else np.nan
    configs: list[tuple[ConjugateFamily, list[str]]] = []
    if "bam_paper" in methods:
        configs.append(
            (
                BayesianLinearRegression(d, N_CLASSES, prior_precision, paper_noise_var),
                ["bam_paper"],
            )
        )
    if evidence_methods:
        configs.append(
            (
                BayesianLinearRegression(d, N_CLASSES, prior_precision, noise_var),
                [m for m in ("bam", "bam_parallel", "all_domains") if m in methods],
            )
        )
    if "bam_nig" in methods:
        configs.append(
            (
                BayesianLinearRegressionNIG(d, N_CLASSES, prior_precision, a=NIG_A, b=NIG_B),
                ["bam_nig"],
            )
        )
    for model, names in configs:
        memory = moments.memory(model)  # one record per training domain, shared by `names`
        # the candidate sets' Cholesky factors do not depend on the test domain: the 8
        # selections over this memory share them (every first round is the same 32 sets)
        cache = FactorCache(max_bytes=FACTOR_CACHE_BYTES)
        model_noise = getattr(model, "noise_var", np.nan)
        for domain in range(n_test):
            s_t = labelled.stats(model, domain)
            greedy = None  # Alg. 2 reuses the first greedy round (every record alone)
            for name in names:
                start = time.perf_counter()
                objective = base = np.nan
                result = None
                if name == "all_domains":
                    weights = np.ones(n_train)
                elif name == "bam_parallel" and greedy is not None and _full_round(greedy):
                    base = greedy.base_objective
                    weights = parallel_readout(np.asarray(greedy.scores[0]), base, q)
                    objective = float(readout_objective(model, memory, s_t, weights))
                else:
                    method = "parallel" if name == "bam_parallel" else "greedy"
                    result = select(model, memory, s_t, lam=0.0, method=method, q=q, cache=cache)
                    greedy = result if method == "greedy" else greedy
                    weights, objective = result.weights, result.objective
                    base = result.base_objective
                posterior = _posterior(model, memory, weights, s_t)
                mean = posterior_mean_weights(model, posterior)
                seconds = time.perf_counter() - start
                record(
                    name,
                    domain,
                    model_noise,
                    mean,
                    _pick_order(result if name in GREEDY else None, weights),
                    seconds,
                    objective,
                    base,
                )
        del memory, cache
    frame = pd.DataFrame(rows)
    frame["seed_seconds"] = time.perf_counter() - started
    frame["seed_cpu_seconds"] = time.process_time() - started_cpu
    order = {m: i for i, m in enumerate(METHODS)}
    return frame.sort_values(
        ["method", "domain"], key=lambda c: c.map(order) if c.name == "method" else c, kind="stable"
    ).reset_index(drop=True)


# ---------------------------------------------------------------------- many seeds
def mnist_experiment(
    data: MNIST,
    seeds: int | Sequence[int] = 10,
    n_jobs: int = 1,
    progress: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """Runs :func:`run_seed` for every seed (``range(seeds)`` or the given list), in
    parallel over seeds, and concatenates the rows."""
    seed_list = (
        list(range(check_int("seeds", seeds)))
        if isinstance(seeds, (int, np.integer))
        else [int(s) for s in seeds]
    )
    if not seed_list:
        raise ValueError("seeds must name at least one seed")
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(run_seed)(seed, data, **options) for seed in seed_list
    )
    frames = list(tqdm(results, total=len(seed_list), desc="mnist seeds", disable=not progress))
    return pd.concat(frames, ignore_index=True)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method: mean ± sd over seeds of the per-seed mean accuracy (in %), as the paper
    reports, the sd over all test domains, the readout size, the mean angle gap (degrees)
    between a test domain and the training domains selected (vs. all training domains, and
    for the greedy's first pick), the fraction of test domains whose nearest training domain
    was selected, σ², the readout time per test domain, and the paper's numbers where it
    gives them."""
    per_seed = frame.groupby(["method", "seed"], sort=False).agg(
        accuracy=("accuracy", "mean"),
        n_selected=("n_selected", "mean"),
        noise_var=("noise_var", "first"),
    )
    rows = []
    for method in [m for m in METHODS if m in set(frame["method"])]:
        seeds = per_seed.loc[method]
        domains = frame[frame["method"] == method]
        paper = PAPER.get(method, (np.nan, np.nan))
        rows.append(
            {
                "method": method,
                "label": METHODS[method],
                "accuracy_mean": 100 * seeds["accuracy"].mean(),
                "accuracy_sd": 100 * seeds["accuracy"].std(ddof=1) if len(seeds) > 1 else np.nan,
                "accuracy_sd_domains": 100 * domains["accuracy"].std(ddof=1),
                "seeds": len(seeds),
                "paper_mean": paper[0],
                "paper_sd": paper[1],
                "n_selected": seeds["n_selected"].mean(),
                "angle_gap_selected": domains["angle_gap_selected"].mean(),
                "angle_gap_all": domains["angle_gap_all"].mean(),
                "angle_gap_first": domains["angle_gap_first"].mean(),
                "nearest_selected": domains["nearest_selected"].mean(),
                "noise_var": seeds["noise_var"].mean(),
                "seconds_per_domain": domains["seconds"].mean(),
            }
        )
    return pd.DataFrame(rows)


def plot_mnist(
    frame: pd.DataFrame, path: str | Path | None = None, method: str = "bam", examples: int = 4
):
    """Accuracy per method (seeds as dots, mean ± sd, the paper's values as diamonds) and
    the training-domain angles the BAM readout ``method`` selected: for a few test domains
    of the first seed, and against the test angle over every seed."""
    figure, (left, middle, right) = new_figure(
        1, 3, figsize=(18, 5.0), gridspec_kw={"width_ratios": [1.4, 1.0, 1.0]}
    )
    methods = [m for m in METHODS if m in set(frame["method"])]
    per_seed = frame.groupby(["method", "seed"])["accuracy"].mean() * 100
    for position, name in enumerate(methods):
        entry = naming.method("mnist", name)
        plot_points(
            left,
            position,
            per_seed.loc[name].to_numpy(),
            entry.color,
            entry.marker,
            summary_label="mean ± sd over seeds" if position == 0 else None,
        )
        if name in PAPER:
            mean, paper_sd = PAPER[name]
            left.errorbar(
                position + 0.42,
                mean,
                yerr=paper_sd,
                fmt="D",
                color="#D55E00",
                mfc="white",
                capsize=4,
                label="paper (785 features)" if name == "ols" or "ols" not in methods else None,
            )
    left.set_xticks(range(len(methods)))
    left.set_xticklabels([SHORT[m] for m in methods], fontsize=8)
    sides = sorted(frame["side"].unique()) if "side" in frame else []
    features = ", ".join(f"{s * s + 1} features" for s in sides)
    left.set(
        ylabel="test accuracy (%)",
        xlim=(-0.5, len(methods) - 0.3),
        title=f"Accuracy per method ({features}; dots: seeds)",
    )
    left.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.2), ncol=2)
    left.grid(axis="y", alpha=0.3)

    chosen = frame[frame["method"] == method]
    if chosen.empty:
        middle.set_axis_off()
        right.set_axis_off()
    else:
        first = chosen[chosen["seed"] == chosen["seed"].min()].head(examples)
        all_angles = _training_angles(frame, chosen["seed"].min())
        for row_index, (_, row) in enumerate(first.iterrows()):
            y = np.full(all_angles.size, row_index)
            middle.scatter(
                all_angles,
                y,
                marker="|",
                s=150,
                color="0.75",
                label="training domains" if row_index == 0 else None,
            )
            picked = _parse_angles(row["selected_angles_deg"])
            middle.scatter(
                picked,
                np.full(picked.size, row_index),
                marker="o",
                s=40,
                color=naming.method("mnist", method).color,
                label="selected by BAM" if row_index == 0 else None,
            )
            middle.scatter(
                [row["angle_deg"]],
                [row_index],
                marker="*",
                s=180,
                color="black",
                label="test domain" if row_index == 0 else None,
                zorder=3,
            )
        middle.set_yticks(range(len(first)))
        middle.set_yticklabels([f"test domain {int(d)}" for d in first["domain"]], fontsize=8)
        middle.set(
            xlabel="rotation angle (degrees)",
            xlim=(-5, 185),
            ylim=(-0.6, len(first)),
            title=f"{naming.legend_label('mnist', method)}: seed {int(chosen['seed'].min())}",
        )
        middle.legend(fontsize=7, loc="upper center", ncol=3, bbox_to_anchor=(0.5, -0.13))

        xs: list[float] = []
        ys: list[float] = []
        for _, row in chosen.iterrows():
            picked = _parse_angles(row["selected_angles_deg"])
            xs.extend([row["angle_deg"]] * picked.size)
            ys.extend(picked)
        right.scatter(
            xs,
            ys,
            s=10,
            alpha=0.5,
            color=naming.method("mnist", method).color,
            label="selected domain",
        )
        right.plot([0, 180], [0, 180], color="black", lw=1, ls="--", label="same angle")
        right.set(
            xlabel="test-domain angle (degrees)",
            ylabel="selected training angle (degrees)",
            xlim=(0, 180),
            ylim=(0, 180),
            title="selected angles, every seed",
        )
        right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.13), ncol=2)
    seeds = frame["seed"].nunique()
    figure.suptitle(
        "Experiment 4: rotated MNIST, 10 labelled examples per test domain "
        f"({count_text(seeds, 'seed')})",
        fontsize=12,
    )
    add_caption(
        figure,
        "Left: test accuracy, one dot per seed (mean over its 8 test domains), "
        "black: mean ± sd over seeds, open diamonds: the paper's numbers. Middle and "
        "right: rotation angles of the training domains the BAM readout selected. "
        f"{naming.abbreviation_note('mnist', methods)}; Alg. 2: the parallel readout; "
        "$W=1$: every training domain remembered.",
        width=190,
    )
    return save_figure(figure, path)


def _parse_angles(text: Any) -> np.ndarray:
    if not isinstance(text, str) or not text:
        return np.zeros(0)
    return np.array([float(v) for v in text.split(";")])


def _training_angles(frame: pd.DataFrame, seed: int) -> np.ndarray:
    """Every training angle of ``seed`` (the OLS rows list all domains; else the union of the
    selections)."""
    rows = frame[(frame["seed"] == seed) & (frame["method"].isin(["ols", "all_domains"]))]
    if not rows.empty:
        return _parse_angles(rows["selected_angles_deg"].iloc[0])
    texts = frame.loc[frame["seed"] == seed, "selected_angles_deg"]
    return np.unique(np.concatenate([_parse_angles(t) for t in texts] or [np.zeros(0)]))


def reproduce(
    out: str | Path,
    seeds: int | None = None,
    quick: bool = False,
    n_jobs: int = 1,
    progress: bool = True,
    data: str | Path | None = None,
    side: int | None = None,
    download: bool = False,
) -> pd.DataFrame:
    """Runs Experiment 4 and writes ``mnist.csv`` (one row per seed, test domain and method),
    ``mnist_summary.csv`` and ``mnist.png`` to ``out``; returns the summary.

    Args:
        out: Output directory (created if needed).
        seeds: Number of seeds (paper: 10; ``quick``: 2).
        quick: A smoke test: 2 seeds at side 14 (unless ``side`` is given), otherwise the
            full protocol.
        n_jobs: Parallel workers (over seeds).
        progress: Show a progress bar.
        data: Directory of the MNIST files (default: ``$BAM_RL_MNIST``).
        side: Image side: 28 (full resolution, 785 features; the default) or 14 (197).
        download: Fetch missing MNIST files first (needs a network).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = seeds if seeds is not None else (2 if quick else 10)
    side = side if side is not None else (14 if quick else SIDE)
    mnist = load_mnist(data, download=download)
    frame = mnist_experiment(mnist, seeds=seeds, n_jobs=n_jobs, progress=progress, side=side)
    summary = summarize(frame)
    summary.insert(2, "side", side)
    with smoke_test(quick):
        summary = mark_smoke_test(summary)
        write_frame(frame, out / "mnist.csv")
        write_frame(summary, out / "mnist_summary.csv")
        figure = plot_mnist(frame, out / "mnist.png")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return summary


#: The paper's claims of §4.4, in order (the rows of the report's claim table).
CLAIMS = (
    "OLS trained over all domains reaches 55 % ± 3.7 % test accuracy.",
    "BAM (greedy, σ² = 1e-4) reaches 71.8 % ± 5.2 % test accuracy with 10 labelled examples "
    "per test domain.",
    "BAM leverages previous experiences to adapt to novel domains: it beats OLS over all domains.",
)


def claims(folder: str | Path | None) -> list[dict[str, str]]:
    """The claims of §4.4 with ``folder/mnist_summary.csv`` (mean ± sd over seeds, in %);
    a paper number holds if the measured mean is within the paper's sd of it."""
    from bam_rl.harness.report import claim, not_run

    path = None if folder is None else Path(folder) / "mnist_summary.csv"
    if path is None or not path.exists():
        return not_run("mnist", "§4.4", CLAIMS)
    summary = pd.read_csv(path).set_index("method")
    side = f", {int(summary['side'].iloc[0]) ** 2 + 1} features" if "side" in summary else ""

    def text(method: str) -> str:
        row = summary.loc[method]
        sd = "" if pd.isna(row["accuracy_sd"]) else f" ± {row['accuracy_sd']:.1f}"
        return f"{row['accuracy_mean']:.1f}{sd} % ({int(row['seeds'])} seeds{side})"

    def near(method: str) -> bool | None:
        if method not in summary.index:
            return None
        mean, sd = PAPER[method]
        return bool(abs(summary.loc[method, "accuracy_mean"] - mean) <= sd)

    rows = []
    for index, method in enumerate(("ols", "bam_paper")):
        if method in summary.index:
            rows.append(
                claim(
                    "mnist",
                    "§4.4",
                    CLAIMS[index],
                    f"{text(method)}; paper {PAPER[method][0]} ± {PAPER[method][1]}",
                    near(method),
                )
            )
        else:
            rows.append(claim("mnist", "§4.4", CLAIMS[index], f"{method} not run", None))
    variants = [m for m in ("bam_paper", "bam", "bam_nig") if m in summary.index]
    if "ols" in summary.index and variants:
        ols = summary.loc["ols", "accuracy_mean"]
        wins = [bool(summary.loc[m, "accuracy_mean"] > ols) for m in variants]
        measured = f"OLS {text('ols')}; " + "; ".join(f"{METHODS[m]} {text(m)}" for m in variants)
        rows.append(
            claim(
                "mnist",
                "§4.4",
                CLAIMS[2],
                measured,
                True if all(wins) else "partly" if any(wins) else False,
            )
        )
    else:
        rows.append(claim("mnist", "§4.4", CLAIMS[2], "OLS or BAM not run", None))
    return rows


__all__ = [
    "CLAIMS",
    "METHODS",
    "PAPER",
    "DomainMoments",
    "accuracy",
    "claims",
    "domain_features",
    "evidence_noise_var",
    "log_evidence",
    "mnist_experiment",
    "ols_weights",
    "parallel_readout",
    "plot_mnist",
    "pooling_operator",
    "reproduce",
    "rotation_operator",
    "run_seed",
    "summarize",
]
