"""Algorithm 1's λ = 0 loop over sorted one-point Gaussian records, compiled (Numba).

:func:`greedy_parabola` is the λ = 0 loop of :func:`bam_rl.readout.gaussian.greedy_sorted`
(its reference, the rule stated plainly, is in the tests) with arrays instead of lists: the same
rounds, the same comparisons and the same arithmetic in the same order, so it picks exactly
the same records. It is the hot loop of ``thompson-bam``, ``ucbam`` and ``tracker-bam`` on
Gaussian arms. Compiled on first use and cached on disk.
"""

from __future__ import annotations

import numpy as np

from bam_rl.kernels._cache import njit_cached, njit_inline

__all__ = ["greedy_parabola", "one_point_readout", "sequential_sum", "stays_finite"]


@njit_inline
def _find(parent: np.ndarray, x: int) -> int:  # pragma: no cover - compiled
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        nxt = parent[x]
        parent[x] = root
        x = nxt
    return root


@njit_cached
def greedy_parabola(  # pragma: no cover - compiled
    values: np.ndarray, order: np.ndarray, v: float, r: float, c: np.ndarray, g: np.ndarray
) -> np.ndarray:
    """The memory indices the greedy adds, in order (see the reference for the rule)."""
    m = values.shape[0]
    chosen = np.empty(m, dtype=np.int64)
    n_chosen = _greedy_parabola_into(
        values, order, v, r, c, g, np.arange(m + 1), np.arange(m + 1), chosen
    )
    return order[chosen[:n_chosen]]


@njit_inline
def _greedy_parabola_into(  # pragma: no cover - compiled
    values: np.ndarray,
    order: np.ndarray,
    v: float,
    r: float,
    c: np.ndarray,
    g: np.ndarray,
    right: np.ndarray,
    left: np.ndarray,
    chosen: np.ndarray,
) -> int:
    """:func:`greedy_parabola`'s loop over caller-owned union-find arrays ``right`` and
    ``left`` (the identity on ``0..m`` on entry) and ``chosen`` (at least ``m`` entries);
    returns how many sorted positions it wrote to ``chosen``. It changes ``right`` only at
    the chosen positions ``p`` and ``left`` only at ``p + 1`` (the non-roots of the
    union-find, the only entries its path compression rewrites), so resetting those restores
    the identity."""
    m = values.shape[0]
    best = c[0] - g[0] * r * r
    lo, hi = -2, m
    n_chosen = 0
    k = 0
    while k < m:
        target = v + r
        if lo == -2 or not ((lo < 0 or values[lo] < target) and (hi == m or target <= values[hi])):
            p = np.searchsorted(values, target)
            hi = right[p]
            if right[hi] != hi:
                hi = _find(right, hi)
            lo = left[p]
            if left[lo] != lo:
                lo = _find(left, lo)
            lo -= 1
        if hi == m:
            pick = lo
        elif lo < 0:
            pick = hi
        else:
            d_lo = target - values[lo]
            d_hi = values[hi] - target
            if d_lo < d_hi:
                pick = lo
            elif d_hi < d_lo:
                pick = hi
            else:
                first = lo
                while True:
                    prev = _find(left, first) - 1
                    if prev < 0 or values[prev] != values[lo]:
                        break
                    first = prev
                pick = first if order[first] < order[hi] else hi
        if pick == lo and pick > 0 and values[pick - 1] == values[pick]:
            while True:
                prev = _find(left, pick) - 1
                if prev < 0 or values[prev] != values[pick]:
                    break
                pick = prev
        rr = target - values[pick]
        k += 1
        value = c[k] - g[k] * rr * rr
        if not value > best:
            break
        best = value
        r = rr
        chosen[n_chosen] = pick
        n_chosen += 1
        right[pick] = pick + 1
        left[pick + 1] = pick
        if pick == hi:
            hi += 1
            if hi < m and right[hi] != hi:
                hi = _find(right, hi)
        elif pick == lo:
            if left[lo] != lo:
                lo = _find(left, lo)
            lo -= 1
    return n_chosen


