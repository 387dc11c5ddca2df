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

import numpy as np

from bam_rl.families import BayesianLinearRegression, BayesianLinearRegressionNIG
from bam_rl.families.base import ConjugateFamily, NaturalParams
from bam_rl.families.normal import NormalKnownVariance
from bam_rl.memory import Memory
from bam_rl.readout.gaussian import greedy_sorted, sorted_records
from bam_rl.readout.regression import FactorCache, regression_greedy
from bam_rl.readout.rule import FastGreedy, Score, accept, finish

__all__ = ["fast_greedy", "overrides_log_partition"]

#: Records whose fields hold at most this many numbers are grouped when duplicates exist.
_MAX_GROUPED_FIELD_SIZE = 16


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
        return regression_greedy(model, memory, s_t, lam, cache)
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
    model: NormalKnownVariance, memory: Memory, s_t: NaturalParams, lam: float, score: Score
) -> FastGreedy:
    stats = memory.stats.fields
    per_record = float(stats["precision"][0])  # n / σ² of every record and of D_t
    values = stats["precision_mean"] / per_record  # the records' sample means
    sorted_values, order = sorted_records(memory, values)
    v = float(s_t.fields["precision_mean"]) / per_record
    _, picks = greedy_sorted(
        sorted_values, order, v, 1.0 / per_record, 1.0 / model.prior_var, model.prior_mean, lam
    )
    return finish(model, memory, score, picks, "gaussian")
