"""Algorithm 1 in closed form for one-point Gaussian records: the fast path of the greedy of
:func:`bam_rl.readout.select` for :class:`~bam_rl.families.NormalKnownVariance` memories
whose records, and the new datum, all hold the same number of observations.

With ``k`` records selected the candidate prior is Gaussian with precision ``h0 + k/σ²``, so
every candidate of a round shares it and ``J`` is concave in the candidate's observation: the
best unselected record is a neighbour of the peak in sorted order (O(log m) per round instead
of O(m)), see :func:`gaussian_greedy_readout`. The rounds themselves stay sequential: at
``λ = 0`` each picks the unselected record nearest to a target that moves by the previous
pick's residual, and the picks do not form a block in sorted order (in memories drawn like a
two-valued bandit arm's, one pick in three to nine skips an unselected record), so a
vectorised merge of the two sides does not reproduce them.
"""

from __future__ import annotations

import bisect
import math
import weakref
from typing import NamedTuple

import numpy as np

from bam_rl.families.normal import NormalKnownVariance
from bam_rl.memory import Memory

__all__ = [
    "cached_parabola_constants",
    "gaussian_greedy_readout",
    "greedy_picks",
    "greedy_sorted",
    "parabola_table",
    "sorted_records",
    "whole_parabola_table",
]


class _SortedRecords(NamedTuple):
    n_merges: int
    values: np.ndarray  # record values in memory order
    sorted_values: np.ndarray  # ascending, ties in memory order
    order: np.ndarray  # memory index (int64) of each sorted value


#: Per memory: its record values kept sorted between calls (memories only append between
#: merges, so a call inserts the new values instead of sorting everything again).
_SORTED: weakref.WeakKeyDictionary[Memory, _SortedRecords] = weakref.WeakKeyDictionary()


