"""Algorithm 1's λ = 0 loop over sorted one-point Gaussian records, compiled (Numba).

:func:`greedy_parabola` is the λ = 0 loop of :func:`bam_rl.readout.gaussian.greedy_sorted`
(its literal reference is in the tests) with arrays instead of lists: the same
rounds, the same comparisons and the same arithmetic in the same order, so it picks exactly
the same records. It is the hot loop of ``thompson-bam``, ``ucbam`` and ``tracker-bam`` on
Gaussian arms. Compiled on first use and cached on disk.
"""

from __future__ import annotations

import numpy as np

from bam_rl.kernels._cache import njit_cached

__all__ = ["greedy_parabola", "sequential_sum"]


@njit_cached
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
    right = np.arange(m + 1)
    left = np.arange(m + 1)
    best = c[0] - g[0] * r * r
    lo, hi = -2, m
    chosen = np.empty(m, dtype=np.int64)
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
    return order[chosen[:n_chosen]]


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
