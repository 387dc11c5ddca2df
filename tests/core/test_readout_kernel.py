"""The compiled λ = 0 greedy over sorted one-point records (bam_rl.kernels.readout) picks
exactly what its rule, stated plainly below (no union-find, no bracket kept between rounds),
picks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.readout.gaussian import _compiled_parabola, _parabola_constants


def _nearest_first(
    values: list[float], order: list[int], v: float, r: float, h0: float, s2: float
) -> list[int]:
    """The λ = 0 greedy by its rule, every round from scratch: the reference of the compiled
    ``bam_rl.kernels.readout.greedy_parabola``.

    With ``λ = 0``, ``J(k, r) = c_k − g_k r²`` is a parabola in the added observation peaked at
    ``v + r``, so each round's candidate is the unselected value nearest to ``v + r``: the
    largest below it against the smallest at or above it, equal distances to the lower memory
    index (and among equal values, the lowest). It is added while ``J`` strictly grows.
    """
    m = len(values)
    c_array, g_array = _parabola_constants(m, h0, s2)
    c, g = c_array.tolist(), g_array.tolist()
    best = c[0] - g[0] * r * r
    free = list(range(m))  # the unselected sorted positions, ascending
    chosen: list[int] = []
    for k in range(1, m + 1):
        target = v + r
        below = [p for p in free if values[p] < target]
        above = [p for p in free if values[p] >= target]
        sides = []  # (distance, lowest memory index of the value, the value)
        if below:
            x = values[below[-1]]
            sides.append((target - x, min(order[p] for p in below if values[p] == x), x))
        if above:
            x = values[above[0]]
            sides.append((x - target, min(order[p] for p in above if values[p] == x), x))
        _, index, x = min(sides)
        rr = target - x
        value = c[k] - g[k] * rr * rr
        if not value > best:
            break
        best, r = value, rr
        chosen.append(index)
        free.remove(order.index(index))
    return chosen


def _both(values, v, r, h0, s2):
    order = np.argsort(values, kind="stable")
    sorted_values = np.asarray(values, dtype=float)[order].tolist()
    order = order.tolist()
    reference = _nearest_first(sorted_values, order, v, r, h0, s2)
    return _compiled_parabola(sorted_values, order, v, r, h0, s2).tolist(), reference


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


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40),
    picks=st.lists(st.integers(0, 1_000), max_size=60),
    base=st.floats(-1e6, 1e6),
    width=st.integers(1, 3),
)
def test_the_compiled_running_sum_is_the_literal_cumsum(rows, picks, base, width):
    """``sequential_sum`` adds the picked rows in order, bit for bit ``np.cumsum``'s total."""
    from bam_rl.kernels.readout import sequential_sum

    table = np.array([[value * (column + 1) for column in range(width)] for value in rows])
    index = np.array([pick % len(rows) for pick in picks], dtype=np.intp)
    start = np.full(width, base)
    literal = np.cumsum(np.concatenate([start[None], table[index]]), axis=0)[-1]
    assert sequential_sum(start, table, index).tobytes() == literal.tobytes()


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(1, 50),
    lead=st.sampled_from([(), (1,), (3,), (2, 2)]),
    event=st.sampled_from([(), (1,), (2,), (2, 3)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_contract_is_numpy_tensordot_bit_for_bit(size, lead, event, seed):
    """The readout's ``Σ_j w_j s_j`` skips ``np.tensordot``'s axis handling, not its product."""
    from bam_rl.families.base import contract

    rng = np.random.default_rng(seed)
    weights = rng.random((*lead, size))
    array = rng.normal(size=(size, *event)) * 1e3
    expected = np.tensordot(weights, array, axes=([-1], [0]))
    got = contract(weights, array)
    assert got.shape == expected.shape and got.tobytes() == expected.tobytes()


def test_sorted_records_follow_appends_and_refresh_after_changes():
    """The readout's sorted view of a memory is the stable argsort of its values after one or
    many appends, and is rebuilt when the stored values change (merges, a cleared memory)."""
    from bam_rl.families import NormalKnownVariance
    from bam_rl.memory import Memory
    from bam_rl.readout.gaussian import sorted_records

    model = NormalKnownVariance(0.0, 1.0, 1.0)
    memory = Memory()
    rng = np.random.default_rng(0)

    def check() -> None:
        values = memory.stats.fields["precision_mean"].copy()
        sorted_values, order = sorted_records(memory, values)
        expected = np.argsort(values, kind="stable")
        assert order.tolist() == expected.tolist()
        assert sorted_values.tolist() == values[expected].tolist()

    for batch in (1, 1, 5, 1, 3, 1):  # ties from a few repeated values
        for y in rng.choice([0.0, 0.5, 1.0, rng.normal()], size=batch):
            memory.add(model.stats(np.array([y])))
        check()
    memory.clear()
    for y in (2.0, 1.0, 2.0):
        memory.add(model.stats(np.array([y])))
    check()