def sorted_records(memory: Memory, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` sorted ascending (ties in memory order) and their memory indices (int64).

    The arrays returned are the cache's own: callers read them and never write to them.
    """
    cached = _SORTED.get(memory)
    old = 0 if cached is None else cached.values.size
    if (
        cached is not None
        and cached.n_merges == memory.n_merges
        and values.size >= old
        and bool((values[:old] == cached.values).all())
    ):
        sorted_values, order = cached.sorted_values, cached.order
        if values.size == old + 1:  # the common case: one datum stored since the last call
            y = values[old]
            # after equal old values (bisect_right): ties stay in memory order
            p = int(sorted_values.searchsorted(y, side="right"))
            sorted_values = np.concatenate((sorted_values[:p], values[old:], sorted_values[p:]))
            order = np.concatenate((order[:p], np.array([old], dtype=np.int64), order[p:]))
        elif values.size > old:
            new = values[old:]
            # a stable sort of the new values, each placed after equal old ones (bisect_right),
            # keeps ties in memory order
            new_order = np.argsort(new, kind="stable")
            positions = np.searchsorted(sorted_values, new[new_order], side="right")
            sorted_values = np.insert(sorted_values, positions, new[new_order])
            order = np.insert(order, positions, old + new_order.astype(np.int64))
    else:
        indices = np.argsort(values, kind="stable")
        sorted_values = np.ascontiguousarray(values[indices], dtype=np.float64)
        order = indices.astype(np.int64)
    _SORTED[memory] = _SortedRecords(memory.n_merges, values.copy(), sorted_values, order)
    return sorted_values, order


def _find(parent: list[int], x: int) -> int:
    """Union-find root of ``x`` with path compression (iterative)."""
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


def _parabola_constants(m: int, h0: float, s2: float) -> tuple[np.ndarray, np.ndarray]:
    """``c_k`` and ``g_k`` of the λ = 0 rounds, ``k = 0..m``: ``J(k, r) = c_k − g_k r²``."""
    k_all = np.arange(m + 1, dtype=np.float64)
    x = h0 + k_all / s2
    a = s2 + 1.0 / x
    return -0.5 * np.log(2.0 * np.pi * a), 1.0 / (2.0 * s2 * s2 * x * x * a)


#: The last tables of :func:`_parabola_constants`, keyed by ``(h0, s2)`` and grown by doubling
#: (each entry is computed element-wise, so a longer table has the same leading entries).
_CONSTANTS: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}


def parabola_table(m: int, h0: float, s2: float) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`cached_parabola_constants` when its table for ``(h0, s2)`` already covers ``m``
    records, else ``None`` (nothing is computed, so nothing an error state could see)."""
    table = whole_parabola_table(m, h0, s2)
    if table is None:
        return None
    return table[0][: m + 1], table[1][: m + 1]


def whole_parabola_table(m: int, h0: float, s2: float) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`parabola_table` without its slices: the whole kept table (at least ``m + 1``
    entries, read-only for the caller), for a loop that reads entries ``k <= m`` only."""
    table = _CONSTANTS.get((h0, s2))
    if table is None or table[0].size <= m:
        return None
    return table


def cached_parabola_constants(m: int, h0: float, s2: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_parabola_constants` for ``k = 0..m``, from a table kept between calls."""
    key = (h0, s2)
    table = _CONSTANTS.get(key)
    if table is None or table[0].size <= m:
        size = max(m, 2 * (table[0].size if table is not None else 64))
        if len(_CONSTANTS) >= 16:  # a few models at a time in practice
            _CONSTANTS.clear()
        table = _CONSTANTS[key] = _parabola_constants(size, h0, s2)
    return table[0][: m + 1], table[1][: m + 1]


def _compiled_parabola(
    values: np.ndarray, order: np.ndarray, v: float, r: float, h0: float, s2: float
) -> np.ndarray:
    """The λ = 0 loop of :func:`gaussian_greedy_readout`, compiled
    (:func:`bam_rl.kernels.readout.greedy_parabola`; its reference, the rule stated
    plainly, is in ``tests/core/test_readout_kernel.py``).

    With ``λ = 0``, ``J(k, r) = c_k − g_k r²`` is a parabola in the added observation peaked at
    ``v + r``, so the best candidate is the unselected neighbour nearest to ``v + r``; the
    per-round constants ``c_k``, ``g_k`` are tabulated once.
    """
    from bam_rl.kernels.readout import greedy_parabola

    c, g = cached_parabola_constants(len(values), h0, s2)
    return greedy_parabola(
        np.asarray(values, dtype=np.float64), np.asarray(order, dtype=np.int64), v, r, c, g
    )


def greedy_sorted(
    values: np.ndarray | list[float],
    order: np.ndarray | list[int],
    v: float,
    s2: float,
    h0: float,
    m0: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The closed-form greedy over sorted one-point records (see :func:`gaussian_greedy_readout`)
    with record noise ``s2``, prior precision ``h0`` and prior mean ``m0``; returns the weights
    and the memory indices (int64) in the order the greedy added them."""
    picks = greedy_picks(values, order, v, s2, h0, m0, lam)
    weights = np.zeros(len(values))
    weights[picks] = 1.0
    return weights, picks


def greedy_picks(
    values: np.ndarray | list[float],
    order: np.ndarray | list[int],
    v: float,
    s2: float,
    h0: float,
    m0: float,
    lam: float,
) -> np.ndarray:
    """:func:`greedy_sorted`'s picks alone: the memory indices (int64) in the order the greedy
    added them."""
    m = len(values)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    inv_s2 = 1.0 / s2
    dv = v - m0
    two_pi = 2.0 * math.pi
    log = math.log

    def objective(k: int, r: float) -> float:
        x = h0 + k * inv_s2
        a = s2 + 1.0 / x
        value = -0.5 * log(two_pi * a) - r * r / (2.0 * s2 * s2 * x * x * a)
        if lam:
            q = h0 / x
            e = dv - r / (s2 * x)
            value -= lam * math.sqrt(max(q - 1.0 - log(q) + h0 * e * e, 0.0))
        if not math.isfinite(value):  # extreme records: the caller falls back to the generic
            raise FloatingPointError("closed-form readout objective is not finite")
        return value

    r = s2 * h0 * dv
    if lam == 0.0:
        return _compiled_parabola(
            np.asarray(values, dtype=np.float64), np.asarray(order, dtype=np.int64), v, r, h0, s2
        )
    values, order = list(np.asarray(values).tolist()), list(np.asarray(order).tolist())
    right = list(range(m + 1))  # right[p]: next unselected position >= p (m: none)
    left = list(range(m + 1))  # left[p + 1]: previous unselected position <= p, shifted by 1
    picks: list[int] = []
    best = objective(0, r)
    k = 0
    while k < m:
        target = v + r
        p = bisect.bisect_left(values, target)
        hi = _find(right, p)
        lo = _find(left, p) - 1  # previous unselected position <= p - 1
        j_lo = objective(k + 1, target - values[lo]) if lo >= 0 else -math.inf
        j_hi = objective(k + 1, target - values[hi]) if hi < m else -math.inf
        if j_lo > j_hi or (j_lo == j_hi and order[lo] < order[hi]):
            pick, value, step = lo, j_lo, -1
        else:
            pick, value, step = hi, j_hi, 1
        if j_lo != j_hi:  # climb while J does not decrease (J is concave in y)
            cursor = pick
            while True:
                nxt = cursor
                while True:  # the next unselected position with a different value
                    nxt = _find(left, nxt) - 1 if step < 0 else _find(right, nxt + 1)
                    if nxt < 0 or nxt >= m or values[nxt] != values[cursor]:
                        break
                if nxt < 0 or nxt >= m:
                    break
                j_next = objective(k + 1, target - values[nxt])
                if j_next < value:
                    break
                # a flat step (values one rounding step apart give the same J) is crossed;
                # equal J keeps the lowest memory index, as the generic argmax does
                if j_next > value or order[nxt] < order[pick]:
                    pick, value = nxt, j_next
                cursor = nxt
        while True:  # lowest memory index among unselected duplicates of the pick
            prev = _find(left, pick) - 1
            if prev < 0 or values[prev] != values[pick]:
                break
            pick = prev
        if not value > best:
            break
        best = value
        r = target - values[pick]
        k += 1
        picks.append(order[pick])
        right[pick] = pick + 1
        left[pick + 1] = pick
    return np.asarray(picks, dtype=np.int64)


def gaussian_greedy_readout(
    values: list[float], order: list[int], v: float, model: NormalKnownVariance, lam: float = 0.0
) -> np.ndarray:
    """Algorithm 1 (greedy readout) in closed form for memories of single Gaussian observations.

    Computes the same readout as ``select(model, memory, model.stats(v), lam, "greedy")`` for
    a memory whose records are single observations ``y_j`` of a :class:`NormalKnownVariance`
    model, in O(log m) per greedy round instead of O(m). With ``k`` records selected whose
    deviations ``y_j − v`` sum to ``D``, the candidate prior is N(m_k, 1/x_k) with
    ``x_k = h0 + k/σ²`` and ``v − m_k = r/(σ² x_k)``, ``r = σ² h0 (v − m0) − D``, so

    ``J = −½ log(2π A_k) − r² / (2 σ⁴ x_k² A_k) − λ sqrt(2 KL)``, ``A_k = σ² + 1/x_k``,
    ``2 KL = q − 1 − log q + h0 (v − m0 − r/(σ² x_k))²``, ``q = h0 / x_k``.

    Every candidate of a round shares ``k + 1``, and ``J`` is concave in the added ``y`` (for
    ``λ = 0`` a parabola with its peak at ``y = v + r``), so the best unselected record is
    found from the two unselected neighbours of ``v + r`` in sorted order (climbing further
    while ``J`` does not decrease when ``λ > 0``, so flat steps between values one rounding
    step apart are crossed). Ties go to the lowest memory index, and a
    round is accepted only if ``J`` strictly improves, as in :func:`bam_rl.readout.select`.
    The objective is evaluated in this well-conditioned form rather than as the difference
    of log-normalisers, so decisions can differ from the generic loop only where two values
    of ``J`` agree to rounding error. :func:`bam_rl.readout.select` uses it automatically
    (records of ``n`` observations each are means with noise ``σ²/n``).

    Args:
        values: The observations ``y_j`` sorted ascending (ties in memory-index order).
        order: Memory index of each entry of ``values``.
        v: The new observation ``D_t``.
        model: The Gaussian model with known noise variance (its prior is the base prior).
        lam: Complexity penalty ``λ >= 0``.

    Returns:
        Readout weights (0/1) indexed by memory record.

    Raises:
        ValueError: When the closed form overflows (observations too large in magnitude).
    """
    try:
        return greedy_sorted(
            list(values),
            list(order),
            float(v),
            model.noise_var,
            1.0 / model.prior_var,
            model.prior_mean,
            float(lam),
        )[0]
    except ArithmeticError as error:
        raise ValueError(
            f"the closed-form greedy readout overflowed float64 (observations "
            f"too large in magnitude): {error}"
        ) from error
