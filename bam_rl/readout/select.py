"""``select`` and ``objective``: readout-weight selection by the four methods (generic
loops; the greedy first tries the exact fast paths of :mod:`bam_rl.readout.greedy`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np

from bam_rl.checks import all_finite, as_float_array, check_int, check_real
from bam_rl.families.base import ConjugateFamily, Fields, NaturalParams, contract
from bam_rl.families.normal import NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout.greedy import (
    fast_greedy,
    one_point_picks,
    overrides_log_partition,
    run_one_point,
)
from bam_rl.readout.regression import FactorCache
from bam_rl.readout.rule import LazyRounds, greedy_rounds

METHODS = ("greedy", "parallel", "exhaustive", "continuous")
MAX_EXHAUSTIVE_ITEMS = 16


@dataclass
class ReadoutResult:
    """Outcome of a readout selection.

    Attributes:
        weights: Readout weights, one per memory record, in [0, 1].
        objective: ``J(weights)``.
        base_objective: ``J(0)``, the score of the base prior alone.
        scores: Audit trail: for ``greedy`` one array per round with the objective of every
            candidate (``-inf`` for already selected items); for ``parallel`` one array of
            single-item objectives; for ``exhaustive`` the objective of every subset, indexed
            by the subset's bit pattern (item ``j`` is bit ``j``); for ``continuous`` the
            objective at the start and at the end. The fast greedy paths for scalar families
            compute the per-round arrays from the picks when first read (a lazy sequence).
        method: The method used.
        n_evaluations: How many objective values the selection determined (base score plus
            every audit-trail entry); fast paths determine repeated or dominated candidates
            without computing each one.
        path: ``"generic"`` or the fast greedy path used (see :mod:`bam_rl.fast_readout`).
    """

    weights: np.ndarray
    objective: float
    base_objective: float
    scores: Sequence[np.ndarray] = field(default_factory=list)
    method: str = "greedy"
    n_evaluations: int = 0
    path: str = "generic"

    @property
    def selected(self) -> np.ndarray:
        """Indices of the records with a non-zero weight."""
        return np.flatnonzero(self.weights > 0)


class LazyReadoutResult(ReadoutResult):
    """A fast greedy path's :class:`ReadoutResult` whose ``objective`` and ``base_objective``
    are computed from its audit trail when first read (:meth:`LazyRounds.objectives`: the
    generic objective on the prior and on the prior plus the picks, the values an eager
    readout holds, bit for bit). A rule that reads only the weights, as :class:`bam_rl.beliefs.
    BAM` on every datum, then skips two evaluations of ``J`` and a running sum per step."""

    def __init__(
        self, weights: np.ndarray, scores: LazyRounds, method: str, n_evaluations: int, path: str
    ):
        self.weights = weights
        self.scores = scores
        self.method = method
        self.n_evaluations = n_evaluations
        self.path = path

    #: Values assigned after construction (each instance's own dict, from the first one on).
    _set: Mapping[str, float] = {}

    def _value(self, name: str, index: int) -> float:
        if name in self._set:
            return self._set[name]
        trail = self.scores
        assert isinstance(trail, LazyRounds)
        return trail.objectives()[index]

    @property
    def objective(self) -> float:
        return self._value("objective", 0)

    @objective.setter
    def objective(self, value: float) -> None:
        self._set = {**self._set, "objective": value}

    @property
    def base_objective(self) -> float:
        return self._value("base_objective", 1)

    @base_objective.setter
    def base_objective(self, value: float) -> None:
        self._set = {**self._set, "base_objective": value}


class _Objective:
    """Evaluates ``J`` on raw field arrays for batches of candidate priors."""

    def __init__(self, model: ConjugateFamily, s_t: NaturalParams, lam: float):
        self.model = model
        self.s_t = s_t
        self.lam = lam
        self.prior = model.prior
        self.evaluations = 0
        # a family's own (possibly better-conditioned) evidence, unless A was replaced
        self.plain = overrides_log_partition(model)
        self.datum = None if self.plain else model.prepare_datum(s_t)

    def __call__(self, candidates: Fields) -> np.ndarray:
        model = self.model
        if self.plain:
            posterior = {k: candidates[k] + self.s_t.fields[k] for k in candidates}
            value = (
                model.log_partition_fields(posterior)
                - model.log_partition_fields(candidates)
                + self.s_t.log_h
            )
        else:
            value = model.log_marginal_fields(candidates, self.datum)
        if self.lam > 0:
            value = value - self.lam * np.sqrt(2.0 * np.maximum(self.kl_to_prior(candidates), 0))
        value = np.asarray(value, dtype=np.float64)
        if not all_finite(value):
            # never a NaN objective with zero weights: the comparisons would stop silently
            raise ValueError(
                "readout objective is not finite: the log marginal likelihood of "
                "s_t under a candidate prior overflowed float64 (data or stored "
                "statistics too large in magnitude for the family)"
            )
        self.evaluations += value.size
        return value

    def kl_to_prior(self, candidates: Fields) -> np.ndarray:
        return np.asarray(self.model.kl(NaturalParams(self.model, candidates), self.prior))


def objective(
    model: ConjugateFamily, memory: Memory, s_t: NaturalParams, weights: Any, lam: float = 0.0
) -> np.ndarray | float:
    """``J(W)`` for one readout ``(m,)`` or a batch of readouts ``(k, m)``."""
    lam = _check_lam(lam)
    _check_inputs(model, memory, s_t)
    candidates = memory.weighted_sum(weights, base=model.prior)
    values = _Objective(model, s_t, lam)(candidates.fields)
    return values if values.ndim else float(values)


def select(
    model: ConjugateFamily,
    memory: Memory,
    s_t: NaturalParams,
    lam: float = 0.0,
    method: str = "greedy",
    *,
    q: float = 0.5,
    initial: Any = None,
    max_iter: int = 200,
    fast: bool = True,
    cache: FactorCache | None = None,
) -> ReadoutResult:
    """Chooses readout weights for the new datum ``s_t`` over the records in ``memory``.

    Args:
        model: The conjugate family (its ``prior`` is the base prior ``p(θ)``).
        memory: Past data ``D_<t`` as sufficient statistics.
        s_t: Statistics of the new datum ``D_t`` (unbatched).
        lam: Strength ``λ >= 0`` of the complexity penalty.
        method: ``"greedy"``, ``"parallel"``, ``"exhaustive"`` or ``"continuous"``.
        q: Quantile in [0, 1] of the kept single-item scores used as the ``parallel``
            cut-off (the paper gives no value; 0.5 keeps the better half).
        initial: Starting weights for ``continuous`` (default: the greedy readout).
        max_iter: Iteration cap for ``continuous``.
        fast: Let ``greedy`` use a structure-exploiting path of :mod:`bam_rl.fast_readout`
            when one applies (same readout); ``False`` always runs the generic loop.
        cache: A :class:`~bam_rl.readout.FactorCache` that keeps the Cholesky factors of
            candidate precisions between calls (Bayesian linear regression greedy only):
            repeated selections over one memory then skip most factorisations.

    Returns:
        A :class:`ReadoutResult`.

    Raises:
        ValueError: For ``lam < 0``, an unknown method, ``q`` outside [0, 1], statistics from
            another family, or more than 16 records with ``exhaustive``.
    """
    lam = _check_lam(lam)
    _check_inputs(model, memory, s_t)
    options = check_select_options(
        method, {"q": q, "initial": initial, "max_iter": max_iter, "fast": fast, "cache": cache}
    )
    return select_checked(model, memory, s_t, lam, method, options)


def select_checked(
    model: ConjugateFamily,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    method: str,
    options: Mapping[str, Any],
) -> ReadoutResult:
    """:func:`select` without the checks of its arguments, for a caller that checked them
    (:class:`bam_rl.beliefs.BAM` checks its options once, at construction, and every datum
    in ``update``): ``lam`` a float >= 0, ``s_t`` one datum of ``model``, ``memory``'s records
    of ``model``, ``options`` as :func:`check_select_options` returns them (missing ones take
    :func:`select`'s defaults).

    A fast greedy path's result is a :class:`LazyReadoutResult`: its objectives are computed
    when first read.
    """
    q = options.get("q", 0.5)
    initial = options.get("initial")
    max_iter = options.get("max_iter", 200)
    score = _Objective(model, s_t, lam)
    found = (
        fast_greedy(model, memory, s_t, lam, score, options.get("cache"))
        if method == "greedy" and options.get("fast", True)
        else None
    )
    if found is not None:
        if found.objective is None or found.base_objective is None:
            assert isinstance(found.scores, LazyRounds)
            return LazyReadoutResult(
                found.weights, found.scores, method, found.n_evaluations, found.path
            )
        return ReadoutResult(
            found.weights,
            found.objective,
            found.base_objective,
            found.scores,
            method,
            found.n_evaluations,
            found.path,
        )
    if method == "greedy":
        result = _greedy(model, memory, score)
    elif method == "parallel":
        result = _parallel(model, memory, score, q)
    elif method == "exhaustive":
        result = _exhaustive(model, memory, score)
    else:
        result = _continuous(model, memory, score, initial, max_iter)
    result.method = method
    result.n_evaluations = score.evaluations
    return result


def readout_prior(
    memory: Memory,
    weights: np.ndarray,
    base: NaturalParams,
    stats: NaturalParams | None = None,
    datum: NaturalParams | None = None,
) -> NaturalParams:
    """``memory.weighted_sum(weights, base=base)`` for the weights a selector returned (float64,
    one per record, in [0, 1]) and an unbatched ``base`` — or, given an unbatched ``datum`` of
    the family, the posterior ``memory.weighted_sum(weights, base=base) + datum`` — computed
    by the same products (:func:`~bam_rl.families.base.contract`, ``weights @ log_h`` as
    ``0.0 + weights.dot(log_h)``) and
    sums, in the same order, so bit for bit the same belief, without re-checking the weights,
    the records (checked when stored) and the datum (checked by the caller). A scalar field's
    product is ``np.dot`` of the two vectors, the BLAS dot product ``contract`` reaches
    through its reshapes (the same call, so the same bits; tested). A sum that is not finite
    takes ``Memory.weighted_sum`` (and ``+``), which refuse it. Scalars are added as Python
    floats (IEEE double additions, as NumPy's; an intermediate sum that overflows stays
    infinite, so the final test catches it). ``stats``: ``memory.stats``, when the caller
    has it."""
    if (
        type(weights) is not np.ndarray
        or weights.dtype != np.float64
        or weights.shape != (len(memory),)
        or base.batch_shape != ()
    ):
        return _checked_readout(memory, weights, base, datum)
    if stats is None:
        stats = memory.stats
    fields = {}
    base_fields = base.fields
    datum_fields = None if datum is None else datum.fields
    for name, array in stats.fields.items():
        if array.ndim == 1:  # scalar fields: the same additions on Python floats
            # ``weights.dot`` is ``np.dot``'s own C call, without its dispatch
            value = float(base_fields[name]) + float(weights.dot(array))
            if datum_fields is not None:
                value += float(datum_fields[name])
            if not math.isfinite(value):
                return _checked_readout(memory, weights, base, datum)
            fields[name] = np.asarray(value)
            continue
        total = np.asarray(base_fields[name] + contract(weights, array))
        if datum_fields is not None and all_finite(total):
            total = np.asarray(total + datum_fields[name])
        if not all_finite(total):
            return _checked_readout(memory, weights, base, datum)
        fields[name] = total
    # ``weights @ log_h`` of two contiguous float64 vectors is NumPy's ``0.0 + ddot``, where
    # ``np.dot`` is the BLAS ``ddot`` alone (they differ in the sign of a zero; tested); both
    # are contiguous here (the selector's weights, the memory's own column); a reversed view
    # would not be bit-equal
    log_h = float(base.log_h) + (0.0 + float(weights.dot(stats.log_h)))
    if datum is not None:
        log_h += float(datum.log_h)
    if not math.isfinite(log_h):
        return _checked_readout(memory, weights, base, datum)
    return NaturalParams._trusted(base.family, fields, np.asarray(log_h), ())


def _checked_readout(
    memory: Memory, weights: np.ndarray, base: NaturalParams, datum: NaturalParams | None
) -> NaturalParams:
    """:func:`readout_prior` by the checked operations (which refuse a sum that overflows)."""
    prior = memory.weighted_sum(weights, base=base)
    return prior if datum is None else prior + datum


def one_point_select(
    model: ConjugateFamily,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    method: str,
    options: Mapping[str, Any],
) -> tuple[LazyReadoutResult, NaturalParams] | None:
    """:func:`select_checked`'s result, and ``memory.stats``, in the common case of a
    ``thompson-bam`` or ``ucbam`` step: the λ = 0 greedy over one-point Gaussian records
    (:func:`~bam_rl.readout.greedy.one_point_picks`) whose objectives cannot overflow, so
    they are left to the audit trail. ``None`` in every other case (the caller runs
    :func:`select_checked`). The same readout as :func:`select_checked`'s, without its
    layers of dispatch (a third of such a step)."""
    if not _takes_one_point(model, memory, lam, method, options):
        return None
    stats = memory.stats
    fields = stats.fields
    found = one_point_picks(model, memory, s_t, lam, fields)
    if found is None or not found[2]:
        return None
    picks, weights, _ = found
    means, precisions = fields["precision_mean"], fields["precision"]
    return _one_point_result(model, memory, s_t, lam, means, precisions, picks, weights), stats


def _takes_one_point(
    model: ConjugateFamily, memory: Memory, lam: float, method: str, options: Mapping[str, Any]
) -> TypeGuard[NormalKnownVariance]:
    """Whether the one-point greedy may take a readout: the greedy at λ = 0 over a non-empty
    memory of a :class:`NormalKnownVariance` whose log partition is its own (one replaced
    has no closed form), the fast path not switched off."""
    if method != "greedy" or lam != 0.0 or type(model) is not NormalKnownVariance:
        return False  # one_point_picks' own refusal, or another method
    fast = bool(options.get("fast", True))
    return bool(len(memory)) and fast and not overrides_log_partition(model)


def one_point_posterior(
    model: ConjugateFamily,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    method: str,
    options: Mapping[str, Any],
) -> tuple[LazyReadoutResult, NaturalParams] | None:
    """A BAM step's readout and posterior in the case :func:`one_point_select` takes: its
    readout, and ``readout_prior(memory, readout.weights, model.prior, memory.stats, s_t)``
    — the same products and sums in the same order, so the same belief bit for bit — read
    from the memory's own columns, without the intermediate ``memory.stats``. ``None``
    exactly where :func:`one_point_select` is ``None``; arguments as it takes them."""
    if not _takes_one_point(model, memory, lam, method, options):
        return None
    size = len(memory)
    columns = memory._fields
    means, precisions = columns["precision_mean"][:size], columns["precision"][:size]
    datum = s_t.fields
    h1, h2, log_h = float(datum["precision_mean"]), float(datum["precision"]), float(s_t.log_h)
    found = run_one_point(model, memory, means, precisions, h2, h1, log_h)
    if found is None or found[1] < 0:  # declined, or objectives that could overflow
        return None
    buffers, k, weights = found
    picks = buffers.picks[:k].copy()
    readout = _one_point_result(model, memory, s_t, lam, means, precisions, picks, weights)
    # readout_prior's arithmetic on the two scalar fields and log h (see there), from the
    # prior's floats the buffers keep (buffers.prior is model.prior)
    eta1, eta2, total = buffers.prior_floats
    eta1 += float(weights.dot(means))
    eta1 += h1
    eta2 += _dot_of_equal(weights, precisions, k, h2, buffers.numerator)
    eta2 += h2
    total += 0.0 + float(weights.dot(memory._log_h[:size]))
    total += log_h
    if not (math.isfinite(eta1) and math.isfinite(eta2) and math.isfinite(total)):
        return readout, _checked_readout(memory, weights, model.prior, s_t)  # refuses it
    fields = {"precision_mean": np.asarray(eta1), "precision": np.asarray(eta2)}
    return readout, NaturalParams._trusted(model.prior.family, fields, np.asarray(total), ())


def _dot_of_equal(
    weights: np.ndarray, column: np.ndarray, n_picks: int, c: float, numerator: int
) -> float:
    """``float(weights.dot(column))`` for 0/1 ``weights`` with ``n_picks`` ones over a column
    whose entries all equal ``c >= 1`` (one-point records of one count, as the kernel
    checked), ``numerator`` being ``M`` of ``c = M / 2^p``: ``n_picks · c`` when that is exact
    whatever the order of the additions — ``M · len(column) < 2^53``, so every partial sum
    ``j · c`` is a float and the dot product's sum (zeros included) is ``n_picks · c`` bit for
    bit (tested) — else the dot product itself."""
    if numerator * column.size < _EXACT_INTEGERS:
        return n_picks * c
    return float(weights.dot(column))


#: 2^53: below it every integer is a float64.
_EXACT_INTEGERS = 2**53


def _one_point_result(
    model: ConjugateFamily,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    means: np.ndarray,
    precisions: np.ndarray,
    picks: np.ndarray,
    weights: np.ndarray,
) -> _OnePointReadout:
    """The lazy readout of the one-point picks over ``memory``'s records (their
    ``precision_mean`` and ``precision``: ``means``, ``precisions``)."""
    size, n_picks = len(memory), picks.size
    n_rounds = n_picks if n_picks == size else n_picks + 1  # as audit_trail counts them
    evaluations = 1 + n_rounds * size - n_rounds * (n_rounds - 1) // 2
    # the records as they are now (a bounded memory merges rows in place; an unbounded one
    # only appends, so views are a snapshot), as audit_trail keeps them
    if memory.capacity is None:
        snapshot = {"precision_mean": means, "precision": precisions}
    else:
        snapshot = {"precision_mean": means.copy(), "precision": precisions.copy()}
    trail = (model, s_t, lam, model.prior.fields, snapshot, picks, n_rounds)
    return _OnePointReadout(weights, evaluations, trail)


class _OnePointReadout(LazyReadoutResult):
    """:func:`one_point_select`'s :class:`LazyReadoutResult`, whose audit trail itself (the
    :class:`LazyRounds` :func:`~bam_rl.readout.rule.audit_trail` builds, over
    ``_Objective(model, s_t, lam)``) is built when first read: a BAM step reads the weights
    alone, and the trail's values do not depend on when it is built (the objective, the
    prior and the snapshot of the records are fixed)."""

    method = "greedy"  # the one method it takes (_takes_one_point)
    path = "gaussian"

    def __init__(self, weights: np.ndarray, n_evaluations: int, trail: tuple[Any, ...]):
        self.weights = weights
        self.n_evaluations = n_evaluations
        self._trail: tuple[Any, ...] | LazyRounds = trail

    @property  # type: ignore[override]
    def scores(self) -> LazyRounds:
        trail = self._trail
        if not isinstance(trail, LazyRounds):
            model, s_t, lam, prior, stats, picks, n_rounds = trail
            trail = self._trail = LazyRounds._owned(
                _Objective(model, s_t, lam),
                {k: np.array(v) for k, v in prior.items()},
                stats,
                picks if picks.dtype == np.intp else picks.astype(np.intp),
                n_rounds,
            )
        return trail

    @scores.setter
    def scores(self, value: LazyRounds) -> None:
        self._trail = value


#: The keyword-only options of :func:`select`.
OPTIONS = ("q", "initial", "max_iter", "fast", "cache")


def check_select_options(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Checks a readout method and its options the way :func:`select` will use them.

    The one home of these checks: :func:`select` runs them on every call and
    :class:`bam_rl.beliefs.BAM` at construction, so a bad option fails at once rather than
    at the first update.

    Args:
        method: One of :data:`METHODS`.
        options: Any of :data:`OPTIONS`: ``q`` (a number in [0, 1]), ``initial`` (``None`` or
            numeric weights in [0, 1]; their length is checked against the memory by
            ``select``), ``max_iter`` (an integer >= 1), ``fast`` (a bool), ``cache``
            (``None`` or a :class:`~bam_rl.readout.FactorCache`).

    Returns:
        The options, normalised (``q`` a float, ``max_iter`` an int, ``fast`` a bool).

    Raises:
        ValueError: Naming the method or the option and its accepted range.
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(options, Mapping):
        raise ValueError(f"readout options must be a mapping, got {type(options).__name__}")
    unknown = sorted(str(name) for name in options if name not in OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown readout option(s) {unknown} for method={method!r}; accepted: {list(OPTIONS)}"
        )
    checked = dict(options)
    if "q" in checked:
        checked["q"] = check_real("q", checked["q"], lower=0.0, upper=1.0)
    if "max_iter" in checked:
        checked["max_iter"] = check_int("max_iter", checked["max_iter"])
    if "fast" in checked:
        if not isinstance(checked["fast"], (bool, np.bool_)):
            raise ValueError(f"fast must be a bool, got {checked['fast']!r}")
        checked["fast"] = bool(checked["fast"])
    if checked.get("cache") is not None and not isinstance(checked["cache"], FactorCache):
        raise ValueError(
            f"cache must be None or a FactorCache, got {type(checked['cache']).__name__}"
        )
    initial = checked.get("initial")
    if initial is not None:
        weights = as_float_array("initial", initial)
        if weights.ndim != 1 or np.any((weights < 0) | (weights > 1)):
            raise ValueError(
                f"initial must be None or a 1-d array of weights in [0, 1], got {initial!r}"
            )
    return checked


def _check_lam(lam: Any) -> float:
    return check_real("lam", lam, lower=0.0)


def _check_inputs(model: ConjugateFamily, memory: Memory, s_t: NaturalParams) -> None:
    if not isinstance(model, ConjugateFamily):
        raise ValueError(f"model must be a ConjugateFamily (e.g. BetaBinomial()), got {model!r}")
    if not isinstance(memory, Memory):
        raise ValueError(f"memory must be a Memory, got {type(memory).__name__}")
    model.check_params(s_t, "s_t")
    if s_t.batch_shape != ():
        raise ValueError(f"s_t must be a single datum (batch shape ()), got {s_t.batch_shape}")
    if memory.family is not None:
        model.check_compatible(memory.family)


def _greedy(model: ConjugateFamily, memory: Memory, score: _Objective) -> ReadoutResult:
    size = len(memory)
    current = {k: v.copy() for k, v in model.prior.fields.items()}
    base = float(score(current))
    if size == 0:
        return ReadoutResult(np.zeros(size), base, base, [])
    stacked = memory.stats.fields

    def score_round(unselected: np.ndarray) -> np.ndarray:
        index = np.flatnonzero(unselected)
        candidates = {k: current[k] + stacked[k][index] for k in current}
        values = score(candidates)
        round_scores = np.full(size, -np.inf)
        round_scores[index] = values
        return round_scores

    def add(pick: int) -> None:
        nonlocal current
        current = {k: current[k] + stacked[k][pick] for k in current}

    weights, best, rounds = greedy_rounds(size, base, score_round, add)
    return ReadoutResult(weights, best, base, rounds)


def _parallel(model: ConjugateFamily, memory: Memory, score: _Objective, q: float) -> ReadoutResult:
    size = len(memory)
    base = float(score(model.prior.fields))
    weights = np.zeros(size)
    if size == 0:
        return ReadoutResult(weights, base, base, [])
    stacked = memory.stats.fields
    singles = score({k: model.prior.fields[k] + stacked[k] for k in stacked})
    kept = singles > base
    if kept.any():
        cutoff = np.quantile(singles[kept], q)
        weights[kept & (singles >= cutoff)] = 1.0
    value = float(score(memory.weighted_sum(weights, base=model.prior).fields))
    return ReadoutResult(weights, value, base, [singles])


def _exhaustive(
    model: ConjugateFamily, memory: Memory, score: _Objective, chunk: int = 4096
) -> ReadoutResult:
    size = len(memory)
    if size > MAX_EXHAUSTIVE_ITEMS:
        raise ValueError(
            f"exhaustive selection supports at most {MAX_EXHAUSTIVE_ITEMS} records, "
            f"memory has {size}"
        )
    base = float(score(model.prior.fields))
    if size == 0:
        return ReadoutResult(np.zeros(0), base, base, [np.array([base])])
    patterns = np.arange(2**size)
    all_values = np.empty(2**size)
    stats = memory.stats
    for start in range(0, 2**size, chunk):
        block = patterns[start : start + chunk]
        weights = ((block[:, None] >> np.arange(size)) & 1).astype(np.float64)
        candidates = model.prior + stats.weighted_sum(weights)
        all_values[start : start + chunk] = score(candidates.fields)
    best = int(np.argmax(all_values))
    weights = ((best >> np.arange(size)) & 1).astype(np.float64)
    return ReadoutResult(weights, float(all_values[best]), base, [all_values])


def _continuous(
    model: ConjugateFamily, memory: Memory, score: _Objective, initial: Any, max_iter: int
) -> ReadoutResult:
    size = len(memory)
    if initial is None:
        start = _greedy(model, memory, score).weights
    else:
        start = as_float_array("initial", initial)
        if start.shape != (size,):
            raise ValueError(f"initial must have shape ({size},), got {start.shape}")
        if np.any((start < 0) | (start > 1)):
            raise ValueError("initial weights must lie in [0, 1]")
    base = float(score(model.prior.fields))
    if size == 0:
        return ReadoutResult(start, base, base, [np.array([base])])
    start_value = float(score(memory.weighted_sum(start, base=model.prior).fields))
    stats = memory.stats

    def negative_objective(weights: np.ndarray) -> tuple[float, np.ndarray]:
        belief = model.prior + stats.weighted_sum(weights)
        value = float(score(belief.fields))
        posterior = belief + score.s_t
        gradient = stats.inner(
            _difference(
                model.grad_log_partition_fields(posterior.fields),
                model.grad_log_partition_fields(belief.fields),
            )
        )
        if score.lam > 0:
            kl = float(score.kl_to_prior(belief.fields))
            if kl > 1e-300:
                gradient = gradient - score.lam * stats.inner(
                    _kl_gradient(model, belief)
                ) / np.sqrt(2.0 * kl)
        return -value, -np.asarray(gradient, dtype=np.float64)

    from scipy.optimize import minimize  # deferred: scipy.optimize is a fifth of import bam_rl

    solution = minimize(
        negative_objective,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * size,
        options={"maxiter": max_iter},
    )
    weights = np.clip(solution.x, 0.0, 1.0)
    value = float(score(memory.weighted_sum(weights, base=model.prior).fields))
    if not value >= start_value:  # the optimiser may only improve on its starting point
        weights, value = start, start_value
    return ReadoutResult(weights, value, base, [np.array([start_value, value])])


def _difference(a: Fields, b: Fields) -> Fields:
    return {k: a[k] - b[k] for k in a}


def _kl_gradient(model: ConjugateFamily, belief: NaturalParams, step: float = 1e-5) -> Fields:
    """``∇_η KL(η ‖ η0) = H(η)(η − η0)`` by a central difference of ``∇A`` along ``η − η0``.

    Both probe points ``η0 + (1 ± step)(η − η0)`` stay proper beliefs, so no domain checks
    can fail.
    """
    prior = model.prior.fields
    direction = {k: belief.fields[k] - prior[k] for k in prior}
    upper = {k: belief.fields[k] + step * direction[k] for k in prior}
    lower = {k: belief.fields[k] - step * direction[k] for k in prior}
    grad_upper = model.grad_log_partition_fields(upper)
    grad_lower = model.grad_log_partition_fields(lower)
    return {k: (grad_upper[k] - grad_lower[k]) / (2.0 * step) for k in prior}
