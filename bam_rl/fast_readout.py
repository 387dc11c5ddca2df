"""Structure-exploiting greedy readout (Algorithm 1), chosen by :func:`bam_rl.readout.select`.

Every path here returns the readout of the generic greedy (each round scores every unselected
record added to the current set, adds the best while ``J`` strictly improves, ties to the
lowest index); it only avoids work the generic loop repeats:

* **One-point Gaussian records** (:class:`NormalKnownVariance`, every record and the new datum
  with the same number of observations ``n``): all candidates of a round share the prior
  precision, and ``J`` is concave in the candidate's observation, so the best unselected
  record is a neighbour of the peak in sorted order — O(log m) per round
  (:mod:`bam_rl.gaussian_readout`) instead of O(m).
* **Repeated records** (any family with scalar statistics, e.g. Beta-Binomial successes of a
  fixed number of trials, Gamma-Poisson counts, rounded Gaussian rewards): identical records
  give identical candidate scores, so a round scores one representative (its lowest unselected
  index) per distinct record. The values are computed by the same family call as the generic
  greedy, so the result is bit-identical. (The sorted argument also holds for Beta-Binomial
  with fixed trials and Gamma-Poisson at ``λ = 0`` — ``J`` is concave in the count because
  the trigamma function decreases — but such records take few distinct values and grouping
  them is exact in floating point as well.)
* **Bayesian linear regression** (known or unknown noise): the new datum is reduced once per
  selection to ``r`` rows (pivoted Cholesky of its precision statistic); each candidate then
  costs one Cholesky factorisation of its ``d × d`` precision plus an ``r × r`` one when
  ``r`` is small (matrix-determinant lemma and Woodbury), or two when ``r`` is large, with
  the evidence assembled from residuals (:func:`bam_rl.families.linear_regression.
  evidence_terms`) instead of the difference of two huge log-normalisers. Candidates are
  factored one by one, in place, so memory stays at one ``d × d`` matrix.

The audit trail of the first two paths (``ReadoutResult.scores``) is computed on first
access, by the generic family call, from the recorded picks.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy.linalg import lapack

from bam_rl.families.base import ConjugateFamily, Fields, NaturalParams
from bam_rl.families.linear_regression import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    Datum,
    EvidenceTerms,
    _low_rank_route,
)
from bam_rl.families.normal import NormalKnownVariance
from bam_rl.gaussian_readout import _greedy_sorted, _sorted_records, gaussian_greedy_readout
from bam_rl.memory import Memory

__all__ = ["FactorCache", "FastGreedy", "LazyRounds", "fast_greedy", "gaussian_greedy_readout"]

#: Records whose fields hold at most this many numbers are grouped when duplicates exist.
_MAX_GROUPED_FIELD_SIZE = 16

Score = Callable[[Fields], np.ndarray]


class FastGreedy(NamedTuple):
    """What a fast path found: the greedy readout and its audit trail."""

    weights: np.ndarray
    objective: float
    base_objective: float
    scores: Sequence[np.ndarray]
    n_evaluations: int
    path: str


# ------------------------------------------------------------------------------ dispatch
def overrides_log_partition(model: ConjugateFamily) -> bool:
    """True when an instance replaces its log-normaliser (closed forms derived from the
    class's ``A`` then no longer apply, so the selectors use ``A`` itself)."""
    return any(
        name in vars(model)
        for name in ("log_partition_fields", "log_marginal_fields", "prepare_datum")
    )


def fast_greedy(
    model: ConjugateFamily,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    score: Score,
    cache: FactorCache | None = None,
) -> FastGreedy | None:
    """Runs the fast greedy path that applies to ``(model, memory, s_t)``, if any.

    Args:
        model: The conjugate family.
        memory: Non-empty memory of records.
        s_t: Statistics of the new datum (unbatched, checked).
        lam: Complexity penalty ``λ >= 0``.
        score: The generic objective on raw candidate fields (used for the base score, the
            final objective and the lazily computed audit trail).
        cache: Optional :class:`FactorCache` (regression families only).

    Returns:
        The readout, or ``None`` when no fast path applies (the caller runs the generic one).
    """
    if len(memory) == 0 or overrides_log_partition(model):
        return None
    if isinstance(model, (BayesianLinearRegression, BayesianLinearRegressionNIG)):
        return _regression_greedy(model, memory, s_t, lam, cache)
    fields = memory.stats.fields
    if isinstance(model, NormalKnownVariance):
        precision = fields["precision"]
        if (precision == precision[0]).all() and s_t.fields["precision"] == precision[0]:
            try:
                with np.errstate(divide="raise", over="raise", invalid="raise"):
                    return _gaussian_greedy(model, memory, s_t, lam, score)
            except ArithmeticError:  # ZeroDivisionError, OverflowError, FloatingPointError
                # extreme hand-built records (a zero or huge precision): the closed form
                # divides by zero or overflows, so the generic loop scores them instead
                pass
    if (
        sum(int(np.prod(shape, dtype=np.int64)) for shape in model.field_shapes.values())
        <= _MAX_GROUPED_FIELD_SIZE
    ):
        return _grouped_greedy(model, memory, s_t, score)
    return None


# ----------------------------------------------------------------------- lazy audit trail
class LazyRounds(Sequence):
    """The greedy audit trail (one array of candidate objectives per round), computed from
    the recorded picks by the generic objective when first read."""

    def __init__(
        self,
        score: Score,
        prior: Fields,
        stats: Fields,
        picks: Sequence[int] | np.ndarray,
        n_rounds: int,
    ):
        self._score = score
        self._prior = prior
        self._stats = stats
        self._picks = np.array(picks, dtype=np.intp)
        self._n_rounds = n_rounds
        self._rounds: list[np.ndarray] | None = None

    def _materialise(self) -> list[np.ndarray]:
        if self._rounds is None:
            size = next(iter(self._stats.values())).shape[0]
            unselected = np.ones(size, dtype=bool)
            current = {k: np.array(v, dtype=np.float64) for k, v in self._prior.items()}
            rounds = []
            for round_index in range(self._n_rounds):
                index = np.flatnonzero(unselected)
                candidates = {k: current[k] + self._stats[k][index] for k in current}
                values = np.full(size, -np.inf)
                values[index] = self._score(candidates)
                rounds.append(values)
                if round_index < len(self._picks):
                    pick = int(self._picks[round_index])
                    unselected[pick] = False
                    current = {k: current[k] + self._stats[k][pick] for k in current}
            self._rounds = rounds
        return self._rounds

    def __len__(self) -> int:
        return self._n_rounds

    def __getitem__(self, index: Any) -> Any:
        return self._materialise()[index]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._materialise())

    def __repr__(self) -> str:
        return f"LazyRounds(n_rounds={self._n_rounds})"


