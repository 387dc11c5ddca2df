"""Algorithm 1's rule, in one place: a round accepts its best candidate only if ``J`` strictly
improves, ties going to the lowest memory index (:func:`accept`); and what every fast path
returns (:class:`FastGreedy`, with its audit trail computed lazily by the generic objective,
:class:`LazyRounds`, and the weights and objectives of the picks, :func:`finish`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from bam_rl.families.base import ConjugateFamily, Fields
from bam_rl.memory import Memory

__all__ = ["FastGreedy", "LazyRounds", "Score", "accept", "audit_trail", "finish", "greedy_rounds"]

#: The readout objective ``J`` over raw candidate fields (a batch of candidates at once).
Score = Callable[[Fields], np.ndarray]


def accept(values: np.ndarray, best: float) -> int | None:
    """The round's pick: the first index of the largest value (ties go to the lowest index),
    or ``None`` when it does not strictly improve on ``best`` (the greedy stops)."""
    pick = int(np.argmax(values))
    return pick if values[pick] > best else None


def greedy_rounds(
    size: int,
    best: float,
    score_round: Callable[[np.ndarray], np.ndarray],
    add: Callable[[int], None],
) -> tuple[np.ndarray, float, list[np.ndarray]]:
    """Algorithm 1's loop over ``size`` records, from the prior's objective ``best``: each
    round scores the records still unselected (``score_round(unselected)``, a length-``size``
    array, ``-inf`` at the others), :func:`accept` picks one or stops, and ``add(pick)``
    moves the caller's running sum. Returns the 0/1 weights, the final objective and the
    rounds' scores."""
    weights = np.zeros(size)
    unselected = np.ones(size, dtype=bool)
    rounds: list[np.ndarray] = []
    while unselected.any():
        round_scores = score_round(unselected)
        rounds.append(round_scores)
        pick = accept(round_scores, best)
        if pick is None:
            break
        best = float(round_scores[pick])
        weights[pick] = 1.0
        unselected[pick] = False
        add(pick)
    return weights, best, rounds


class FastGreedy(NamedTuple):
    """What a fast path found: the greedy readout and its audit trail.

    ``objective`` and ``base_objective`` are ``None`` when :func:`finish` left them to be
    computed on first read from the trail (:meth:`LazyRounds.objectives`).
    """

    weights: np.ndarray
    objective: float | None
    base_objective: float | None
    scores: Sequence[np.ndarray]
    n_evaluations: int
    path: str


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
        self._objectives: tuple[float, float] | None = None

    @classmethod
    def _owned(
        cls, score: Score, prior: Fields, stats: Fields, picks: np.ndarray, n_rounds: int
    ) -> LazyRounds:
        """An instance that takes ``picks`` (an ``intp`` array no one else holds) as it is,
        without the constructor's copy: the one-point readout builds one on every step."""
        rounds = object.__new__(cls)
        rounds._score = score
        rounds._prior = prior
        rounds._stats = stats
        rounds._picks = picks
        rounds._n_rounds = n_rounds
        rounds._rounds = None
        rounds._objectives = None
        return rounds

    def objectives(self) -> tuple[float, float]:
        """``(objective, base_objective)`` of the readout: ``J`` of the prior plus the picks
        (added in pick order, :func:`_running_sum`) and ``J`` of the prior alone — the values
        :func:`finish` computes eagerly, by the same calls on the same (snapshot) records."""
        if self._objectives is None:
            base = float(self._score(self._prior))
            if self._picks.size:
                best = float(self._score(_running_sum(self._prior, self._stats, self._picks)))
            else:
                best = base
            self._objectives = (best, base)
        return self._objectives

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


def _snapshot(memory: Memory, fields: Fields | None = None) -> Fields:
    """The records' statistics as they are now (``fields``, when the caller read them), for an
    audit trail read later.

    An unbounded memory never rewrites a stored row (it appends, and :meth:`Memory.clear`
    allocates new arrays), so views are a snapshot; a bounded one merges rows in place.
    """
    if fields is None:
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


def audit_trail(
    model: ConjugateFamily,
    memory: Memory,
    score: Score,
    picks: Sequence[int] | np.ndarray,
    stats: Fields | None = None,
) -> tuple[LazyRounds, int]:
    """The lazy audit trail of a greedy readout whose ``picks`` (memory indices, in the order
    the greedy added them) were found by a fast path, and the number of objective values it
    determined; ``stats``: ``memory.stats.fields``, when the caller has them."""
    size = len(memory)
    prior = {k: np.array(v) for k, v in model.prior.fields.items()}
    index = np.asarray(picks, dtype=np.intp)
    n_rounds = _n_rounds(size, index.size)
    evaluations = 1 + n_rounds * size - n_rounds * (n_rounds - 1) // 2
    return LazyRounds(score, prior, _snapshot(memory, stats), index, n_rounds), evaluations


def finish(
    model: ConjugateFamily,
    memory: Memory,
    score: Score,
    picks: Sequence[int] | np.ndarray,
    path: str,
    lazy: bool = False,
    stats: Fields | None = None,
    weights: np.ndarray | None = None,
) -> FastGreedy:
    """Weights, base and final objectives (generic arithmetic) and the lazy audit trail
    (:func:`audit_trail`). With ``lazy`` the two objectives are left to the trail (``None``;
    :meth:`LazyRounds.objectives` computes the same values when first read): a rule that only
    needs the weights skips two evaluations of ``J`` and a running sum per step. ``stats``:
    ``memory.stats.fields``, and ``weights``: the 0/1 weights of the picks, when the caller
    has them."""
    rounds, evaluations = audit_trail(model, memory, score, picks, stats)
    if weights is None:
        weights = np.zeros(len(memory))
        weights[rounds._picks] = 1.0
    if lazy:
        return FastGreedy(weights, None, None, rounds, evaluations, path)
    best, base = rounds.objectives()
    return FastGreedy(weights, best, base, rounds, evaluations, path)
