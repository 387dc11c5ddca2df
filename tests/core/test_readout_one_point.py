"""The one-call readout of one-point Gaussian records (``thompson-bam``'s and ``ucbam``'s step)
gives bit for bit what the layered path gives: the same picks, weights, objectives, beliefs and
statistics, through appends, clears and merges of the memory."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bam_rl.readout.greedy as greedy
from bam_rl.agents.bandits import gaussian_reward_statistics
from bam_rl.beliefs import BAM
from bam_rl.families import NormalKnownVariance
from bam_rl.families.base import NaturalParams, contract
from bam_rl.memory import Memory
from bam_rl.readout import LazyRounds, select
from bam_rl.readout.gaussian import cached_parabola_constants, greedy_sorted, sorted_records
from bam_rl.readout.select import LazyReadoutResult, _Objective, readout_prior

MODEL = NormalKnownVariance(0.5, 0.25, 0.0625)  # the paper's switching bandit's arms
#: the module (``bam_rl.readout.select`` the attribute is the function of that name)
select_module = importlib.import_module("bam_rl.readout.select")


def _bandit_rewards(rng: np.random.Generator, size: int) -> np.ndarray:
    return np.where(rng.random(size) < 0.5, 0.2, 0.8) + 0.25 * rng.normal(size=size)


def _layered(model, memory, s_t):
    """The picks of the general closed form (sorted records, then the compiled greedy)."""
    stats = memory.stats.fields
    per_record = float(stats["precision"][0])
    values, order = sorted_records(memory, stats["precision_mean"] / per_record)
    v = float(s_t.fields["precision_mean"]) / per_record
    return greedy_sorted(
        values, order, v, 1.0 / per_record, 1.0 / model.prior_var, model.prior_mean, 0.0
    )


@pytest.mark.parametrize("capacity", [None, 24])
def test_the_one_call_readout_picks_what_the_layered_closed_form_picks(capacity):
    rng = np.random.default_rng(3)
    memory = Memory(capacity=capacity)
    for step, y in enumerate(_bandit_rewards(rng, 400)):
        if step == 250:
            memory.clear()  # a fresh memory in the same object: the sorted view starts again
        if len(memory) and step % 7 != 3:  # some steps add without a readout (several appends)
            s_t = gaussian_reward_statistics(MODEL, float(rng.choice([y, 0.8, -0.3])))
            found = greedy.one_point_picks(MODEL, memory, s_t, 0.0, memory.stats.fields)
            if found is None:  # only before the constants' table covers the memory
                select(MODEL, memory, s_t)  # builds it
                found = greedy.one_point_picks(MODEL, memory, s_t, 0.0, memory.stats.fields)
            if capacity is not None and memory.counts.max() > 1:
                assert found is None  # merged records hold two observations: not one-point
                continue
            assert found is not None
            picks, weights, lazy = found
            expected_weights, expected_picks = _layered(MODEL, memory, s_t)
            assert picks.tolist() == expected_picks.tolist()
            assert weights.tobytes() == expected_weights.tobytes()
            assert lazy
        memory.add(gaussian_reward_statistics(MODEL, float(y)))


def test_a_record_of_another_precision_takes_the_general_path():
    memory = Memory()
    for y in (0.1, 0.5, 0.9):
        memory.add(MODEL.stats(y))
    memory.add(MODEL.stats([0.4, 0.6]))  # two observations: precision 2 / σ²
    s_t = MODEL.stats(0.5)
    select(MODEL, memory, s_t)
    assert greedy.one_point_picks(MODEL, memory, s_t, 0.0, memory.stats.fields) is None
    assert select(MODEL, memory, s_t).path != "gaussian"


def test_lazy_objectives_are_the_eager_ones():
    """``objective`` and ``base_objective`` computed when first read equal those computed
    with the readout (the generic ``J`` of the prior, and of the prior plus the picks)."""
    rng = np.random.default_rng(0)
    memory = Memory()
    for y in _bandit_rewards(rng, 300):
        memory.add(MODEL.stats(float(y)))
    for y in (0.75, 0.2, 5.0, -3.0):
        s_t = MODEL.stats(y)
        select(MODEL, memory, s_t)  # the constants' table
        lazy = select(MODEL, memory, s_t)
        assert isinstance(lazy, LazyReadoutResult) and isinstance(lazy.scores, LazyRounds)
        stats = memory.stats.fields
        score = _Objective(MODEL, s_t, 0.0)
        eager = greedy.finish(MODEL, memory, score, lazy.scores._picks, "gaussian", stats=stats)
        assert lazy.objective == eager.objective and lazy.base_objective == eager.base_objective
        assert lazy.n_evaluations == eager.n_evaluations and len(lazy.scores) == len(eager.scores)
        np.testing.assert_array_equal(lazy.scores[-1], eager.scores[-1])
        lazy.objective = 1.5  # still assignable, as a dataclass field
        assert lazy.objective == 1.5 and lazy.base_objective == eager.base_objective


def test_objectives_that_could_overflow_are_computed_at_once():
    """Huge statistics: the objectives are computed with the readout, with NumPy's errors
    raised, as before (an overflow there sends the readout to the generic loop, which refuses
    it), never deferred to a read that would fail later."""
    wide = NormalKnownVariance(0.0, 1.0, 1e-3)
    memory = Memory()
    for y in (1e148, -1e148, 3e148):
        memory.add(wide.stats(y))
    s_t = wide.stats(2e148)
    for _ in range(2):  # the second call finds the table built
        try:
            result = select(wide, memory, s_t)
        except ValueError as error:
            assert "not finite" in str(error)
        else:
            assert not isinstance(result, LazyReadoutResult)
            assert np.isfinite(result.objective)


@pytest.mark.parametrize("size", [1, 2, 7, 64, 300, 2049])
def test_a_scalar_fields_dot_is_contract_bit_for_bit(size):
    """``readout_prior`` multiplies scalar fields by ``np.dot`` of the two vectors, the BLAS
    dot product ``contract`` reaches through its reshapes."""
    rng = np.random.default_rng(size)
    for _ in range(20):
        weights = (rng.random(size) < rng.random()).astype(float)
        values = rng.normal(size=size) * 10.0 ** rng.integers(-3, 4)
        values[rng.random(size) < 0.2] = -0.0
        assert np.asarray(np.dot(weights, values)).tobytes() == contract(weights, values).tobytes()


@pytest.mark.parametrize("size", [0, 1, 2, 3, 16, 17, 300, 2049])
def test_a_vectors_matmul_is_zero_plus_its_dot_bit_for_bit(size):
    """``readout_prior`` takes ``weights @ log_h`` (what ``Memory.weighted_sum`` computes) as
    ``0.0 + weights.dot(log_h)``: NumPy's product of two vectors starts its sum at 0.0, where
    ``np.dot`` (``ndarray.dot``, the same call) of one element is the bare product, -0.0
    included."""
    rng = np.random.default_rng(size)
    for trial in range(30):
        weights = (rng.random(size) < rng.random()).astype(float)
        values = rng.normal(size=size) * 10.0 ** rng.integers(-3, 4)
        if trial % 3 == 0:
            values = -np.abs(values)  # a zero weight times a negative value is -0.0
        values[rng.random(size) < 0.2] = -0.0
        expected = np.float64(weights @ values)
        assert np.float64(0.0 + float(weights.dot(values))).tobytes() == expected.tobytes()
        assert weights.dot(values).tobytes() == np.dot(weights, values).tobytes()


def test_readout_prior_is_the_memorys_weighted_sum_bit_for_bit():
    rng = np.random.default_rng(1)
    memory = Memory()
    for y in _bandit_rewards(rng, 200):
        memory.add(MODEL.stats(float(y)))
    s_t = MODEL.stats(0.3)
    for _ in range(10):
        weights = (rng.random(len(memory)) < 0.4).astype(float)
        expected = memory.weighted_sum(weights, base=MODEL.prior)
        got = readout_prior(memory, weights, MODEL.prior)
        posterior = readout_prior(memory, weights, MODEL.prior, memory.stats, s_t)
        for name in expected.fields:
            assert got.fields[name].tobytes() == expected.fields[name].tobytes()
            assert posterior.fields[name].tobytes() == (expected + s_t).fields[name].tobytes()
        assert got.log_h.tobytes() == expected.log_h.tobytes()
        assert posterior.log_h.tobytes() == (expected + s_t).log_h.tobytes()


def test_readout_prior_refuses_an_overflowing_sum_as_the_weighted_sum_does():
    model = NormalKnownVariance(0.0, 1.0, 1.0)
    memory = Memory()
    for _ in range(2):
        memory.add(NaturalParams(model, {"precision_mean": 1.5e308, "precision": 1.0}))
    with pytest.raises(ValueError, match="finite"):
        memory.weighted_sum(np.ones(2), base=model.prior)
    with pytest.raises(ValueError, match="finite"):
        readout_prior(memory, np.ones(2), model.prior)


def test_gaussian_reward_statistics_are_the_models_bit_for_bit():
    rng = np.random.default_rng(2)
    for noise in (0.0625, 1.0, 3.7, 1e-10):
        model = NormalKnownVariance(0.5, 0.25, noise)
        rewards = [0.0, -0.0, 5e-324, -1e150, 1e154, *rng.normal(size=200)]
        rewards += list(rng.normal(size=100) * 10.0 ** rng.integers(-300, 150, 100))
        for reward in rewards:
            try:
                reference = model.stats(reward)
            except ValueError as error:  # too large: both refuse it, with the same message
                with pytest.raises(ValueError) as refused:
                    gaussian_reward_statistics(model, reward)
                assert str(refused.value) == str(error)
                continue
            fast = gaussian_reward_statistics(model, reward)
            for name in reference.fields:
                assert fast.fields[name].tobytes() == reference.fields[name].tobytes()
                assert fast.fields[name].shape == reference.fields[name].shape == ()
            assert fast.log_h.tobytes() == reference.log_h.tobytes()
    with pytest.raises(ValueError, match="overflow"):
        gaussian_reward_statistics(NormalKnownVariance(noise_var=1e-10), 1e300)


def test_bam_with_the_one_call_readout_equals_bam_without(monkeypatch):
    """A BAM rule fed a bandit arm's rewards: the beliefs, the records and every readout are
    those of the layered path (the one-call readout switched off)."""
    rng = np.random.default_rng(4)
    rewards = [float(y) for y in _bandit_rewards(rng, 500)]
    fast = BAM(MODEL)
    fast_readouts = []
    for y in rewards:
        fast.update(gaussian_reward_statistics(MODEL, y))
        if fast.last_readout is not None:
            fast_readouts.append(fast.last_readout)
    monkeypatch.setattr(select_module, "one_point_select", lambda *args: None)
    monkeypatch.setattr(greedy, "one_point_picks", lambda *args: None)
    import bam_rl.beliefs.bam as bam_module

    monkeypatch.setattr(bam_module, "one_point_select", lambda *args: None)
    monkeypatch.setattr(bam_module, "one_point_posterior", lambda *args: None)
    slow = BAM(MODEL)
    assert len(fast_readouts) == len(rewards)
    # all but the steps that first build (or grow) the table of constants: one call each
    assert sum(isinstance(r, LazyReadoutResult) for r in fast_readouts) >= len(rewards) - 10
    for i, y in enumerate(rewards):
        slow.update(MODEL.stats(y))
        if i:
            old, new = slow.last_readout, fast_readouts[i]
            assert old is not None
            assert not isinstance(old, LazyReadoutResult)
            assert new.weights.tobytes() == old.weights.tobytes()
            assert (new.objective, new.base_objective) == (old.objective, old.base_objective)
            assert (new.n_evaluations, new.path, new.method) == (
                old.n_evaluations,
                old.path,
                old.method,
            )
            assert isinstance(new.scores, LazyRounds)
            if i % 50 == 1:  # the lazy trail (its objective built on first call) is the eager one
                assert len(new.scores) == len(old.scores)
                for lazy_round, eager_round in zip(new.scores, old.scores, strict=True):
                    assert lazy_round.tobytes() == eager_round.tobytes()
    for name in fast.belief.fields:
        assert fast.belief.fields[name].tobytes() == slow.belief.fields[name].tobytes()
    assert fast.belief.log_h.tobytes() == slow.belief.log_h.tobytes()
    assert fast.memory.stats.fields["precision_mean"].tobytes() == (
        slow.memory.stats.fields["precision_mean"].tobytes()
    )


def _stays_finite_reference(h0, prior_mean, datum_mean, datum_precision, log_h, largest, size):
    """The compiled readout's ``stays_finite``, line for line in Python (a check of the
    compilation; what the test proves is checked by
    ``test_what_the_overflow_test_passes_has_finite_objectives``)."""
    eta1 = abs(prior_mean) + size * largest
    eta1 += abs(datum_mean)
    eta2 = h0 + size * datum_precision + datum_precision
    return eta1 <= 1e150 and eta1 * eta1 <= 1e306 * h0 and eta2 <= 1e300 and abs(log_h) <= 1e300


_FINITE = st.floats(allow_nan=False, allow_infinity=False)
_EDGES = st.sampled_from([0.0, -0.0, 1.0, 1e150, 1e153, 1e300, 1e306, 1e308, 5e-324, 2.0**-1022])


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(_FINITE, _EDGES).map(abs),
    st.one_of(_FINITE, _EDGES),
    st.one_of(_FINITE, _EDGES),
    st.one_of(_FINITE, _EDGES).map(abs),
    st.one_of(_FINITE, _EDGES),
    st.one_of(_FINITE, _EDGES).map(abs),
    st.integers(1, 10**7),
)
def test_the_compiled_overflow_test_is_the_literal_one(h0, prior, mean, precision, log_h, big, m):
    from bam_rl.kernels.readout import stays_finite

    got = stays_finite(h0, prior, mean, precision, log_h, big, m)
    assert got == _stays_finite_reference(h0, prior, mean, precision, log_h, big, m)


def test_the_one_call_readout_flags_objectives_that_could_overflow():
    """Huge records: the same picks as the layered closed form, flagged as not provably
    finite (the readout then computes its objectives at once); modest ones are flagged
    finite."""
    wide = NormalKnownVariance(0.0, 1.0, 1e-3)
    for scale, finite in ((1.0, True), (1e147, False)):
        memory = Memory()
        for y in (1.0, -1.0, 3.0, 0.5):
            memory.add(wide.stats(y * scale))
        s_t = wide.stats(2.0 * scale)
        found = greedy.one_point_picks(wide, memory, s_t, 0.0, memory.stats.fields)
        if found is None:  # the table of constants is built by the first readout
            cached_parabola_constants(len(memory), 1.0, 1.0 / 1000.0)
            found = greedy.one_point_picks(wide, memory, s_t, 0.0, memory.stats.fields)
        assert found is not None
        picks, weights, stays_finite = found
        expected_weights, expected_picks = _layered(wide, memory, s_t)
        assert picks.tolist() == expected_picks.tolist()
        assert weights.tobytes() == expected_weights.tobytes()
        assert stays_finite is finite


def _log_partition(eta1: float, eta2: float) -> float:
    return 0.5 * eta1 * eta1 / eta2 - 0.5 * math.log(eta2) + 0.5 * math.log(2 * math.pi)


_MAGNITUDES = st.floats(1e-300, 1e300) | st.sampled_from([1e150, 1e153, 1e306])


@settings(max_examples=300, deadline=None)
@given(
    h0=_MAGNITUDES,
    prior=_MAGNITUDES,
    precision=_MAGNITUDES,
    log_h=st.floats(-1e300, 1e300),
    means=st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=12),
    big=_MAGNITUDES,
    data=st.data(),
)
def test_what_the_overflow_test_passes_has_finite_objectives(
    h0, prior, precision, log_h, means, big, data
):
    """The claim itself: when ``stays_finite`` holds, the objective ``J`` of the prior plus any
    subset of records whose ``|precision_mean|`` is at most ``largest`` is computed without an
    overflow or a division by zero."""
    from bam_rl.kernels.readout import stays_finite

    records = [big * u for u in means]  # |precision_mean| <= big
    datum = data.draw(st.floats(-1.0, 1.0)) * big
    if not stays_finite(h0, prior, datum, precision, log_h, big, len(records)):
        return
    chosen = data.draw(st.lists(st.sampled_from(range(len(records))), unique=True))
    eta1 = prior + sum(records[i] for i in chosen)
    eta2 = h0 + len(chosen) * precision
    # Python floats: an overflow shows as inf (or nan after inf - inf), never silently finite
    objective = _log_partition(eta1 + datum, eta2 + precision) - _log_partition(eta1, eta2)
    assert math.isfinite(objective + log_h)