def _snapshot(memory: Memory) -> Fields:
    """The records' statistics as they are now, for an audit trail read later.

    An unbounded memory never rewrites a stored row (it appends, and :meth:`Memory.clear`
    allocates new arrays), so views are a snapshot; a bounded one merges rows in place.
    """
    fields = memory.stats.fields
    return dict(fields) if memory.capacity is None else {k: v.copy() for k, v in fields.items()}


def _n_rounds(size: int, n_picks: int) -> int:
    """Rounds the generic greedy runs: one per pick, plus the rejected one unless all picked."""
    return n_picks if n_picks == size else n_picks + 1


def _running_sum(prior: Fields, stats: Fields, index: np.ndarray) -> Fields:
    """``prior + stats[index[0]] + stats[index[1]] + …`` added in that order, the order of the
    generic greedy loop's running sum (compiled: :func:`bam_rl.kernels.readout.sequential_sum`,
    bit for bit the literal ``cumsum`` it replaces)."""
    from bam_rl.kernels.readout import sequential_sum

    size = next(iter(stats.values())).shape[0]
    return {
        k: sequential_sum(
            np.ascontiguousarray(prior[k], dtype=np.float64).reshape(-1),
            np.ascontiguousarray(stats[k], dtype=np.float64).reshape(size, -1),
            index,
        ).reshape(np.shape(prior[k]))
        for k in prior
    }