@njit_cached
def sequential_sum(
    base: np.ndarray, rows: np.ndarray, index: np.ndarray
) -> np.ndarray:  # pragma: no cover - compiled
    """``base + rows[index[0]] + rows[index[1]] + …`` added one row at a time, left to right.

    The order of the additions is the generic greedy loop's (a running sum), so the result is
    bit for bit ``np.cumsum(np.concatenate([base[None], rows[index]]), axis=0)[-1]``, its literal
    reference in the tests; ``base`` has shape ``(p,)`` and ``rows`` ``(m, p)``.
    """
    total = base.copy()
    for i in range(index.shape[0]):
        row = index[i]
        for j in range(total.shape[0]):
            total[j] += rows[row, j]
    return total


@njit_cached
def _insert_sorted(  # pragma: no cover - compiled
    sorted_values: np.ndarray, order: np.ndarray, n: int, y: float, index: int
) -> None:
    """Places ``y`` (memory index ``index``) into the first ``n`` entries, after equal values
    (``bisect_right``: ties stay in memory order), shifting the larger ones up by one."""
    p = np.searchsorted(sorted_values[:n], y, side="right")
    for j in range(n, p, -1):
        sorted_values[j] = sorted_values[j - 1]
        order[j] = order[j - 1]
    sorted_values[p] = y
    order[p] = index


@njit_cached
def one_point_readout(  # pragma: no cover - compiled
    means: np.ndarray,
    precisions: np.ndarray,
    per_record: float,
    floats: np.ndarray,
    ints: np.ndarray,
    n_seen: int,
    checked: int,
    constants: tuple[float, float, float, float],
    precision_mean: float,
    c: np.ndarray,
    g: np.ndarray,
    weights: np.ndarray,
    log_h: float,
) -> int:
    """The λ = 0 greedy over one-point Gaussian records in one call, with its sorted view of
    the records and its work arrays kept between calls in caller-owned buffers, and the test
    that the readout's two objectives cannot overflow (:func:`stays_finite`).

    ``floats`` holds two rows, ``seen`` and ``sorted_values``, and ``ints`` five, ``right``,
    ``left``, ``order``, ``chosen`` and ``picks`` (two arrays rather than seven: each argument
    of a compiled call is checked on every call). ``means`` and ``precisions`` are a
    memory's ``precision_mean`` and ``precision`` (length ``m``); ``seen[:n_seen]`` holds the
    ``precision_mean`` of the records already sorted, ``sorted_values[:n_seen]`` their values
    ``precision_mean / per_record`` ascending (ties in memory order) and ``order[:n_seen]``
    their memory indices; the records before ``checked`` (at most ``n_seen``) are known
    unchanged since the last call (the caller saw the same storage, which only appends).
    ``right`` and ``left`` (at least ``m + 1`` entries) are the identity, ``chosen`` and
    ``picks`` hold at least ``m``; the buffers hold at least ``m`` entries; ``weights`` holds
    ``m`` zeros. The call

    1. returns -1 unless every record's precision equals ``per_record`` (not one-point
       records of one count: the caller takes the general path);
    2. starts the sorted view afresh (a stable sort) unless ``seen[:n_seen]`` still equals
       ``means[:n_seen]`` (the memory was cleared, merged or changed), else inserts the records
       ``n_seen..m-1`` (``bisect_right``) — the arrays of ``sorted_records`` either way;
    3. runs :func:`greedy_parabola`'s loop over them with the tables ``c``, ``g`` from the
       datum's mean ``v = precision_mean / per_record`` and ``r = s2_h0 · (v − prior_mean)``
       (``greedy_sorted``'s first residual), ``constants`` being ``(s2_h0, prior_mean, h0,
       prior_precision_mean)`` (``s2_h0 = h0 / per_record``, the prior's mean, precision and
       ``precision_mean``), and leaves ``right`` and ``left`` the identity again.

    Returns the number ``k`` of records the greedy added when :func:`stays_finite` holds for
    the prior, the datum (``precision_mean``, ``per_record``, ``log_h``) and the records, else
    ``-2 - k``; their memory indices in order in ``picks[:k]``, and the 0/1 readout weights
    in ``weights`` (every sorted record is then in ``seen``: the caller's ``n_seen`` for the
    next call is ``m``). Nothing but an int is returned: handing arrays back to Python costs
    more than the caller allocating them.
    """
    seen, sorted_values = floats[0], floats[1]
    right, left, order, chosen, picks = ints[0], ints[1], ints[2], ints[3], ints[4]
    s2_h0, prior_mean, h0, prior_precision_mean = constants
    m = means.shape[0]
    start = checked if checked <= m else 0
    for i in range(start, m):
        if precisions[i] != per_record:
            return -1
    same = n_seen <= m
    if same:
        for i in range(min(checked, n_seen), n_seen):
            if seen[i] != means[i]:
                same = False
                break
    if not same or m - n_seen > 64:  # start afresh: one stable sort of every value
        values = means / per_record
        index = np.argsort(values, kind="mergesort")
        for i in range(m):
            sorted_values[i] = values[index[i]]
            order[i] = index[i]
            seen[i] = means[i]
    else:
        for i in range(n_seen, m):
            _insert_sorted(sorted_values, order, i, means[i] / per_record, i)
            seen[i] = means[i]
    v = precision_mean / per_record
    r = s2_h0 * (v - prior_mean)
    n_chosen = _greedy_parabola_into(sorted_values[:m], order[:m], v, r, c, g, right, left, chosen)
    for i in range(n_chosen):
        position = chosen[i]
        right[position] = position
        left[position + 1] = position + 1
        picks[i] = order[position]
        weights[picks[i]] = 1.0
    # |precision_mean| of a record <= 2 |its mean| n / σ² (the means are rounded quotients)
    largest = 2.0 * per_record * max(-sorted_values[0], sorted_values[m - 1], 0.0) if m else 0.0
    if stays_finite(h0, prior_precision_mean, precision_mean, per_record, log_h, largest, m):
        return n_chosen
    return -2 - n_chosen


