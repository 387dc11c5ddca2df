"""Refused input leaves memories and rules exactly as they were (issue 14, items 1–3, 10, 11).

Each test starts from the reproducer that broke the old code.
"""

from __future__ import annotations

import numpy as np
import pytest
from core_testutils import boundary_rules
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bam_rl.beliefs.bam as beliefs
from bam_rl import (
    BAM,
    BAMWithChangepoints,
    BetaBinomial,
    Memory,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl.serialization import _Encoder


def state_of(obj) -> tuple[str, list[bytes]]:
    """Everything an object holds, as the state-file codec sees it (JSON + array bytes)."""
    encoder = _Encoder()
    document = encoder.encode(obj, "root")
    arrays = [
        encoder.arrays[key].tobytes() + str(encoder.arrays[key].shape).encode()
        for key in sorted(encoder.arrays)
    ]
    return repr(document), arrays


# ---------------------------------------------------------------- item 1: memory
def test_bounded_memory_does_not_half_update_when_a_distance_fails():
    model = NormalGamma(mean=1e8, kappa=1e-6)  # a usable prior; the data lose precision
    rule = BAM(model, capacity=3)
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(12):
        before = state_of(rule)
        try:
            rule.update(model.stats(1e8 + rng.standard_normal(5)))
        except ValueError:
            refused += 1
            assert state_of(rule) == before
    # the old code appended every refused datum (len 12) and then failed on every add
    assert refused > 0 and len(rule.memory) <= 3
    assert len(rule.memory) == len(rule.memory.times) == len(rule.memory.labels)


def test_an_improper_record_is_refused_before_it_is_stored():
    bb = BetaBinomial()
    memory = Memory(capacity=3)
    with pytest.raises(ValueError):
        memory.add(NaturalParams(bb, {"alpha": -5.0, "beta": 0.0}))
    assert len(memory) == 0
    for k in (3, 12, 2, 13):  # still usable, merging as designed
        memory.add(bb.stats(successes=k, trials=15))
    assert len(memory) == 3 and memory.n_merges == 1


def test_a_bounded_memory_merges_like_an_unbounded_memory_then_merged():
    """Plan-then-commit keeps the old semantics: the merged records' statistics add."""
    bb = BetaBinomial()
    memory = Memory(capacity=4)
    data = [3, 12, 2, 13, 3, 7, 8, 1]
    for k in data:
        memory.add(bb.stats(successes=k, trials=15))
    assert len(memory) == 4 and memory.counts.sum() == len(data)
    total = memory.weighted_sum(np.ones(4))
    np.testing.assert_allclose(total.fields["alpha"], sum(data))
    np.testing.assert_allclose(total.fields["beta"], 15 * len(data) - sum(data))


@pytest.mark.parametrize("time", [-7, 2.9, "x", float("nan"), True])
def test_memory_time_must_be_an_integer_at_least_zero(time):
    memory = Memory()
    with pytest.raises(ValueError, match="time"):
        memory.add(BetaBinomial().stats(1, 2), time=time)
    assert len(memory) == 0


@pytest.mark.parametrize("capacity", [float("nan"), float("inf"), 1, 2.5, "3"])
def test_memory_capacity_is_checked(capacity):
    with pytest.raises(ValueError, match="capacity"):
        Memory(capacity=capacity)


# ------------------------------------------------------- item 3: NaN poisoning
def test_one_nan_datum_is_refused_and_does_not_poison_the_rule():
    bb = BetaBinomial()
    rule = BAM(bb)
    rule.update(bb.stats(3, 15))
    before = state_of(rule)
    with pytest.raises(ValueError, match="finite"):
        rule.update(NaturalParams(bb, {"alpha": np.nan, "beta": 1.0}))
    assert state_of(rule) == before
    rule.update(bb.stats(4, 15))
    assert np.isfinite(rule.mean)
    with pytest.raises(ValueError, match="finite"):
        Memory().add(NaturalParams(bb, {"alpha": np.inf, "beta": 1.0}))


# --------------------------------------------- item 2: detector stays in step
def test_bam_with_changepoints_keeps_its_detector_when_selection_fails(monkeypatch):
    model = NormalKnownVariance(0.0, 100.0, 1.0)
    rule = BAMWithChangepoints(model, hazard=0.1)
    for value in [0.0] * 10:
        rule.update(model.stats([value]))
    before = state_of(rule)

    def failing_select(*args, **kwargs):
        raise ValueError("selection failed")

    # the rule selects through the unchecked select or the one-point fast path (issue 50)
    monkeypatch.setattr(beliefs, "select_checked", failing_select)
    monkeypatch.setattr(beliefs, "one_point_select", failing_select)
    with pytest.raises(ValueError, match="selection failed"):
        for _ in range(5):  # a jump: the detector signals a change, the selection raises
            rule.update(model.stats([50.0]))
    assert state_of(rule) == before
    monkeypatch.undo()
    rule.update(model.stats([50.0]))
    assert rule.n_selections == 1 and rule.changepoints == [10]


# ------------------------------------ items 2, 10, 11: refuse at construction
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"method": "exhaustive"}, "capacity"),
        ({"method": "exhaustive", "capacity": 17}, "capacity"),
        ({"bogus": 1}, "bogus"),
        ({"method": "parallel", "q": 5}, "q"),
        ({"method": "continuous", "max_iter": -1}, "max_iter"),
        ({"method": "continuous", "max_iter": 0.5}, "max_iter"),
        ({"lam": "x"}, "lam"),
        ({"lam": None}, "lam"),
        ({"lam": -1.0}, "lam"),
    ],
)
@pytest.mark.parametrize("rule_class", [BAM, BAMWithChangepoints])
def test_bam_refuses_bad_options_at_construction(rule_class, kwargs, name):
    with pytest.raises(ValueError, match=name):
        rule_class(BetaBinomial(), **kwargs)


