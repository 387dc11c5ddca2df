"""SegmentBAM (beyond the paper): tied readouts against untied readouts over merged records,
against exhaustive enumeration with scipy's Beta-Binomial, BOCD-detected segments, bounded
capacity, save/load without pickle and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import bam_rl
from bam_rl.beliefs import SegmentBAM
from bam_rl.families import BayesianLinearRegression, BetaBinomial
from bam_rl.memory import Memory
from bam_rl.readout import objective, select
from bam_rl.serialization import load_object, save_object

TRIALS = 15


def run_episodes(rule, model, probabilities, per_episode, rng):
    """Feeds episodes of Binomial counts, announcing each change with ``reset``; returns the
    per-datum statistics and each datum's segment index."""
    data, segment_of = [], []
    for episode, p in enumerate(probabilities):
        if episode:
            rule.reset()
        for _ in range(per_episode):
            s = model.stats(successes=int(rng.binomial(TRIALS, p)), trials=TRIALS)
            rule.update(s)
            data.append(s)
            segment_of.append(episode)
    return data, np.asarray(segment_of)


@settings(max_examples=25, deadline=None)
@given(
    probabilities=st.lists(st.sampled_from([0.1, 0.5, 0.9]), min_size=2, max_size=6),
    per_episode=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_tied_readout_is_the_untied_readout_over_merged_records(probabilities, per_episode, seed):
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model)
    data, segment_of = run_episodes(
        rule, model, probabilities, per_episode, np.random.default_rng(seed)
    )
    readout = rule.last_readout
    assert readout is not None
    last_start = int(np.flatnonzero(segment_of == segment_of[-1])[0])
    first = data[last_start]  # the readout is chosen against the last episode's first datum
    merged = Memory()
    for k in range(segment_of[-1]):
        total = data[int(np.flatnonzero(segment_of == k)[0])]
        for j in np.flatnonzero(segment_of == k)[1:]:
            total = total + data[int(j)]
        merged.add(total)
    untied = select(model, merged, first)
    np.testing.assert_array_equal(readout.weights, untied.weights)
    # the same J as the per-datum readout whose weights are tied within each segment
    per_datum = Memory()
    for s in data[:last_start]:
        per_datum.add(s)
    tied = readout.weights[segment_of[:last_start]]
    assert objective(model, per_datum, first, tied) == pytest.approx(readout.objective, rel=1e-12)
    # and the belief is η0 + Σ_k w_k S_k + the last segment's data
    expected = per_datum.weighted_sum(tied, base=model.prior)
    for s in data[last_start:]:
        expected = expected + s
    assert rule.belief.allclose(expected)


def betabinom_log_pmf(k, weights, segments, prior=(1.0, 1.0)):
    a = prior[0] + sum(w * sa for w, (sa, _) in zip(weights, segments, strict=True))
    b = prior[1] + sum(w * sb for w, (_, sb) in zip(weights, segments, strict=True))
    return float(stats.betabinom.logpmf(k, TRIALS, a, b))


@pytest.mark.parametrize("seed", range(6))
def test_exhaustive_segment_readout_matches_enumeration_with_scipy(seed):
    rng = np.random.default_rng(seed)
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model, method="exhaustive", capacity=8)
    greedy = SegmentBAM(model)
    probabilities = rng.choice([0.1, 0.4, 0.9], size=6)
    segments = []
    for episode, p in enumerate(probabilities):
        if episode:
            rule.reset()
            greedy.reset()
        counts = rng.binomial(TRIALS, p, size=3)
        for k in counts:
            s = model.stats(successes=int(k), trials=TRIALS)
            rule.update(s)
            greedy.update(s)
        if episode < len(probabilities) - 1:
            segments.append((float(counts.sum()), float(3 * TRIALS - counts.sum())))
        else:
            first = int(counts[0])
    scores = {
        bits: betabinom_log_pmf(first, bits, segments)
        for bits in itertools.product((0, 1), repeat=len(segments))
    }
    best = max(scores.values())
    assert rule.last_readout.objective == pytest.approx(best, rel=1e-10)
    assert scores[tuple(int(w) for w in rule.last_readout.weights)] == pytest.approx(best)
    # the greedy search is never better than the exhaustive one
    assert greedy.last_readout.objective <= best + 1e-9


def test_announced_revisit_picks_the_revisited_segment():
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model)
    rng = np.random.default_rng(0)
    run_episodes(rule, model, [0.1, 0.9, 0.5, 0.1], 20, rng)
    np.testing.assert_array_equal(rule.last_readout.weights, [1.0, 0.0, 0.0])
    assert rule.segment_sizes == [20, 20, 20]
    assert rule.n_open == 20
    assert rule.mean == pytest.approx(0.1, abs=0.03)


