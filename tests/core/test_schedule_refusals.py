"""Schedules say what is wrong (issue 50, fifth round): a sinusoid whose phase would overflow,
JSON piecewise keys that are no integers or name one time twice, a schedule class given where
an instance belongs, and the abstract ``Schedule`` itself.

Every test here failed before: a period of 1e-320 was accepted and died mid-run with "math
domain error", the key "1.5" gave int()'s message, "0" and "00" collapsed silently into one
time, ``{"g": cycle}`` died with "'property' object is not subscriptable", and ``Schedule()``
was built (its ``value`` raised ``NotImplementedError``).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from bam_rl import schedules as S

RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------ sinusoid
def test_a_sinusoid_period_too_short_for_a_finite_phase_is_refused():
    with pytest.raises(ValueError, match=r"period must be a finite number >= 1e-290, got 1e-320"):
        S.sinusoid(9.81, 1.0, 1e-320)
    # the shortest accepted period stays finite at every t a float counts exactly
    shortest = S.sinusoid(9.81, 1.0, S.MIN_PERIOD)
    for t in (0, 1, 7, 2**40, S.MAX_TIME):
        assert math.isfinite(shortest.value(t, RNG))


def test_a_phase_that_would_overflow_the_sum_is_refused():
    with pytest.raises(ValueError, match="phase must be a finite number small enough"):
        S.sinusoid(0.0, 1.0, S.MIN_PERIOD, phase=1.79e308)
    assert S.sinusoid(0.0, 1.0, 4.0, phase=1e300).value(3, RNG) == pytest.approx(
        math.sin(2 * math.pi * 3 / 4 + 1e300)
    )


# ------------------------------------------------------------------------ piecewise keys
def test_json_piecewise_keys_that_are_integers_are_times():
    s = S.piecewise({"0": 9.81, "50": 3.72})
    assert s == S.piecewise({0: 9.81, 50: 3.72})
    assert [s.value(t, RNG) for t in (0, 49, 50)] == [9.81, 9.81, 3.72]


@pytest.mark.parametrize("key", ["1.5", "1e3", "ten", ""])
def test_a_piecewise_time_key_that_is_no_integer_is_named(key):
    with pytest.raises(ValueError, match=f"piecewise time keys must be integers, got {key!r}"):
        S.piecewise({"0": 9.81, key: 3.72})


@pytest.mark.parametrize("key", [1.5, 2.0, True])
def test_a_python_time_key_that_is_no_int_is_named(key):
    with pytest.raises(ValueError, match="piecewise time keys must be integers"):
        S.piecewise({0: 9.81, key: 3.72})


def test_a_negative_json_time_key_is_refused():
    with pytest.raises(ValueError, match=r"piecewise time keys must be integers >= 0, got '-3'"):
        S.piecewise({"0": 9.81, "-3": 3.72})


@pytest.mark.parametrize(
    ("points", "first", "second"),
    [
        ({"0": 9.81, "00": 3.72}, "'0'", "'00'"),
        ({"0": 9.81, "5": 1.0, "005": 3.72}, "'5'", "'005'"),
        ({0: 9.81, "0": 3.72}, "0", "'0'"),
    ],
)
def test_keys_of_the_same_time_are_refused_naming_both(points, first, second):
    with pytest.raises(ValueError, match=f"piecewise time keys {first} and {second} are the same"):
        S.piecewise(points)


# ------------------------------------------------------------------------ an instance, please
@pytest.mark.parametrize("given", [S.cycle, S.Sinusoid, S.Schedule])
def test_a_schedule_class_is_refused_naming_the_parameter(given):
    with pytest.raises(
        ValueError,
        match=r"the schedule for 'g' must be a Schedule instance such as cycle\(\[\.\.\.\], "
        r"every=\.\.\.\).*got <class .*call it with its arguments",
    ):
        S.check_schedule("g", given)


@pytest.mark.parametrize("given", [lambda t, rng: 1.0, 9.81, None, "cycle"])
def test_a_function_or_a_number_is_refused_naming_the_parameter(given):
    with pytest.raises(ValueError, match=r"the schedule for 'g' must be a Schedule instance"):
        S.check_schedule("g", given)


def test_instances_and_duck_typed_schedules_pass():
    class Constant:  # no subclass of Schedule: an object with value(t, rng) is a schedule
        unit = "step"

        def value(self, t, rng):
            return 1.0

    for schedule in (S.cycle([9.81, 3.72], every=2), S.random_walk(0.0, 1.0), Constant()):
        assert S.check_schedule("g", schedule) is schedule


@pytest.mark.parametrize(
    ("unit", "bounds", "match"),
    [
        ("trial", None, r"count in a unit of \('episode', 'step'\), got unit='trial'"),
        ("step", (2.0, 1.0), r"bounds as None or a pair \(low, high\)"),
        ("step", (1.0,), "bounds as None or a pair"),
        ("step", ("a", "b"), "bounds as None or a pair"),
        ("step", (math.nan, 1.0), "bounds as None or a pair"),
    ],
)
def test_a_bad_unit_or_bounds_is_refused(unit, bounds, match):
    class Odd:
        def __init__(self):
            self.unit, self.bounds = unit, bounds

        def value(self, t, rng):
            return 1.0

    with pytest.raises(ValueError, match=match):
        S.check_schedule("g", Odd())


def test_the_base_class_is_abstract():
    with pytest.raises(TypeError, match="Schedule is the abstract base class of schedules"):
        S.Schedule()

    class Forgetful(S.Schedule):  # no value(t, rng)
        pass

    with pytest.raises(TypeError, match="abstract"):
        Forgetful()


# ------------------------------------------------------------------------ through the wrapper
# the wrapper leaves JSON keys to Piecewise and calls check_schedule, so its specs and schedules
# give the same messages


@pytest.mark.parametrize(
    ("points", "match"),
    [
        ({"0": 9.81, "1.5": 3.72}, r"piecewise time keys must be integers, got '1\.5'"),
        ({"0": 9.81, "00": 3.72}, "piecewise time keys '0' and '00' are the same time 0"),
    ],
)
def test_json_specs_of_the_wrapper_give_the_schedules_message(points, match):
    from bam_rl.wrappers import make_nonstationary

    with pytest.raises(ValueError, match=match):
        make_nonstationary("Pendulum-v1", {"g": {"piecewise": {"points": points}}})


def test_the_wrapper_refuses_a_schedule_class_by_name():
    from bam_rl.wrappers import NonStationary

    with pytest.raises(ValueError, match="the schedule for 'g' must be a Schedule instance"):
        NonStationary(gym.make("Pendulum-v1"), {"g": S.cycle})