def test_exhaustive_with_a_small_capacity_runs_past_sixteen_data():
    bb = BetaBinomial()
    rule = BAM(bb, method="exhaustive", capacity=8)
    for k in np.random.default_rng(1).integers(0, 16, size=30):
        rule.update(bb.stats(int(k), 15))
    assert len(rule.memory) == 8


# ------------------------------- property: refused input changes nothing at all
# the fuzz test's rules: one more (bam-parallel) than before, so 46 examples rather than 40
RULES = boundary_rules(capacity=4)
BAD = [
    lambda m: NaturalParams(m, {k: np.full_like(v, np.nan) for k, v in m.prior.fields.items()}),
    lambda m: NaturalParams(m, {k: np.full_like(v, np.inf) for k, v in m.prior.fields.items()}),
    lambda m: (
        NormalGamma().stats([1.0]) if not isinstance(m, NormalGamma) else BetaBinomial().stats(1, 2)
    ),
    lambda m: m.zeros((2,)),
]


@settings(max_examples=46, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule_name=st.sampled_from(sorted(RULES)),
    bad=st.sampled_from(range(len(BAD))),
    n_before=st.integers(0, 8),
    seed=st.integers(0, 2**16),
)
def test_refused_input_leaves_every_rule_unchanged(rule_name, bad, n_before, seed):
    model = BetaBinomial()
    rule = RULES[rule_name](model)
    rng = np.random.default_rng(seed)
    for k in rng.integers(0, 16, size=n_before):
        rule.update(model.stats(int(k), 15))
    before = state_of(rule)
    with pytest.raises(ValueError):
        rule.update(BAD[bad](model))
    assert state_of(rule) == before


def test_make_rule_passes_a_capacity_to_the_bam_rules():
    from bam_rl.beliefs import make_rule

    model = BetaBinomial()
    assert make_rule(model, "bam", capacity=8).memory.capacity == 8
    assert make_rule(model, "bam_bocd", capacity=8).memory.capacity == 8
    assert make_rule(model, "bam").memory.capacity is None