def test_bocd_detected_change_splits_the_open_segment():
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model, hazard=0.01)
    rng = np.random.default_rng(1)
    for p in (0.1, 0.9, 0.1):  # no announcements
        for _ in range(40):
            rule.update(model.stats(successes=int(rng.binomial(TRIALS, p)), trials=TRIALS))
    # the changes at data 40 and 80 are found (within a datum or two) and split there
    assert len(rule.changepoints) == 2
    assert abs(rule.changepoints[0] - 40) <= 2 and abs(rule.changepoints[1] - 80) <= 2
    assert sum(rule.segment_sizes) + rule.n_open == 120
    # the last readout picks the first segment (same p) and not the second
    np.testing.assert_array_equal(rule.last_readout.weights, [1.0, 0.0])


def test_bounded_capacity_keeps_at_most_capacity_segments():
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model, capacity=4)
    run_episodes(rule, model, [0.1, 0.9, 0.5] * 4, 3, np.random.default_rng(2))
    assert len(rule.memory) == 4
    assert len(rule.segment_sizes) == 11
    assert rule.memory.n_merges == 7


def test_preview_changes_nothing_and_equals_the_next_update():
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model)
    run_episodes(rule, model, [0.1, 0.9], 5, np.random.default_rng(3))
    rule.reset()
    s = model.stats(successes=1, trials=TRIALS)
    before = (len(rule.memory), rule.n_open, rule.n_selections)
    readout, belief = rule.preview(s)
    assert (len(rule.memory), rule.n_open, rule.n_selections) == before
    assert rule.belief.allclose(model.prior)
    assert rule.update(s).allclose(belief)
    np.testing.assert_array_equal(rule.last_readout.weights, readout.weights)


def test_blr_segments_equal_merged_records():
    """Every family: the tied readout for Bayesian linear regression data."""
    rng = np.random.default_rng(4)
    model = BayesianLinearRegression(dim_in=3, dim_out=1, noise_var=0.1, prior_precision=1.0)
    rule = SegmentBAM(model)
    merged, segment = Memory(), None
    slopes = [np.array([1.0, 0.0, -1.0]), np.array([-2.0, 1.0, 0.5]), np.array([1.0, 0.0, -1.0])]
    for episode, w in enumerate(slopes):
        if episode:
            rule.reset()
            merged.add(segment)
        segment = None
        for _ in range(4):
            x = rng.normal(size=(5, 3))
            s = model.stats(x, x @ w + 0.1 * rng.normal(size=5))
            rule.update(s)
            segment = s if segment is None else segment + s
    assert rule.last_readout.weights.tolist() == [1.0, 0.0]
    assert len(rule.memory) == len(merged) == 2
    assert rule.memory.stats.allclose(merged.stats)


def test_save_load_continues_identically(tmp_path):
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model, hazard=0.02, capacity=6)
    rng = np.random.default_rng(5)
    run_episodes(rule, model, [0.1, 0.9, 0.1], 10, rng)
    path = save_object(rule, tmp_path / "rule.npz")
    loaded = load_object(path, expected=SegmentBAM)
    stream = rng.binomial(TRIALS, 0.9, size=20)
    for k in stream:
        s = model.stats(successes=int(k), trials=TRIALS)
        assert rule.update(s).allclose(loaded.update(s), rtol=0, atol=0)
    assert rule.changepoints == loaded.changepoints
    assert rule.segment_sizes == loaded.segment_sizes


def test_exported():
    assert bam_rl.SegmentBAM is SegmentBAM


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hazard": 1.5}, "hazard"),
        ({"lam": -1.0}, "lam"),
        ({"method": "best"}, "method"),
        ({"capacity": 1}, "capacity"),
        ({"method": "exhaustive"}, "capacity"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SegmentBAM(BetaBinomial(), **kwargs)


def test_refused_datum_leaves_the_rule_unchanged():
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model)
    run_episodes(rule, model, [0.1, 0.9], 3, np.random.default_rng(6))
    rule.reset()
    before = (len(rule.memory), rule.n_open, rule.belief)
    with pytest.raises(ValueError):
        rule.update(BayesianLinearRegression(dim_in=2, dim_out=1).zeros())
    assert (len(rule.memory), rule.n_open) == before[:2] and rule.belief is before[2]


def test_update_with_evidence_scores_the_readout_on_the_evidence_only():
    model = BetaBinomial(1.0, 1.0)
    rule = SegmentBAM(model)
    run_episodes(rule, model, [0.1, 0.9], 4, np.random.default_rng(7))
    rule.reset()
    s, evidence = model.stats(successes=14, trials=TRIALS), model.stats(successes=1, trials=5)
    belief = rule.update_with_evidence(s, evidence)
    assert len(rule.memory) == 2  # the update closed the open segment, then read out
    expected = select(model, _closed_memory(rule), evidence)
    assert not np.array_equal(expected.weights, select(model, _closed_memory(rule), s).weights)
    np.testing.assert_array_equal(rule.last_readout.weights, expected.weights)
    assert belief.allclose(_closed_memory(rule).weighted_sum(expected.weights, model.prior) + s)
    # later data of the segment update recursively, whatever evidence is passed
    assert rule.update_with_evidence(s, evidence).allclose(belief + s)


def _closed_memory(rule):
    memory = Memory()
    for s in rule.memory:
        memory.add(s)
    return memory
