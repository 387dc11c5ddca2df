"""Memory: stacked statistics, weighted sums and bounded capacity by merging."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_family_common import FAMILIES, SEEDS, random_model, random_stats

from bam_rl.families import BetaBinomial, NormalKnownVariance
from bam_rl.memory import Memory


def filled(size, seed=0, capacity=None):
    rng = np.random.default_rng(seed)
    model = BetaBinomial()
    memory = Memory(capacity=capacity)
    for t in range(size):
        memory.add(model.stats(successes=rng.integers(0, 16), trials=15), label=t % 3)
    return model, memory


def test_records_times_labels_and_growth():
    _, memory = filled(40)  # crosses the initial allocation of 16 twice
    assert len(memory) == 40
    np.testing.assert_array_equal(memory.times, np.arange(40))
    assert memory.labels == [t % 3 for t in range(40)]
    assert memory.stats.batch_shape == (40,)
    assert [s.fields["alpha"] for s in memory][:3] == list(memory.stats.fields["alpha"][:3])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 20), k=st.integers(1, 5))
def test_weighted_sums_for_many_readouts_at_once(seed, size, k):
    model, memory = filled(size, seed)
    weights = np.random.default_rng(seed).uniform(0, 1, size=(k, size))
    batched = memory.weighted_sum(weights, base=model.prior)
    assert batched.batch_shape == (k,)
    for row in range(k):
        loop = model.prior
        for w, s in zip(weights[row], memory, strict=True):
            loop = loop + w * s
        assert batched[row].allclose(loop)


def brute_force_closest(model, stats):
    """Closest pair of single-datum posteriors in symmetric KL, by a double loop."""
    best, pair = np.inf, None
    posteriors = [model.prior + stats[i] for i in range(len(stats))]
    for i in range(len(posteriors)):
        for j in range(i + 1, len(posteriors)):
            d = model.kl(posteriors[i], posteriors[j]) + model.kl(posteriors[j], posteriors[i])
            if d < best:
                best, pair = d, (i, j)
    return pair


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), capacity=st.integers(2, 6), extra=st.integers(1, 10))
def test_capacity_merges_the_closest_pair(seed, capacity, extra):
    rng = np.random.default_rng(seed)
    model = NormalKnownVariance(mean=0.0, var=10.0, noise_var=1.0)
    memory = Memory(capacity=capacity)
    total = model.zeros()
    for t in range(capacity + extra):
        s = model.stats(rng.normal(rng.choice([-3.0, 0.0, 3.0]), 1.0, size=rng.integers(1, 5)))
        total = total + s
        if len(memory) == capacity:  # predict the merge before it happens
            reference = Memory()
            for old in memory:
                reference.add(old)
            reference.add(s)
            i, j = brute_force_closest(model, reference.stats)
            expected = reference.stats[i] + reference.stats[j]
        memory.add(s, label="x")
        assert len(memory) <= capacity
        if t >= capacity:
            assert memory.stats[len(memory) - 1].allclose(expected)
    # merging never loses data: the records still add up to everything seen
    assert memory.stats.sum().allclose(total, rtol=1e-9, atol=1e-9)
    assert memory.counts.sum() == capacity + extra
    assert memory.n_merges == extra


def test_merged_labels_and_times():
    model = BetaBinomial()
    memory = Memory(capacity=2)
    memory.add(model.stats(successes=5, trials=10), label="a", time=3)
    memory.add(model.stats(successes=5, trials=10), label="b", time=7)
    memory.add(model.stats(successes=0, trials=10), label="c", time=9)
    assert len(memory) == 2
    assert memory.labels == ["c", None]
    np.testing.assert_array_equal(memory.times, [9, 7])
    np.testing.assert_array_equal(memory.counts, [1, 2])


def test_bad_input():
    model, memory = filled(3)
    with pytest.raises(ValueError, match="capacity"):
        Memory(capacity=1)
    with pytest.raises(ValueError, match="weights"):
        memory.weighted_sum([0.5, 1.5, 0.0])
    with pytest.raises(ValueError, match="weights"):
        memory.weighted_sum([-0.1, 0.5, 0.0])
    with pytest.raises(ValueError, match="weights"):
        memory.weighted_sum([1.0, 1.0])
    with pytest.raises(ValueError, match="statistics"):
        memory.add(NormalKnownVariance().stats([1.0]))
    with pytest.raises(ValueError, match="single datum"):
        memory.add(model.stats(successes=[1, 2], trials=3, axis=()))
    with pytest.raises(ValueError, match="empty"):
        _ = Memory().stats
    assert len(memory) == 3  # failed additions leave the memory as it was


# -------------------------------------------------- bounded memory: distances and old state
def _regression_model(name):
    from bam_rl.families import BayesianLinearRegression, BayesianLinearRegressionNIG

    if name == "regression":
        return BayesianLinearRegression(dim_in=3, dim_out=2, noise_var=0.5, prior_precision=0.7)
    return BayesianLinearRegressionNIG(dim_in=3, dim_out=2, prior_precision=0.7, a=2.0, b=1.5)


@pytest.mark.parametrize("name", [*FAMILIES, "regression", "regression-nig"])
@settings(max_examples=25, deadline=None)
@given(seed=SEEDS)
def test_distances_are_symmetric_kl_of_single_datum_posteriors(name, seed):
    """The cached-mean-parameter form ⟨Δη, Δ∇A⟩ equals KL(p‖q) + KL(q‖p) of the families."""
    rng = np.random.default_rng(seed)
    if name.startswith("regression"):
        model = _regression_model(name)
        data = [model.stats(*_xy(model, rng)) for _ in range(5)]
    else:
        model = random_model(name, rng)
        data = [random_stats(model, rng, n=int(rng.integers(1, 8))) for _ in range(5)]
    memory = Memory(capacity=10)
    for s in data:
        memory.add(s)
    posteriors = [model.prior + s for s in data]
    for i in range(5):
        for j in range(5):
            if i == j:
                continue
            expected = model.kl(posteriors[i], posteriors[j]) + model.kl(
                posteriors[j], posteriors[i]
            )
            assert memory._distances[i, j] == pytest.approx(expected, rel=1e-7, abs=1e-9)


def _xy(model, rng):
    n = int(rng.integers(1, 6))
    x = rng.normal(size=(n, model.dim_in))
    return x, x @ rng.normal(size=(model.dim_in, model.dim_out)) + rng.normal(
        size=(n, model.dim_out)
    )


def test_a_bounded_memory_saved_before_the_distance_cache_keeps_merging_the_same():
    """A memory whose state lacks the cached mean parameters (older files) rebuilds them."""
    rng = np.random.default_rng(5)
    model = NormalKnownVariance(mean=0.0, var=4.0, noise_var=1.0)
    data = [model.stats(rng.normal(rng.choice([-2.0, 2.0]), 1.0, size=3)) for _ in range(30)]
    fresh, old = Memory(capacity=6), Memory(capacity=6)
    for s in data[:10]:
        fresh.add(s)
        old.add(s)
    size = len(old)
    del old._grads  # the state of a memory written before the cache existed
    old._distances = old._distances[:size, :size].copy()
    for s in data[10:]:
        fresh.add(s)
        old.add(s)
    assert fresh.stats.allclose(old.stats, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(fresh.counts, old.counts)


def test_distances_use_the_memorys_prior_for_statistics_of_another_prior():
    """Families with one signature but other hyperparameters may share a memory: every
    distance is the symmetric KL under the first record's family (never negative)."""
    first, other = BetaBinomial(1.0, 1.0), BetaBinomial(1.0, 100.0)
    memory = Memory(capacity=3)
    data = [first.stats(successes=0, trials=1), other.stats(successes=1, trials=1)]
    for s in data:
        memory.add(s)
    p, q = first.prior + data[0], first.prior + data[1]
    expected = first.kl(p, q) + first.kl(q, p)
    assert memory._distances[0, 1] == pytest.approx(expected, rel=1e-9)
    memory.add(first.stats(successes=0, trials=1))
    memory.add(first.stats(successes=0, trials=1))  # merges the two identical records
    np.testing.assert_array_equal(memory.counts, [1, 1, 2])