#: Largest magnitude of a candidate's ``precision_mean`` (and square root of the largest
#: ``precision_mean² / precision``) for which the objective provably stays finite.
_SAFE_MEAN = 1e150
_SAFE_SQUARE = 1e306
_SAFE_PRECISION = 1e300


@njit_inline
def stays_finite(  # pragma: no cover - compiled
    h0: float,
    prior_mean: float,
    datum_mean: float,
    datum_precision: float,
    log_h: float,
    largest: float,
    size: int,
) -> bool:
    """True when ``J`` (the generic ``A(η + s_t) − A(η) + log h``, ``A(η) = ½ η₁² / η₂ −
    ½ log η₂ + ½ log 2π``) of the prior plus any subset of the records cannot overflow or
    divide by zero, so that it gives the same value whenever it is computed and never
    refuses: every candidate's ``|η₁|`` is at most the sum of the magnitudes
    (≤ 1e150, so ``η₁²`` ≤ 1e300), ``η₂`` lies between the prior's precision ``h0`` and the
    sum of all precisions (≤ 1e300), ``η₁² / h0`` ≤ 1e306, and ``|log h|`` ≤ 1e300; with
    at most ~10^12 additions the rounding cannot close the gap to float64's 1.8e308.
    ``h0`` and ``prior_mean`` are the prior's ``precision`` and ``precision_mean``; the datum's
    ``precision_mean``, ``precision`` and ``log_h`` follow; ``largest`` bounds the records'
    ``|precision_mean|``, and each record's ``precision`` is the datum's. (Tested in
    ``tests/core/test_readout_one_point.py``: against the same test in Python, and for what
    it proves, on the objectives of random subsets.)
    """
    eta1 = abs(prior_mean) + size * largest
    eta1 += abs(datum_mean)
    eta2 = h0 + size * datum_precision + datum_precision
    return (
        eta1 <= _SAFE_MEAN
        and eta1 * eta1 <= _SAFE_SQUARE * h0
        and eta2 <= _SAFE_PRECISION
        and abs(log_h) <= _SAFE_PRECISION
    )
