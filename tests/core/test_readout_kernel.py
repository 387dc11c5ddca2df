"""The compiled λ = 0 greedy over sorted one-point records (bam_rl.kernels.readout) picks
exactly what its literal Python reference (below, the loop the readout ran before) picks."""

from __future__ import annotations

import bisect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.gaussian_readout import _compiled_parabola, _parabola_constants


def _find(parent: list[int], x: int) -> int:
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


def _greedy_parabola(
    values: list[float],
    order: list[int],
    v: float,
    r: float,
    h0: float,
    s2: float,
    right: list[int],
    left: list[int],
) -> list[int]:
    """The λ = 0 loop of ``gaussian_greedy_readout`` in plain Python (lists, ``bisect``): the
    literal reference of the compiled ``bam_rl.kernels.readout.greedy_parabola``.

    With ``λ = 0``, ``J(k, r) = c_k − g_k r²`` is a parabola in the added observation peaked at
    ``v + r``, so the best candidate is the unselected neighbour nearest to ``v + r``; the
    per-round constants ``c_k``, ``g_k`` are tabulated once.
    """
    m = len(values)
    c_array, g_array = _parabola_constants(m, h0, s2)
    c, g = c_array.tolist(), g_array.tolist()
    best = c[0] - g[0] * r * r
    bisect_left = bisect.bisect_left
    # (lo, hi): last unselected position with value < target, first with value >= target;
    # everything between them is selected. Targets move little between rounds, so the
    # bracket of the previous round is usually still valid and no search is needed.
    lo, hi = -2, m
    chosen: list[int] = []
    k = 0
    while k < m:
        target = v + r
        if lo == -2 or not ((lo < 0 or values[lo] < target) and (hi == m or target <= values[hi])):
            p = bisect_left(values, target)
            hi = right[p]
            if right[hi] != hi:
                hi = _find(right, hi)
            lo = left[p]
            if left[lo] != lo:
                lo = _find(left, lo)
            lo -= 1  # previous unselected position <= p - 1 (-1: none)
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
            else:  # equal J: the lower memory index (lo's lowest unselected duplicate)
                first = lo
                while True:
                    prev = _find(left, first) - 1
                    if prev < 0 or values[prev] != values[lo]:
                        break
                    first = prev
                pick = first if order[first] < order[hi] else hi
        # the lowest memory index among unselected duplicates of the pick (values ascend, so
        # without an equal left neighbour there is none)
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
        chosen.append(pick)
        right[pick] = pick + 1
        left[pick + 1] = pick
        if pick == hi:  # the next unselected position to the right
            hi += 1
            if hi < m and right[hi] != hi:
                hi = _find(right, hi)
        elif pick == lo:  # the previous unselected position to the left
            if left[lo] != lo:
                lo = _find(left, lo)
            lo -= 1
    return list(map(order.__getitem__, chosen))


def _both(values, v, r, h0, s2):
    order = np.argsort(values, kind="stable")
    sorted_values = np.asarray(values, dtype=float)[order].tolist()
    order = order.tolist()
    m = len(sorted_values)
    reference = _greedy_parabola(
        sorted_values, order, v, r, h0, s2, list(range(m + 1)), list(range(m + 1))
    )
    return _compiled_parabola(sorted_values, order, v, r, h0, s2), reference


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([-1.0, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0]) | st.floats(-3, 3), max_size=60
    ),
    v=st.floats(-3, 3),
    h0=st.floats(0.01, 10),
    s2=st.floats(0.01, 4),
)
def test_the_compiled_greedy_picks_what_the_reference_picks(values, v, h0, s2):
    r = s2 * h0 * v  # the first round's residual for a prior mean of 0
    compiled, reference = _both(values, v, r, h0, s2)
    assert compiled == reference


@pytest.mark.parametrize("seed", range(5))
def test_on_bandit_like_memories(seed):
    rng = np.random.default_rng(seed)
    values = np.where(rng.random(800) < 0.5, 0.2, 0.8) + rng.normal(0, 0.25, 800)
    compiled, reference = _both(values.tolist(), 0.75, 0.0, 1.0, 0.0625)
    assert compiled == reference and len(compiled) > 10
