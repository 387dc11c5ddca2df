"""The compiled λ = 0 greedy over sorted one-point records (bam_rl.kernels.readout) picks
exactly what its literal Python reference (gaussian_readout._greedy_parabola) picks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.gaussian_readout import _compiled_parabola, _greedy_parabola


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