def _finish(
    model: ConjugateFamily,
    memory: Memory,
    score: Score,
    picks: Sequence[int] | np.ndarray,
    path: str,
) -> FastGreedy:
    """Weights, base and final objectives (generic arithmetic) and the lazy audit trail;
    ``picks`` are memory indices in the order the greedy added them."""
    size = len(memory)
    prior = {k: np.array(v) for k, v in model.prior.fields.items()}
    base = float(score(prior))
    index = np.asarray(picks, dtype=np.intp)
    weights = np.zeros(size)
    weights[index] = 1.0
    if index.size:
        current = _running_sum(prior, memory.stats.fields, index)
        best = float(score(current))
    else:
        best = base
    n_rounds = _n_rounds(size, index.size)
    evaluations = 1 + n_rounds * size - n_rounds * (n_rounds - 1) // 2
    rounds = LazyRounds(score, prior, _snapshot(memory), index, n_rounds)
    return FastGreedy(weights, best, base, rounds, evaluations, path)


# ----------------------------------------------------------- repeated records (grouping)
def _grouped_greedy(
    model: ConjugateFamily, memory: Memory, s_t: NaturalParams, score: Score
) -> FastGreedy | None:
    size = len(memory)
    stats = memory.stats.fields
    flat = np.concatenate([v.reshape(size, -1) for v in stats.values()], axis=1)
    _, first, inverse = np.unique(flat, axis=0, return_index=True, return_inverse=True)
    n_groups = first.size
    if n_groups == size:
        return None
    inverse = inverse.reshape(-1)
    # members of each group in memory order; a pointer to the lowest unselected one
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(n_groups))
    ends = np.append(starts[1:], size)
    pointer = starts.copy()
    prior = {k: np.array(v) for k, v in model.prior.fields.items()}
    current = prior
    best = float(score(current))
    picks: list[int] = []
    # the groups still available, in a fixed order, with one record's statistics each
    available = np.arange(n_groups)
    group_stats = {k: v[order[starts]] for k, v in stats.items()}
    while available.size:
        candidates = {k: current[k] + group_stats[k] for k in current}
        values = score(candidates)
        top = int(np.argmax(values))
        if not values[top] > best:
            break
        ties = np.flatnonzero(values == values[top])
        if ties.size > 1:  # equal J: the lowest memory index, as the generic argmax picks
            top = int(ties[np.argmin(order[pointer[available[ties]]])])
        best = float(values[top])
        group = int(available[top])
        pick = int(order[pointer[group]])
        picks.append(pick)
        current = {k: current[k] + stats[k][pick] for k in current}
        pointer[group] += 1
        if pointer[group] == ends[group]:
            keep = np.arange(available.size) != top
            available = available[keep]
            group_stats = {k: v[keep] for k, v in group_stats.items()}
    result = _finish(model, memory, score, picks, "grouped")
    return result._replace(objective=best if picks else result.base_objective)


# -------------------------------------------------------------- one-point Gaussian records
def _gaussian_greedy(
    model: NormalKnownVariance, memory: Memory, s_t: NaturalParams, lam: float, score: Score
) -> FastGreedy:
    stats = memory.stats.fields
    per_record = float(stats["precision"][0])  # n / σ² of every record and of D_t
    values = stats["precision_mean"] / per_record  # the records' sample means
    sorted_values, order = _sorted_records(memory, values)
    v = float(s_t.fields["precision_mean"]) / per_record
    _, picks = _greedy_sorted(
        sorted_values, order, v, 1.0 / per_record, 1.0 / model.prior_var, model.prior_mean, lam
    )
    return _finish(model, memory, score, picks, "gaussian")


# ------------------------------------------------------------ Bayesian linear regression
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
        self.low_rank = _low_rank_route(model.dim_in, datum.rank)
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


def _regression_greedy(
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
    best = base
    current = prior
    chosen: list[int] = []
    weights = np.zeros(size)
    unselected = np.ones(size, dtype=bool)
    rounds: list[np.ndarray] = []
    while unselected.any():
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
        rounds.append(round_scores)
        pick = int(np.argmax(round_scores))  # first maximum: ties go to the lowest index
        if not round_scores[pick] > best:
            break
        best = float(round_scores[pick])
        weights[pick] = 1.0
        chosen.append(pick)
        unselected[pick] = False
        current = {k: current[k] + stats[k][pick] for k in current}
    return FastGreedy(
        weights,
        best,
        base,
        rounds,
        scorer.evaluations,
        "regression-low-rank" if scorer.low_rank else "regression",
    )
