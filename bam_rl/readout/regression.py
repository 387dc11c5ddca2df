"""Algorithm 1 for Bayesian linear regression (known or unknown noise): each candidate costs
one Cholesky factorisation of its ``d × d`` precision (plus an ``r × r`` one for a low-rank new
datum), with the evidence assembled from residuals instead of the difference of two huge
log-normalisers; :class:`FactorCache` keeps factors between selections over one memory.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict

import numpy as np

from bam_rl.families.base import ConjugateFamily, Fields, NaturalParams
from bam_rl.families.linalg import Datum, EvidenceTerms, low_rank_route
from bam_rl.families.linear_regression import BayesianLinearRegression
from bam_rl.families.linear_regression_nig import BayesianLinearRegressionNIG
from bam_rl.memory import Memory
from bam_rl.readout.rule import FastGreedy, greedy_rounds

__all__ = ["FactorCache", "regression_greedy"]


class FactorCache:
    """Cholesky factors of candidate precisions ``Λ0 + Σ_{j∈S} S_j``, reused across calls.

    A greedy round factors every candidate's precision; the factor depends on the candidate
    *set* of records, not on the new datum, so repeated selections over the same memory (new
    data, other rounds picking the same records) reuse it. Sets are keyed by fingerprints of
    the records' statistics (their ``B``, the diagonal and a fixed random projection of their
    precision, their ``log h``) and of the family's prior precision, so a changed memory or
    family never hits stale entries. Least-recently-used factors are evicted beyond
    ``max_bytes``. A cached factor may have been summed in another order: values agree to
    rounding with an uncached run.

    Args:
        max_bytes: Memory budget for stored factors (default 1 GiB).

    Examples:
        >>> cache = FactorCache(max_bytes=2**28)
        >>> # select(model, memory, s_t, cache=cache) for many s_t over one memory
    """

    def __init__(self, max_bytes: int = 2**30):
        if int(max_bytes) != max_bytes or max_bytes < 0:
            raise ValueError(f"max_bytes must be an integer >= 0, got {max_bytes!r}")
        self.max_bytes = int(max_bytes)
        self._factors: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._factors)

    def get(self, key: tuple) -> np.ndarray | None:
        factor = self._factors.get(key)
        if factor is None:
            self.misses += 1
            return None
        self._factors.move_to_end(key)
        self.hits += 1
        return factor

    def put(self, key: tuple, factor: np.ndarray) -> None:
        if factor.nbytes > self.max_bytes or key in self._factors:
            return
        self._factors[key] = factor
        self._bytes += factor.nbytes
        while self._bytes > self.max_bytes:
            _, old = self._factors.popitem(last=False)
            self._bytes -= old.nbytes

    def clear(self) -> None:
        self._factors.clear()
        self._bytes = 0


def _digest(*arrays: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for array in arrays:
        h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return h.digest()


def _record_fingerprints(model: ConjugateFamily, stats: Fields) -> tuple[bytes, list[bytes]]:
    """Fingerprints of the family (prior precision) and of every record's statistics."""
    precision = stats["precision"]
    probe = np.random.default_rng(0).standard_normal(precision.shape[-1])
    projected = precision @ probe
    diagonal = np.diagonal(precision, axis1=-2, axis2=-1)
    extra = [stats[k] for k in stats if k not in ("precision", "B")]
    family = _digest(
        model.prior.fields["precision"],
        np.frombuffer(repr(model.signature()).encode(), dtype=np.uint8).astype(np.float64),
    )
    records = [
        _digest(projected[j], diagonal[j], stats["B"][j], *(e[j] for e in extra))
        for j in range(precision.shape[0])
    ]
    return family, records


