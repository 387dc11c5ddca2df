"""The scalar fast paths of a bandit step refuse exactly what the general checks refuse.

``passes_datum_checks`` (a rule's update) and ``Memory``'s finite-scalar test only *accept*:
whenever they return ``False`` the general checks run and raise their own message. These
tests show that they never accept a datum the general checks refuse (NaN, inf, impossible
totals, overflowing log partitions, wrong shapes or dtypes) and that the update then raises
the general checks' ``ValueError``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bam_rl.beliefs import BAM, RecursiveBayes
from bam_rl.beliefs.rules import (
    _BETA_SAFE_HIGH,
    _BETA_SAFE_LOW,
    check_possible_datum,
    passes_datum_checks,
)
from bam_rl.checks import check_finite_params
from bam_rl.families import BetaBinomial, NaturalParams, NormalKnownVariance
from bam_rl.memory import Memory, _finite_scalars

NORMAL = NormalKnownVariance(mean=0.5, var=0.25, noise_var=0.0625)
BETA = BetaBinomial(alpha=1.0, beta=1.0)
FIELDS = {NORMAL: ("precision_mean", "precision"), BETA: ("alpha", "beta")}


def _datum(model, first, second, log_h=0.0, dtype=np.float64):
    """A datum built past the constructor's checks (as a buggy caller or a state file could)."""
    a, b = FIELDS[model]
    fields = {a: np.asarray(first, dtype=dtype), b: np.asarray(second, dtype=dtype)}
    return NaturalParams._trusted(model, fields, np.asarray(log_h, dtype=dtype), ())


def _general(model, s, finite_partition):
    """The general checks: ``None`` when they pass, else their message."""
    try:
        check_finite_params("s", s)
        check_possible_datum(model, s.fields, finite_partition=finite_partition)
    except ValueError as error:
        return str(error)
    return None


BAD = [
    (NORMAL, math.nan, 16.0, 0.0),
    (NORMAL, 1.0, math.nan, 0.0),
    (NORMAL, 1.0, 16.0, math.nan),
    (NORMAL, math.inf, 16.0, 0.0),
    (NORMAL, 1.0, -math.inf, 0.0),
    (NORMAL, 1.0, 16.0, -math.inf),
    (NORMAL, 1.0, -4.0, 0.0),  # prior precision 4: total 0
    (NORMAL, 1.0, -10.0, 0.0),  # total < 0
    (NORMAL, 1e200, 1.0, 0.0),  # log partition overflows
    (NORMAL, 1e160, 1e-300, 0.0),
    (NORMAL, 1.7e308, 1.7e308, 0.0),  # the total precision overflows
    (BETA, -1.0, 0.0, 0.0),  # alpha total 0
    (BETA, 0.0, -5.0, 0.0),
    (BETA, math.nan, 1.0, 0.0),
    (BETA, 1.0, math.inf, 0.0),
    (BETA, 1.0, 1.0, math.nan),
    (BETA, -1.0 + 5e-324, 1.0, 0.0),  # subnormal alpha: betaln is inf
    (BETA, 1e100, 1e300, 0.0),  # betaln is NaN
]


@pytest.mark.parametrize(("model", "first", "second", "log_h"), BAD)
@pytest.mark.parametrize("finite_partition", [False, True])
def test_fast_path_never_accepts_what_the_general_checks_refuse(
    model, first, second, log_h, finite_partition
):
    s = _datum(model, first, second, log_h)
    refused = _general(model, s, finite_partition)
    if refused is not None:
        assert not passes_datum_checks(model, s, finite_partition)


@pytest.mark.parametrize(("model", "first", "second", "log_h"), BAD)
@pytest.mark.parametrize("rule", [BAM, RecursiveBayes])
def test_an_update_raises_the_general_message(model, first, second, log_h, rule):
    s = _datum(model, first, second, log_h)
    belief_rule = rule(model)
    refused = _general(model, s, rule._keeps_records)
    if refused is None:  # e.g. a record only BAM's finite log partition refuses
        belief_rule.update(s)
        return
    with pytest.raises(ValueError) as caught:
        belief_rule.update(s)
    assert refused in str(caught.value) or str(caught.value) == refused
    assert belief_rule.t == 0 and (rule is not BAM or len(belief_rule.memory) == 0)


