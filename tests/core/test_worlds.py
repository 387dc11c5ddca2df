"""Segment BAM that finds its changes and names its worlds (issue 52, beyond the paper):
the CUSUM detector over one-step predictive log-likelihoods and the world bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from bam_rl.beliefs.worlds import PredictiveCusum, WorldSegmentBAM, temper
from bam_rl.families import BayesianLinearRegression

NOISE = 0.01
MODEL = BayesianLinearRegression(dim_in=3, dim_out=2, prior_precision=1.0, noise_var=NOISE)
WEIGHTS = {
    "A": np.array([[1.0, -0.5, 0.2], [0.3, 0.8, -1.0]]),
    "B": np.array([[-1.0, 0.5, 0.7], [0.9, -0.8, 0.1]]),
}


def data(world, n, rng):
    x = rng.normal(size=(n, 3))
    y = x @ WEIGHTS[world].T + rng.normal(scale=NOISE**0.5, size=(n, 2))
    return x, y


def test_cusum_signals_a_change_and_where_it_began_not_on_the_same_world():
    rng = np.random.default_rng(0)
    trained = MODEL.prior + MODEL.stats(*data("A", 200, rng))
    other = MODEL.prior + MODEL.stats(*data("B", 200, rng))
    detector = PredictiveCusum(NOISE, threshold=50.0, clip=20.0)
    detector.set_candidates(trained, {1: other, -1: MODEL.prior})
    x, y = data("A", 300, rng)
    assert all(detector.step(xi, yi) is None for xi, yi in zip(x, y, strict=True))
    x, y = data("B", 10, rng)
    signals = [detector.step(xi, yi) for xi, yi in zip(x, y, strict=True)]
    first = next(i for i, s in enumerate(signals) if s is not None)
    assert first >= 2  # 50 nats at 20 a transition at most: three transitions at least
    label, after = signals[first]
    assert label == 1 and after == first + 1  # every transition since the change counted


def test_worlds_are_identified_merged_and_opened():
    rng = np.random.default_rng(1)
    rule = WorldSegmentBAM(MODEL)
    for _ in range(3):
        rule.update(MODEL.stats(*data("A", 40, rng)))
    assert rule.world == 0 and rule.n_worlds == 0  # world 0, not stored until it closes
    assert rule.change(MODEL.stats(*data("B", 10, rng))) == 1  # none explains B: a new world
    assert rule.n_worlds == 1
    rule.update(MODEL.stats(*data("B", 40, rng)))
    assert rule.change(MODEL.stats(*data("A", 10, rng))) == 0  # back in A: identified
    assert rule.n_worlds == 2 and len(rule.memory) == 2
    np.testing.assert_array_equal(rule.last_readout.weights, [1.0, 0.0])
    before = rule.memory.stats[0].fields["precision"].copy()
    rule.update(MODEL.stats(*data("A", 40, rng)))
    rule.change(MODEL.stats(*data("B", 10, rng)))
    # the A segment joined A's record: still two worlds, A's data grown
    assert rule.n_worlds == 2 and rule.world == 1
    assert np.trace(rule.memory.stats[0].fields["precision"]) > np.trace(before)


def test_a_segment_opened_as_a_new_world_joins_the_old_one_it_fits():
    rng = np.random.default_rng(2)
    rule = WorldSegmentBAM(MODEL)
    rule.update(MODEL.stats(*data("A", 100, rng)))
    rule.change(MODEL.stats(*data("B", 50, rng)))  # world 1 opens
    rule.update(MODEL.stats(*data("B", 50, rng)))
    rule.change(None)  # no evidence yet: a new world (2) until the next datum
    assert rule.world == 2 and rule.n_worlds == 2
    rule.update(MODEL.stats(*data("A", 50, rng)))  # the evidence: A's data
    assert rule.world == 0
    rule.change(MODEL.stats(*data("B", 5, rng)))
    assert rule.n_worlds == 2 and rule.n_merges == 0
    # a segment taken for a new world whose data are B's joins B when it closes
    rule.update(MODEL.stats(*data("B", 20, rng)))
    rule.world = rule.n_worlds  # as if B's data had opened a new world
    rule.change(MODEL.stats(*data("A", 5, rng)))
    assert rule.n_merges == 1 and rule.n_worlds == 2


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), "x"])
def test_bad_threshold_and_clip(value):
    with pytest.raises(ValueError, match="threshold"):
        WorldSegmentBAM(MODEL, threshold=value)
    with pytest.raises(ValueError, match="clip"):
        PredictiveCusum(NOISE, clip=value)


def test_refused_evidence_leaves_the_rule_as_it_was():
    """Review of issue 52: a change with evidence the family refuses closes nothing."""
    rng = np.random.default_rng(3)
    rule = WorldSegmentBAM(MODEL)
    rule.update(MODEL.stats(*data("A", 40, rng)))
    bad = MODEL.stats(*data("B", 5, rng))
    bad.fields["B"][0, 0] = np.nan  # past the constructor's check, as a corrupted input
    state = (rule.n_worlds, rule.n_changes, rule.world, rule._open is not None)
    with pytest.raises(ValueError, match="evidence"):
        rule.change(bad)
    assert (rule.n_worlds, rule.n_changes, rule.world, rule._open is not None) == state
    with pytest.raises(ValueError, match="evidence"):
        rule.change(MODEL.stats(*data("B", 5, rng)).__class__)  # not a datum at all
    with pytest.raises(ValueError, match="world"):
        rule.world_belief(-1)


def test_the_detector_refuses_a_bad_noise_and_a_bad_restored_state():
    with pytest.raises(ValueError, match="noise_var"):
        PredictiveCusum(-1.0)
    with pytest.raises(ValueError, match="noise_var"):
        PredictiveCusum(float("nan"))
    rng = np.random.default_rng(4)
    detector = PredictiveCusum(NOISE)
    trained = MODEL.prior + MODEL.stats(*data("A", 50, rng))
    detector.set_candidates(trained, {-1: MODEL.prior})
    for xi, yi in zip(*data("A", 5, rng), strict=True):
        detector.step(xi, yi)
    detector._check_restored()  # a consistent state passes
    for field, value, match in [
        ("threshold", float("nan"), "threshold"),
        ("n", -4, "n"),
        ("sums", {5: 1.0}, "one entry per alternative"),
        ("sums", {-1: -3.0}, "sums"),
        ("_zeros", {-1: 99}, "zeros"),
    ]:
        broken = PredictiveCusum(NOISE)
        vars(broken).update({k: v for k, v in vars(detector).items()})
        setattr(broken, field, value)
        with pytest.raises(ValueError, match=match):
            broken._check_restored()


def test_temper_is_the_posterior_under_the_larger_noise():
    """Issue 52, second round: ``temper(η, η0, c)`` is the posterior of the same data under the
    noise variance ``c·σ²``, checked against a family built with that noise."""
    rng = np.random.default_rng(5)
    x, y = data("A", 30, rng)
    wider = BayesianLinearRegression(dim_in=3, dim_out=2, prior_precision=1.0, noise_var=4 * NOISE)
    tempered = temper(MODEL.prior + MODEL.stats(x, y), MODEL.prior, 4.0)
    expected = wider.prior + wider.stats(x, y)
    for name in ("precision", "B"):
        np.testing.assert_allclose(tempered.fields[name], expected.fields[name], rtol=1e-12)
    belief = MODEL.prior + MODEL.stats(x, y)
    assert temper(belief, MODEL.prior, 1.0) is belief


def test_identification_scores_under_the_scaled_noise():
    """``noise_scale`` makes the readout's J that of a family with noise ``c·σ²``: the same
    differences between the worlds and the base prior (log h, common to all, aside)."""
    rng = np.random.default_rng(6)
    wider = BayesianLinearRegression(dim_in=3, dim_out=2, prior_precision=1.0, noise_var=9 * NOISE)
    rule = WorldSegmentBAM(MODEL)
    a = data("A", 40, rng)
    rule.update(MODEL.stats(*a))
    rule.change(MODEL.stats(*data("B", 10, rng)))
    rule.noise_scale = 9.0
    evidence = data("B", 8, rng)
    scores = [rule._score(k, MODEL.stats(*evidence)) for k in range(2)]
    expected = [
        float(wider.log_marginal(wider.prior + wider.stats(*a), wider.stats(*evidence))),
        float(wider.log_marginal(wider.prior, wider.stats(*evidence))),
    ]
    np.testing.assert_allclose(scores[0] - scores[1], expected[0] - expected[1], rtol=1e-9)


def test_the_calibrated_detector_estimates_the_noise_and_refreshes():
    """With ``calibrate``, the noise scale is the mean squared standardised residual (data
    with 25 times the model's noise: near 25; 1 without ``calibrate``), and :meth:`refresh`
    replaces the current belief without resetting the CUSUMs."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, 3))
    y = x @ WEIGHTS["A"].T + rng.normal(scale=5 * NOISE**0.5, size=(400, 2))
    trained = MODEL.prior + MODEL.stats(x[:200], y[:200])
    plain, detector = PredictiveCusum(NOISE), PredictiveCusum(NOISE, calibrate=True)
    for each in (plain, detector):
        each.set_candidates(trained, {-1: MODEL.prior})
        assert each.noise_scale() == 1.0  # no residuals yet
        for xi, yi in zip(x[200:], y[200:], strict=True):
            each.step(xi, yi)
    assert plain.noise_scale() == 1.0
    assert 20.0 < detector.noise_scale() < 31.0
    detector.sums[-1] = 3.0
    fed = trained + MODEL.stats(x[200:210], y[200:210])
    detector.refresh(fed)
    assert detector.sums[-1] == 3.0
    factor = detector._current.factor
    np.testing.assert_allclose(factor @ factor.T, fed.fields["precision"], rtol=1e-12)
    with pytest.raises(ValueError, match="calibrate"):
        PredictiveCusum(NOISE, calibrate="yes")
    detector._squares = [1.0, -2.0]
    with pytest.raises(ValueError, match="_squares"):
        detector._check_restored()


def test_one_outlier_does_not_set_the_noise_level():
    """Issue 52, third round: the noise level is a clipped mean of the kept ``z²`` (each at
    most their 99.9th percentile, the kept value at or below it): one transition predicted
    10³ times worse than the noise moves it by under 2 % (by the largest clean ``z²`` over
    ``n`` at most), where the plain mean more than doubles."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(700, 3))
    y = x @ WEIGHTS["A"].T + rng.normal(scale=3 * NOISE**0.5, size=(700, 2))
    detector = PredictiveCusum(NOISE, calibrate=True)
    detector.set_candidates(MODEL.prior + MODEL.stats(x[:200], y[:200]), {-1: MODEL.prior})
    for xi, yi in zip(x[200:], y[200:], strict=True):
        detector.step(xi, yi)
    clean = detector.noise_scale()
    assert 7.0 < clean < 11.0  # nine times the model's noise, slightly clipped
    detector.step(x[0], y[0] + 1e3 * 3 * NOISE**0.5)
    assert abs(detector.noise_scale() - clean) < 0.02 * clean
    assert float(np.mean(detector._squares)) > 2.0 * clean


def test_covered_scores_compare_the_worlds_only_where_each_has_data():
    """Issue 52, third round: the stored worlds are told apart on the transitions every one of
    them covers (parameter variance at most COVERED times the noise): a transition in a
    direction one world never saw adds nothing, and with fewer than MIN_COVERED covered
    transitions (or one world) there is no covered score."""
    from bam_rl.beliefs import worlds

    rng = np.random.default_rng(9)
    rule = WorldSegmentBAM(MODEL)
    assert rule.covered_scores(*data("A", 10, rng)) is None  # no two worlds yet
    rule.update(MODEL.stats(*data("A", 200, rng)))
    x, y = data("B", 200, rng)
    x[:, 2] = 0.0  # world B never moves along the third input
    rule.change(MODEL.stats(x[:5], y[:5]))
    rule.update(MODEL.stats(x[5:], y[5:]))
    rule.change(MODEL.stats(*data("A", 5, rng)))
    assert rule.n_worlds == 2
    inside, targets = data("B", 20, rng)
    inside[:, 2] = 0.0
    targets = inside @ WEIGHTS["B"].T
    outside, far = data("B", 20, rng)
    outside[:, 2] = 5.0  # along the direction B has not seen
    both = rule.covered_scores(np.vstack([inside, outside]), np.vstack([targets, far]))
    np.testing.assert_allclose(both, rule.covered_scores(inside, targets), rtol=1e-12)
    assert both[1] > both[0]  # B's transitions, where both cover them: B's
    assert rule.covered_scores(inside[: worlds.MIN_COVERED - 1], targets[:4]) is None
    with pytest.raises(ValueError, match="transitions"):
        rule.covered_scores(inside[:, :2], targets)
