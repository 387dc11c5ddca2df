"""The klUCB family's compiled kernels against literal NumPy / Python references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.agents.klucb import bernoulli_kl, glr_statistic, klucb_index
from bam_rl.kernels.bandits import cusum_first_alarm, glr_first_split, klucb_indices


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 40), st.floats(-2.0, 12.0)),
        min_size=1,
        max_size=6,
    )
)
def test_klucb_indices_equal_the_numpy_bisection(arms: list[tuple[int, int, float]]) -> None:
    pulls = np.array([float(p) for p, _, _ in arms])
    sums = np.array([float(min(s, p)) for p, s, _ in arms])
    log_times = np.array([t for _, _, t in arms])
    out = np.zeros(len(arms))
    best, ties = klucb_indices(sums, pulls, log_times, out)
    pulled = pulls >= 1
    expected = np.full(len(arms), np.inf)
    if pulled.any():
        expected[pulled] = klucb_index(
            sums[pulled] / pulls[pulled], log_times[pulled] / pulls[pulled]
        )
    # both solve kl(mean, q) = bound with the same KL, whose rounding (~1e-16) moves the root
    # by about that over the slope kl' = (q - mean) / (q (1 - q)): flat at a root near the mean
    means = np.clip(sums / np.maximum(pulls, 1.0), 0.0, 1.0)
    slope = np.abs(expected - means) / np.maximum(expected * (1.0 - expected), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        tolerance = 1e-12 + np.where(pulled, 1e-15 / slope, 0.0)
    assert np.all((out == expected) | (np.abs(out - expected) <= tolerance)), (out, expected)
    assert out[best] == out.max() and best == int(np.argmax(out))
    assert ties == int(np.count_nonzero(out == out.max()))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 10**6),
    st.floats(0.0, 1.0),
    st.floats(1e-6, 50.0),
)
def test_klucb_root_is_the_bisection_where_the_root_is_well_conditioned(
    pulls: int, fraction: float, bound: float
) -> None:
    """Newton's root against 50 halvings of [mean, 1] at every bound a klUCB index meets in
    practice (``log t / N >= log 2 / T``), both within 1e-12."""
    from bam_rl.kernels.bandits import klucb_root

    mean = math.floor(fraction * pulls) / pulls
    expected = float(klucb_index(mean, bound))
    assert abs(klucb_root(mean, bound) - expected) <= 1e-12


def test_klucb_root_edge_cases_take_the_bisection() -> None:
    from bam_rl.kernels.bandits import klucb_root

    for mean, bound in [(0.0, 2.0), (1.0, 2.0), (0.3, 0.0), (0.3, -1.0), (0.3, math.inf)]:
        assert klucb_root(mean, bound) == float(klucb_index(mean, bound))
    assert klucb_root(0.5, 1e-300) == pytest.approx(0.5, abs=1e-12)  # a root at the mean


def _first_split_brute_force(data: np.ndarray, step: int, threshold: float) -> int:
    """Splits in order, each statistic from explicit slices; the reference's near-equal skip."""
    n = data.size
    if n < 2:
        return -1
    mean = data.mean()
    for s in range(n - 1):
        if s % step:
            continue
        before, after = data[: s + 1].mean(), data[s + 1 :].mean()
        if np.isclose(before, mean) and np.isclose(after, mean):
            continue
        glr = (s + 1) * bernoulli_kl(before, mean) + (n - 1 - s) * bernoulli_kl(after, mean)
        if glr >= threshold - 1e-9 * max(1.0, threshold):
            return s + 1
    return -1


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(0, 1), min_size=0, max_size=60),
    st.integers(1, 4),
    st.floats(0.5, 12.0),
)
def test_glr_first_split_is_the_first_crossing(
    bits: list[int], step: int, threshold: float
) -> None:
    data = np.array(bits, dtype=np.float64)
    found = glr_first_split(np.append(data, [9.0, 9.0]), data.size, step, threshold)  # padding
    assert found == _first_split_brute_force(data, step, threshold)
    if data.size >= 2:  # fires iff the brute-force maximum over the same splits reaches it
        assert (found >= 0) == (glr_statistic(data, step) >= threshold) or math.isclose(
            glr_statistic(data, step), threshold, rel_tol=1e-9
        )


def _cusum_literal(data: list[float], warmup: int, epsilon: float, h: float) -> int:
    if len(data) <= warmup:
        return -1
    u0 = sum(data[:warmup]) / warmup
    g_plus = g_minus = 0.0
    for i, y in enumerate(data):
        g_plus = max(0.0, g_plus + (u0 - y - epsilon))
        g_minus = max(0.0, g_minus + (y - u0 - epsilon))
        if g_plus >= h or g_minus >= h:
            return i
    return -1


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(0, 1), max_size=80),
    st.integers(1, 20),
    st.floats(0.01, 0.4),
    st.floats(0.5, 8.0),
)
def test_cusum_first_alarm_matches_a_literal_loop(
    bits: list[int], warmup: int, epsilon: float, h: float
) -> None:
    data = [float(b) for b in bits]
    found = cusum_first_alarm(np.array(data + [0.5]), len(data), warmup, epsilon, h)
    assert found == _cusum_literal(data, warmup, epsilon, h)


def test_a_clear_change_is_found_and_localised() -> None:
    data = np.array([1.0] * 200 + [0.0] * 200)
    split = glr_first_split(data, data.size, 1, 20.0)
    # the *first* split whose statistic reaches 20 (the reference's localisation), not the
    # most likely one: well before the change, never after it
    assert 1 <= split <= 200
    assert glr_first_split(data, data.size, 1, 1e6) == -1
    assert cusum_first_alarm(data, data.size, 100, 0.1, 5.0) in range(200, 210)