class _Candidates:
    """Scores candidate beliefs ``current + record_j`` of a regression family one by one."""

    def __init__(
        self,
        model: BayesianLinearRegression | BayesianLinearRegressionNIG,
        datum: Datum,
        lam: float,
    ):
        self.model = model
        self.datum = datum
        self.lam = lam
        self.low_rank = low_rank_route(model.dim_in, datum.rank)
        stats = datum.stats.fields
        self.rhs = np.asfortranarray(
            np.concatenate([datum.factor, np.zeros_like(stats["B"])], axis=1)
        )
        self.evaluations = 0

    def needs_precision(self) -> bool:
        """Whether :meth:`evidence` needs the precision even with a known factor."""
        return bool(not self.low_rank and self.datum.rank) or self.lam > 0

    def factorise(self, precision: np.ndarray) -> np.ndarray:
        """Lower Cholesky factor (Fortran order) of ``precision``, computed in place."""
        from scipy.linalg import lapack  # deferred: keeps scipy.linalg out of import bam_rl

        # Λ is symmetric: its transpose is the Fortran-ordered copy LAPACK factors in place
        factor, info = lapack.dpotrf(precision.T, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise ValueError("belief precision must be symmetric positive definite")
        return factor

    def evidence(
        self,
        precision: np.ndarray | None,
        B: np.ndarray,
        extra: Fields,
        factor: np.ndarray | None = None,
    ) -> float:
        """Evidence of the datum under one belief ``(precision, B, extra fields)``; with a
        known ``factor`` of the precision, ``precision`` is only read by the full-rank route."""
        from scipy.linalg import lapack

        model, datum = self.model, self.datum
        rank = datum.rank
        if not self.low_rank and rank:
            self.post_precision = precision + datum.stats.fields["precision"]
        if factor is None:
            if precision is None:
                raise ValueError("evidence needs the precision or its factor")
            factor = self.factorise(precision)
        if rank == 0:
            z, _ = lapack.dtrtrs(factor, B, lower=1)
            terms = EvidenceTerms(np.zeros(()), np.zeros(()), np.asarray(np.sum(z * z)))
        elif self.low_rank:
            rhs = self.rhs
            rhs[:, rank:] = B
            solved, _ = lapack.dtrtrs(factor, rhs, lower=1)
            w, z = solved[:, :rank], solved[:, rank:]
            gram = w.T @ w
            gram[np.diag_indices(rank)] += 1.0
            k_factor, info = lapack.dpotrf(gram, lower=1, clean=1)
            if info != 0:  # pragma: no cover - I + WᵀW is positive definite
                raise ValueError("evidence matrix is not positive definite")
            residual, _ = lapack.dtrtrs(k_factor, datum.coef - w.T @ z, lower=1)
            terms = EvidenceTerms(
                2.0 * np.log(np.diagonal(k_factor)).sum(),
                np.asarray(np.sum(residual * residual)),
                np.asarray(np.sum(z * z)),
            )
        else:
            stats = datum.stats.fields
            post = self.post_precision
            post_factor, info = lapack.dpotrf(post.T, lower=1, clean=0, overwrite_a=1)
            if info != 0:
                raise ValueError("belief precision must be symmetric positive definite")
            z, _ = lapack.dtrtrs(factor, B, lower=1)
            prior_mean, _ = lapack.dtrtrs(factor, z, lower=1, trans=1)
            post_mean, _ = lapack.dpotrs(post_factor, B + stats["B"], lower=1)
            ut = datum.factor.T
            prior_res = datum.coef - ut @ prior_mean
            post_res = datum.coef - ut @ post_mean
            logdet = 2.0 * (
                np.log(np.diagonal(post_factor)).sum() - np.log(np.diagonal(factor)).sum()
            )
            terms = EvidenceTerms(
                np.asarray(logdet),
                np.asarray(max(float(np.sum(prior_res * post_res)), 0.0)),
                np.asarray(np.sum(z * z)),
            )
        self.evaluations += 1
        return float(model._evidence(extra, datum, terms))


def regression_greedy(
    model: BayesianLinearRegression | BayesianLinearRegressionNIG,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    cache: FactorCache | None = None,
) -> FastGreedy:
    datum = model.prepare_datum(s_t)
    scorer = _Candidates(model, datum, lam)
    stats = memory.stats.fields
    size = len(memory)
    scalars = [k for k in model.field_shapes if k not in ("precision", "B")]
    prior = {k: np.array(v) for k, v in model.prior.fields.items()}
    if cache is not None:
        family_key, records = _record_fingerprints(model, stats)

    def objective(
        fields: Fields, key: tuple | None, fresh: bool = True, factor: np.ndarray | None = None
    ) -> float:
        """``J`` of one belief; ``fresh``: its precision may be overwritten; ``factor``: its
        known Cholesky factor (from the cache)."""
        penalty = 0.0
        if lam > 0:  # before the evidence, which factors the precision in place
            kl = float(model.kl(NaturalParams(model, fields), model.prior))
            penalty = lam * math.sqrt(2.0 * max(kl, 0.0))
        extra = {k: fields[k] for k in scalars}
        precision = fields["precision"] if fresh else fields["precision"].copy()
        if factor is None and cache is not None and key is not None:
            factor = cache.get(key)
            if factor is None:
                keep = precision.copy() if scorer.needs_precision() else None
                factor = scorer.factorise(precision)
                cache.put(key, factor)
                precision = keep
        return scorer.evidence(precision, fields["B"], extra, factor) - penalty

    def key_of(selected: list[int]) -> tuple | None:
        if cache is None:
            return None
        return (family_key, tuple(sorted(records[j] for j in selected)))

    base = objective(prior, key_of([]), fresh=False)
    current = prior
    chosen: list[int] = []

    def score_round(unselected: np.ndarray) -> np.ndarray:
        round_scores = np.full(size, -np.inf)
        for j in np.flatnonzero(unselected):
            key = key_of([*chosen, int(j)])
            factor = None if key is None or cache is None else cache.get(key)
            if factor is not None and not scorer.needs_precision():
                # a cached factor: the candidate's d × d precision is never formed
                extra = {k: current[k] + stats[k][j] for k in scalars}
                round_scores[j] = scorer.evidence(None, current["B"] + stats["B"][j], extra, factor)
                continue
            candidate = {k: current[k] + stats[k][j] for k in current}
            # the candidate's precision is new (may be factored in place)
            round_scores[j] = objective(candidate, key, factor=factor)
        return round_scores

    def add(pick: int) -> None:
        nonlocal current
        chosen.append(pick)
        current = {k: current[k] + stats[k][pick] for k in current}

    weights, best, rounds = greedy_rounds(size, base, score_round, add)
    return FastGreedy(
        weights,
        best,
        base,
        rounds,
        scorer.evaluations,
        "regression-low-rank" if scorer.low_rank else "regression",
    )
