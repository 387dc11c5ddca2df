"""bam_rl.schedules: values, randomness from the generator only, refusals."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from bam_rl import schedules as S


def _path(schedule, n, seed=0):
    rng = np.random.default_rng(seed)
    out, previous = [], None
    for t in range(n):
        if schedule.uses_previous:
            previous = schedule.value(t, rng, previous)
        else:
            previous = schedule.value(t, rng)
        out.append(previous)
    return out


def test_piecewise_holds_each_value_from_its_time_on():
    s = S.piecewise({0: 9.81, 3: 3.72, 5: 11.15})
    assert _path(s, 7) == [9.81, 9.81, 9.81, 3.72, 3.72, 11.15, 11.15]
    assert s.bounds == (3.72, 11.15) and s.unit == "episode"


def test_cycle_comes_back_and_repeats_are_allowed():
    s = S.cycle([10, 10, 3.72], every=2, unit="step")
    assert _path(s, 8) == [10, 10, 10, 10, 3.72, 3.72, 10, 10]
    assert s.unit == "step"


def test_markov_durations_are_geometric_with_mean_one_over_p():
    s = S.markov([1.0, 2.0, 3.0], p_switch=0.05)
    path = np.array(_path(s, 40_000, seed=1))
    assert path[0] == 1.0 and set(np.unique(path)) == {1.0, 2.0, 3.0}
    switches = np.flatnonzero(np.diff(path) != 0)
    durations = np.diff(switches)
    assert abs(durations.mean() - 1 / 0.05) < 1.5  # 2000 segments: s.e. ~ 0.44
    assert np.all(path[switches + 1] != path[switches])  # a switch always changes the value


def test_markov_extremes():
    assert _path(S.markov([1.0, 2.0], 0.0, start=1), 50) == [2.0] * 50
    assert _path(S.markov([1.0, 2.0], 1.0), 6) == [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]


def test_random_walk_stays_clipped_and_moves_with_std():
    s = S.random_walk(1.0, 0.2, low=0.5, high=1.5, unit="step")
    path = np.array(_path(s, 5000, seed=2))
    assert path[0] == 1.0 and path.min() >= 0.5 and path.max() <= 1.5
    assert path.min() == 0.5 and path.max() == 1.5  # it reaches both clips
    free = np.diff(_path(S.random_walk(0.0, 0.2), 5000, seed=3))
    assert abs(free.std() - 0.2) < 0.01


def test_drift_and_sinusoid_are_the_formulas():
    assert _path(S.drift(1.0, 0.5, high=2.0), 5) == [1.0, 1.5, 2.0, 2.0, 2.0]
    assert S.drift(1.0, -0.5, low=0.0).bounds == (0.0, 1.0)
    s = S.sinusoid(9.81, 2.0, period=4)
    assert np.allclose(_path(s, 5), [9.81, 11.81, 9.81, 7.81, 9.81])
    assert s.bounds == pytest.approx((7.81, 11.81))


def test_same_generator_state_same_values_and_no_global_randomness():
    for s in (S.markov([1.0, 2.0], 0.3), S.random_walk(0.0, 1.0)):
        np.random.seed(0)  # noqa: NPY002  (the global state must not matter)
        a = _path(s, 100, seed=7)
        np.random.seed(1)  # noqa: NPY002
        assert _path(s, 100, seed=7) == a
        assert _path(s, 100, seed=8) != a


def test_schedules_are_pure_picklable_and_comparable():
    s = S.markov([1.0, 2.0], 0.3, unit="step")
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    s.value(0, rng)  # the first value takes no draw
    assert rng.bit_generator.state == state
    assert pickle.loads(pickle.dumps(s)) == s and hash(s) == hash(
        S.markov([1, 2], 0.3, unit="step")
    )
    assert "p_switch=0.3" in repr(s)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: S.cycle([]), "values must be a non-empty"),
        (lambda: S.cycle([1.0, math.nan]), r"values\[1\] must be a finite number"),
        (lambda: S.cycle([1.0, math.inf]), r"values\[1\]"),
        (lambda: S.cycle("abc"), "values must be a non-empty sequence"),
        (lambda: S.cycle([1.0], every=0), "every must be"),
        (lambda: S.markov([1.0, 2.0], 1.5), r"p_switch must be a finite number in \[0, 1\]"),
        (lambda: S.markov([1.0, 2.0], -0.1), "p_switch"),
        (lambda: S.markov([1.0, 2.0], math.nan), "p_switch"),
        (lambda: S.markov([1.0], 0.5), "at least two distinct"),
        (lambda: S.markov([1.0, 2.0], 0.5, start=2), "start must be an index"),
        (lambda: S.piecewise({}), "points must be a non-empty dict"),
        (lambda: S.piecewise({5: 1.0}), "value at time 0"),
        (lambda: S.piecewise({0: 1.0, -1: 2.0}), "points"),
        (lambda: S.random_walk(1.0, -0.1), "std must be"),
        (
            lambda: S.random_walk(3.0, 0.1, low=0.0, high=2.0),
            r"start must be a finite number in \[0, 2\]",
        ),
        (lambda: S.random_walk(1.0, 0.1, low=2.0, high=1.0), "low must be below high"),
        (lambda: S.drift(1.0, math.inf), "rate must be"),
        (lambda: S.sinusoid(1.0, 1.0, 0.0), "period must be"),
        (lambda: S.sinusoid(1.0, -1.0, 2.0), "amplitude must be"),
        (lambda: S.cycle([1.0], unit="trial"), r"unit must be one of \('episode', 'step'\)"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_them(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_a_user_schedule_needs_only_value():
    class Doubling(S.Schedule):
        def value(self, t, rng):
            return 2.0 ** min(t, 3)

    assert _path(Doubling(), 5) == [1.0, 2.0, 4.0, 8.0, 8.0]