@pytest.mark.parametrize("model", [NORMAL, BETA])
@pytest.mark.parametrize(
    "build",
    [
        lambda m, a, b: _datum(m, a, b, dtype=np.float32),  # wrong dtype
        lambda m, a, b: _datum(m, a, b, dtype=np.int64),
        lambda m, a, b: NaturalParams._trusted(  # wrong shape behind a () batch shape
            m, dict(zip(FIELDS[m], (np.full(2, a), np.full(2, b)), strict=True)), np.zeros(()), ()
        ),
    ],
)
def test_other_dtypes_and_shapes_take_the_general_path(model, build):
    assert not passes_datum_checks(model, build(model, 1.0, 1.0), True)


def test_a_family_with_replaced_hooks_or_another_class_takes_the_general_path():
    model = NormalKnownVariance()
    model.log_partition_fields = lambda fields: np.asarray(np.inf)  # type: ignore[method-assign]
    s = model.stats([0.3])
    assert not passes_datum_checks(model, s, True)
    with pytest.raises(ValueError, match="overflows float64"):
        BAM(model).update(s)

    class Sub(NormalKnownVariance):
        pass

    assert not passes_datum_checks(Sub(), Sub().stats([0.3]), True)


def test_ordinary_bandit_data_take_the_fast_path():
    rng = np.random.default_rng(0)
    for reward in rng.normal(0.5, 1.0, 50):
        assert passes_datum_checks(NORMAL, NORMAL.stats([reward]), True)
    for k in (0, 1):
        assert passes_datum_checks(BETA, BETA.stats(successes=k, trials=1), True)


finite = st.floats(allow_nan=True, allow_infinity=True, width=64)


@pytest.mark.parametrize("family", [NORMAL, BETA], ids=["normal", "beta"])
@settings(max_examples=400, deadline=None)
@given(first=finite, second=finite, log_h=finite, keeps=st.booleans())
def test_fast_accept_implies_general_accept(family, first, second, log_h, keeps):
    s = _datum(family, first, second, log_h)
    if passes_datum_checks(family, s, keeps):
        assert _general(family, s, keeps) is None


def test_betaln_is_finite_on_the_whole_safe_box():
    from scipy.special import betaln

    grid = np.concatenate(
        [10.0 ** np.arange(-200, 51), [_BETA_SAFE_LOW, _BETA_SAFE_HIGH, 1.0, 2.0, 3.0]]
    )
    a, b = np.meshgrid(grid, grid)
    with np.errstate(all="raise"):
        assert np.isfinite(betaln(a, b)).all()
    rng = np.random.default_rng(1)
    a, b = 10.0 ** rng.uniform(-200, 50, (2, 100_000))
    with np.errstate(all="raise"):
        assert np.isfinite(betaln(a, b)).all()


# ------------------------------------------------------------------------ Memory.add
@pytest.mark.parametrize(
    ("first", "second", "log_h", "message"),
    [
        (math.nan, 16.0, 0.0, "non-finite 'precision_mean'"),
        (1.0, math.inf, 0.0, "non-finite 'precision'"),
        (1.0, 16.0, -math.inf, "non-finite log_h"),
        (math.nan, 16.0, math.nan, "non-finite 'precision_mean'"),
    ],
)
def test_memory_refuses_non_finite_data_with_the_general_message(first, second, log_h, message):
    s = _datum(NORMAL, first, second, log_h)
    assert not _finite_scalars(s)
    memory = Memory()
    with pytest.raises(ValueError, match=message):
        memory.add(s)
    assert len(memory) == 0


@settings(max_examples=300, deadline=None)
@given(first=finite, second=finite, log_h=finite)
def test_memory_fast_test_implies_the_general_one(first, second, log_h):
    s = _datum(NORMAL, first, second, log_h)
    if _finite_scalars(s):
        check_finite_params("s", s)
    else:
        with pytest.raises(ValueError):
            check_finite_params("s", s)


@pytest.mark.parametrize("time", [True, -1, 2.0, "3", np.float64(1.0)])
def test_memory_time_is_still_checked(time):
    memory = Memory()
    with pytest.raises(ValueError, match="time must be"):
        memory.add(NORMAL.stats([0.1]), time=time)
    assert len(memory) == 0


def test_memory_takes_numpy_integer_times():
    memory = Memory()
    memory.add(NORMAL.stats([0.1]), time=np.int64(7))
    memory.add(NORMAL.stats([0.2]), time=3)
    assert memory.times.tolist() == [7, 3] and type(memory._next_time) is int
