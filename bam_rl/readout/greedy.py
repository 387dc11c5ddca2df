"""Structure-exploiting greedy readout (Algorithm 1), chosen by :func:`bam_rl.readout.select`.

Every path here returns the readout of the generic greedy (each round scores every unselected
record added to the current set, adds the best while ``J`` strictly improves, ties to the
lowest index); it only avoids work the generic loop repeats:

* **One-point Gaussian records** (:class:`NormalKnownVariance`, every record and the new datum
  with the same number of observations ``n``): all candidates of a round share the prior
  precision, and ``J`` is concave in the candidate's observation, so the best unselected
  record is a neighbour of the peak in sorted order — O(log m) per round
  (:mod:`bam_rl.readout.gaussian`) instead of O(m).
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

import weakref
from typing import Any

import numpy as np

from bam_rl.families import BayesianLinearRegression, BayesianLinearRegressionNIG
from bam_rl.families.base import ConjugateFamily, NaturalParams
from bam_rl.families.normal import NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout.gaussian import greedy_picks, sorted_records, whole_parabola_table
from bam_rl.readout.regression import FactorCache, regression_greedy
from bam_rl.readout.rule import FastGreedy, Score, accept, finish

__all__ = ["IdentityCache", "fast_greedy", "one_point_picks", "overrides_log_partition"]

#: Records whose fields hold at most this many numbers are grouped when duplicates exist.
_MAX_GROUPED_FIELD_SIZE = 16


# ------------------------------------------------------------------------------ dispatch
def overrides_log_partition(model: ConjugateFamily) -> bool:
    """True when an instance replaces its log-normaliser (closed forms derived from the
    class's ``A`` then no longer apply, so the selectors use ``A`` itself)."""
    return not _OVERRIDES.isdisjoint(vars(model))


#: The attributes by which an instance replaces its family's log-normaliser.
_OVERRIDES = frozenset(("log_partition_fields", "log_marginal_fields", "prepare_datum"))


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
        return regression_greedy(model, memory, s_t, lam, cache)
    fields = memory.stats.fields
    if isinstance(model, NormalKnownVariance):
        try:
            found = _one_point_greedy(model, memory, s_t, lam, score, fields)
            if found is not None:
                return found
            precision = fields["precision"]
            first = precision[0]
            if s_t.fields["precision"] == first and (precision == first).all():
                return _gaussian_greedy(model, memory, s_t, lam, score, fields)
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


# ----------------------------------------------------------- repeated records (grouping)
#: Most rounds scored ahead in one call of the objective (see :func:`_grouped_greedy`).
_MAX_LOOKAHEAD = 256
#: Rounds scored ahead for a new guess: a wrong guess costs a few spare evaluations of ``J``,
#: a short one another call, which costs more than ~20 evaluations.
_NEW_GUESS_LOOKAHEAD = 8


def _grouped_greedy(
    model: ConjugateFamily, memory: Memory, s_t: NaturalParams, score: Score
) -> FastGreedy | None:
    """The greedy over groups of identical records, several rounds scored per call.

    The coming rounds are scored in one batch on a guess that one group keeps winning (the
    last winner, or after it runs out the best other group of its last round; the Bernoulli
    records of a bandit arm win ~100 rounds in a row): round ``r`` of the batch scores every
    available group added to the running sum after ``r`` more picks of the guessed group,
    the sum accumulated in the generic loop's order (``np.add.accumulate``), so every value
    is the generic loop's bit for bit. The rounds the guess wins outright (a unique,
    strictly improving maximum) are taken at once; the first other round is decided by the
    generic rule and ends the batch. The look-ahead doubles while a guess holds. A batch
    whose objective refuses (a value that is not finite) is rescored as one round, and the
    rest of the readout goes round by round, so only the rounds the generic greedy reaches
    can refuse.
    """
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

    def drop(column: int, row: np.ndarray) -> int:
        """Removes an exhausted group; returns the next guess: the best other group of
        ``row`` (-1 if none is left)."""
        nonlocal available, group_stats
        keep = np.arange(available.size) != column
        available = available[keep]
        group_stats = {k: v[keep] for k, v in group_stats.items()}
        return int(available[np.argmax(row[keep])]) if available.size else -1

    guess = -1  # the group assumed to win the coming rounds (-1: none yet)
    lookahead = _NEW_GUESS_LOOKAHEAD
    most = _MAX_LOOKAHEAD  # 1 once a batch was refused: the rest goes round by round
    while available.size:
        wanted = 1 if guess < 0 else min(lookahead, most, int(ends[guess] - pointer[guess]))
        sums, values = _score_ahead(score, current, group_stats, available, guess, wanted)
        rows = values.shape[0]
        if rows < wanted:
            most = 1
        taken = 0  # the leading rounds the guess wins outright, taken at once
        if guess >= 0:
            column = int(np.flatnonzero(available == guess)[0])
            mine = values[:, column]
            clean = (values.argmax(axis=1) == column) & (mine > np.append(best, mine[:-1]))
            clean &= (values == mine[:, None]).sum(axis=1) == 1
            taken = rows if clean.all() else int(np.argmin(clean))
            if taken:
                picks.extend(order[pointer[guess] : pointer[guess] + taken].tolist())
                pointer[guess] += taken
                best = float(mine[taken - 1])
                if taken < rows:
                    current = {k: v[taken] for k, v in sums.items()}
                else:
                    current = {k: sums[k][-1] + group_stats[k][column] for k in sums}
            if taken == rows:
                if pointer[guess] == ends[guess]:
                    guess, lookahead = drop(column, values[-1]), min(_NEW_GUESS_LOOKAHEAD, most)
                else:
                    lookahead = min(2 * lookahead, most)
                continue
        # round ``taken`` went otherwise than guessed: the generic rule decides it
        row = values[taken]
        top = accept(row, best)
        if top is None:
            break
        ties = np.flatnonzero(row == row[top])
        if ties.size > 1:  # equal J: the lowest memory index, as the generic argmax picks
            top = int(ties[np.argmin(order[pointer[available[ties]]])])
        best = float(row[top])
        group = int(available[top])
        pick = int(order[pointer[group]])
        picks.append(pick)
        pointer[group] += 1
        if group == guess and taken + 1 < rows:
            current = {k: v[taken + 1] for k, v in sums.items()}
        else:
            current = {k: sums[k][taken] + stats[k][pick] for k in sums}
        guess = drop(top, row) if pointer[group] == ends[group] else group
        lookahead = min(_NEW_GUESS_LOOKAHEAD, most)
    result = finish(model, memory, score, picks, "grouped")
    return result._replace(objective=best if picks else result.base_objective)


def _score_ahead(
    score: Score,
    current: dict[str, np.ndarray],
    group_stats: dict[str, np.ndarray],
    available: np.ndarray,
    guess: int,
    rows: int,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The running sums after ``0..rows-1`` more picks of group ``guess`` (shape
    ``(rows, …)``) and the objective of every available group added to each,
    ``(rows, groups)``."""
    if guess >= 0 and rows > 1:
        column = int(np.flatnonzero(available == guess)[0])
        sums = {
            k: np.add.accumulate(
                np.concatenate([v[None], np.repeat(group_stats[k][column][None], rows - 1, 0)]),
                axis=0,
            )
            for k, v in current.items()
        }
    else:
        sums = {k: np.asarray(v)[None] for k, v in current.items()}
    n = next(iter(sums.values())).shape[0]
    n_available = available.size
    candidates = {
        k: (sums[k][:, None] + group_stats[k][None]).reshape(n * n_available, *v.shape[1:])
        for k, v in group_stats.items()
    }
    try:
        values = score(candidates).reshape(n, n_available)
    except ValueError:
        if n == 1:
            raise
        # a refusal beyond the rounds the generic greedy reaches must not surface: one round
        return _score_ahead(score, current, group_stats, available, guess, 1)
    return sums, values


# -------------------------------------------------------------- one-point Gaussian records
def _gaussian_greedy(
    model: NormalKnownVariance,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    score: Score,
    stats: dict[str, np.ndarray],
) -> FastGreedy:
    """The closed form over ``stats`` (``memory``'s records), one observation count each, with
    NumPy's floating-point errors raised in the records' means, the parabola table and the two
    objectives :func:`finish` computes (:func:`fast_greedy` then runs the generic loop); the
    common case takes :func:`_one_point_greedy`."""
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        per_record = float(stats["precision"][0])  # n / σ² of every record and of D_t
        values = stats["precision_mean"] / per_record  # the records' sample means
        sorted_values, order = sorted_records(memory, values)
        v = float(s_t.fields["precision_mean"]) / per_record
        picks = greedy_picks(
            sorted_values, order, v, 1.0 / per_record, 1.0 / model.prior_var, model.prior_mean, lam
        )
        return finish(model, memory, score, picks, "gaussian", stats=stats)


def _kernel() -> Any:
    """:func:`bam_rl.kernels.readout.one_point_readout`, imported on first use (Numba's import
    is a large part of ``import bam_rl``)."""
    global _ONE_POINT_KERNEL
    if _ONE_POINT_KERNEL is None:
        from bam_rl.kernels.readout import one_point_readout

        _ONE_POINT_KERNEL = one_point_readout
    return _ONE_POINT_KERNEL


_ONE_POINT_KERNEL: Any = None


class _OnePointBuffers:
    """One memory's sorted view for :func:`~bam_rl.kernels.readout.one_point_readout`, in two
    arrays (fewer arguments for the compiled call to check): ``floats`` rows ``seen`` (records'
    ``precision_mean``) and ``values`` (their means, ascending), ``ints`` rows ``right`` and
    ``left`` (the kernel's union-find, the identity between calls), ``order`` (the sorted
    records' memory indices), ``chosen`` and ``picks`` (the kernel's work rows; ``picks`` is
    also kept as its own view). The first ``n`` entries of the sorted view hold records of
    precision ``per_record`` of a memory that had merged ``n_merges`` times and stored its
    records in ``source`` (the array its ``precision_mean`` is a view of)."""

    __slots__ = (
        "capacity",
        "constants",
        "floats",
        "ints",
        "model",
        "n",
        "n_merges",
        "numerator",
        "per_record",
        "picks",
        "prior",
        "prior_floats",
        "source",
        "table",
    )

    def __init__(self, per_record: float, n_merges: int, capacity: int):
        self.per_record = per_record
        self.numerator = per_record.as_integer_ratio()[0]  # per_record = numerator / 2^p
        self.n_merges = n_merges
        # the family the constants below are of (families are immutable), the parabola table
        # of its (h0, s2) (longer tables have the same leading entries) and
        # (s2 · h0, prior mean, prior precision, prior precision_mean)
        self.model: NormalKnownVariance | None = None
        self.table: tuple[np.ndarray, np.ndarray] | None = None
        self.constants = (0.0, 0.0, 0.0, 0.0)
        # the prior the constants are of (``model.prior``) and its precision_mean, precision
        # and log h as Python floats (the sums of one_point_posterior start from them)
        self.prior: NaturalParams | None = None
        self.prior_floats = (0.0, 0.0, 0.0)
        self.source: np.ndarray | None = None
        self.n = 0
        self._allocate(capacity)

    def _allocate(self, capacity: int) -> None:
        self.capacity = capacity
        self.floats = np.empty((2, capacity))
        self.ints = np.empty((5, capacity + 1), dtype=np.int64)
        self.ints[0] = np.arange(capacity + 1)  # right
        self.ints[1] = self.ints[0]  # left
        self.picks = self.ints[4]

    def reserve(self, size: int) -> None:
        """At least ``size`` entries (doubling; the first ``n`` of the sorted view kept)."""
        if self.capacity >= size:
            return
        floats, ints, n = self.floats, self.ints, self.n
        self._allocate(max(size, 2 * self.capacity))
        self.floats[:, :n] = floats[:, :n]  # seen, values
        self.ints[2, :n] = ints[2, :n]  # order

    def use(self, model: NormalKnownVariance, size: int) -> bool:
        """Keeps ``model``'s constants and a parabola table covering ``size`` records; False
        when that table is not built yet (:func:`one_point_picks` then declines)."""
        h0, s2 = 1.0 / model.prior_var, 1.0 / self.per_record
        table = whole_parabola_table(size, h0, s2)  # the kernel reads c[k], g[k], k <= size
        if table is None:
            return False
        self.prior = model.prior
        prior = self.prior.fields
        self.model, self.table = model, table
        self.constants = (
            s2 * h0,
            model.prior_mean,
            float(prior["precision"]),
            float(prior["precision_mean"]),
        )
        self.prior_floats = (
            float(prior["precision_mean"]),
            float(prior["precision"]),
            float(self.prior.log_h),
        )
        return True


class IdentityCache:
    """Values kept per live object, outside it (never saved with it): a ``WeakKeyDictionary``
    keyed by identity, whose ``get`` is two dictionary-speed steps (the per-step lookups of a
    bandit step). An entry goes when its object is collected."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], Any]] = {}

    def get(self, owner: Any) -> Any:
        """The value kept for ``owner``, or ``None``."""
        entry = self._entries.get(id(owner))
        return entry[1] if entry is not None and entry[0]() is owner else None

    def set(self, owner: Any, value: Any) -> None:
        """Keeps ``value`` for ``owner`` (replacing any)."""
        key, entries = id(owner), self._entries

        def forget(_: weakref.ref[Any]) -> None:
            entries.pop(key, None)

        entries[key] = (weakref.ref(owner, forget), value)


#: Per memory: the buffers of its sorted view (kept outside the memory, never saved).
_ONE_POINT = IdentityCache()


def _one_point_greedy(
    model: NormalKnownVariance,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    score: Score,
    stats: dict[str, np.ndarray],
) -> FastGreedy | None:
    """:func:`one_point_picks`' readout (objectives left to the trail when they cannot
    overflow, else computed with NumPy's errors raised, as :func:`_gaussian_greedy` does), or
    ``None`` when it does not apply."""
    found = one_point_picks(model, memory, s_t, lam, stats)
    if found is None:
        return None
    picks, weights, lazy = found
    if lazy:
        return finish(model, memory, score, picks, "gaussian", True, stats, weights)
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        return finish(model, memory, score, picks, "gaussian", False, stats, weights)


def one_point_picks(
    model: NormalKnownVariance,
    memory: Memory,
    s_t: NaturalParams,
    lam: float,
    stats: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """The common case of :func:`_gaussian_greedy` in one compiled call
    (:func:`~bam_rl.kernels.readout.one_point_readout`: the one-point check, the sorted view
    kept between calls, the λ = 0 greedy and the weights), or ``None`` when it does not
    apply: ``λ > 0``, a subclass of the family, ``n / σ² < 1`` (the means could overflow),
    the table of constants not yet built (its first computation runs with NumPy's errors
    raised) or records of other precisions than ``s_t``'s. Everything it computes is what
    :func:`_gaussian_greedy` computes — the same divisions, the same stable order of the
    means, the same compiled loop — so the picks are the same, and no NumPy operation runs
    that an error state could see.

    Args:
        model: The family (:func:`fast_greedy` checked it does not replace its ``A``).
        memory: A non-empty memory of its records.
        s_t: The new datum (unbatched, checked).
        lam: Complexity penalty.
        stats: ``memory.stats.fields``.

    Returns:
        The picks (memory indices, in the order the greedy added them), the 0/1 weights and
        whether the two objectives of the readout cannot overflow (:func:`run_one_point`:
        they may then be computed later, when read).
    """
    if lam != 0.0 or type(model) is not NormalKnownVariance:
        return None
    fields = s_t.fields
    found = run_one_point(
        model,
        memory,
        stats["precision_mean"],
        stats["precision"],
        float(fields["precision"]),
        float(fields["precision_mean"]),
        float(s_t.log_h),
    )
    if found is None:
        return None
    buffers, k, weights = found
    stays_finite = k >= 0
    if not stays_finite:
        k = -2 - k
    return buffers.picks[:k].copy(), weights, stays_finite


def run_one_point(
    model: NormalKnownVariance,
    memory: Memory,
    means: np.ndarray,
    precisions: np.ndarray,
    per_record: float,
    precision_mean: float,
    log_h: float,
) -> tuple[_OnePointBuffers, int, np.ndarray] | None:
    """:func:`one_point_picks` for a datum given as its three Python floats (``precision``
    ``per_record``, ``precision_mean``, ``log_h``) over the memory's columns ``means`` and
    ``precisions`` (``memory``'s ``precision_mean`` and ``precision``, all ``len(memory)``
    records; ``model`` a :class:`NormalKnownVariance`, λ = 0): ``None`` where
    :func:`one_point_picks` is ``None``, else the memory's buffers (their ``picks[:k]`` are
    the picks until the next call; ``prior_floats`` the prior's fields and ``log h`` as
    floats), the kernel's count and the 0/1 weights. The count is the number ``k`` of picks
    when the two objectives of the readout cannot overflow
    (:func:`~bam_rl.kernels.readout.stays_finite`), else ``-2 - k``.
    """
    if not per_record >= 1.0:
        return None
    size = means.shape[0]
    buffers = _ONE_POINT.get(memory)
    if buffers is None or buffers.per_record != per_record or buffers.n_merges != memory.n_merges:
        buffers = _OnePointBuffers(per_record, memory.n_merges, max(64, 2 * size))
        _ONE_POINT.set(memory, buffers)
    elif buffers.capacity < size:
        buffers.reserve(size)
    table = buffers.table
    if (
        buffers.model is not model
        or buffers.prior is not model.prior
        or table is None
        or table[0].size <= size
    ):
        if not buffers.use(model, size):
            return None
        table = buffers.table
        assert table is not None
    # the records the last call saw are unchanged when the memory still keeps them in the same
    # array (it only appends there; merges count in n_merges, growth and clear() reallocate)
    source = means.base
    checked = buffers.n if source is not None and source is buffers.source else 0
    weights = np.zeros(size)
    k = (_ONE_POINT_KERNEL or _kernel())(
        means,
        precisions,
        per_record,
        buffers.floats,
        buffers.ints,
        buffers.n,
        checked,
        buffers.constants,
        precision_mean,
        table[0],
        table[1],
        weights,
        log_h,
    )
    if k == -1:
        buffers.n, buffers.source = 0, None
        return None
    buffers.n, buffers.source = size, source
    return buffers, k, weights
