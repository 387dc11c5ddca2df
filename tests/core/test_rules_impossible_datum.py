"""Issue 39: the rules without a detector (recursive Bayes, exponential forgetting, the power
prior, BAM, episodic BAM and SegmentBAM without a hazard) refuse a datum they cannot absorb
at every step, the first included, with the detector's message and without changing: a datum
the base prior cannot absorb (a Beta-Binomial record making Beta(1, 1) Beta(−4, 2)), one whose
posterior would be no distribution, and, for the rules that keep records for a readout, one
whose record would overflow the readout (and make the saved rule refuse to load)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bam_rl.beliefs import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    EpisodicBAM,
    ExponentialForgetting,
    PowerPrior,
    RecursiveBayes,
    SegmentBAM,
)
from bam_rl.families import BetaBinomial, NaturalParams, NormalKnownVariance
from bam_rl.serialization import load_object, save_object

MODEL = BetaBinomial(1.0, 1.0)
IMPOSSIBLE = NaturalParams(MODEL, {"alpha": -5.0, "beta": 1.0})  # Beta(1, 1) + s = Beta(-4, 2)
#: possible for the base prior alone (Beta(0.2, 2)), not for a belief that absorbed it twice
SHRINKING = NaturalParams(MODEL, {"alpha": -0.8, "beta": 1.0})

MAKERS: dict[str, Any] = {
    "recursive": lambda model: RecursiveBayes(model),
    "forgetting": lambda model: ExponentialForgetting(model, 0.8),
    "forgetting-1": lambda model: ExponentialForgetting(model, 1.0),
    "power-prior": lambda model: PowerPrior(model, 0.5),
    "bam": lambda model: BAM(model),
    "bam-bounded": lambda model: BAM(model, capacity=4),
    "episodic-bam": lambda model: EpisodicBAM(model),
    "segments": lambda model: SegmentBAM(model),
}
ALL = {**MAKERS, "bam-bocd": lambda m: BAMWithChangepoints(m, hazard=0.1), "bocd": BOCD}


def _state(rule: Any) -> Any:
    """What a refused datum must leave unchanged."""
    fields = {k: np.array(v) for k, v in rule.belief.fields.items()}
    memory = getattr(rule, "memory", None)
    return (
        rule.t,
        fields,
        None if memory is None else len(memory),
        copy.deepcopy(getattr(rule, "_decayed", getattr(rule, "_past", None))),
        len(getattr(rule, "_open", [])),
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, NaturalParams):
        return _same(a.fields, b.fields)
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("before", [0, 3])
def test_an_impossible_datum_is_refused_at_any_step(name: str, before: int) -> None:
    rule = ALL[name](MODEL)
    if before:
        rule.reset()  # the segment rule's announced change included
    for k in range(before):
        rule.update(MODEL.stats(successes=float(k % 2), trials=1))
    state = _state(rule)
    with pytest.raises(ValueError, match=r"^s: an impossible datum: the base prior plus its"):
        rule.update(IMPOSSIBLE)
    assert _same(_state(rule), state)  # nothing absorbed
    rule.update(MODEL.stats(successes=1.0, trials=1))  # a valid datum still is
    assert float(rule.belief.fields["alpha"]) > 0 and float(rule.belief.fields["beta"]) > 0
    assert np.isfinite(rule.mean)


@pytest.mark.parametrize("name", ["recursive", "forgetting-1", "power-prior", "episodic-bam"])
def test_a_datum_whose_posterior_is_no_distribution_is_refused(name: str) -> None:
    """Each datum is possible for the base prior alone, but absorbed twice (recursively) it
    makes the belief Beta(−0.6, 3): the second is refused, the rule unchanged."""
    rule = MAKERS[name](MODEL)
    rule.update(SHRINKING)
    state = _state(rule)
    with pytest.raises(ValueError, match=r"^s: an impossible datum: the belief plus its"):
        rule.update(SHRINKING)
    assert _same(_state(rule), state)
    assert float(rule.belief.fields["alpha"]) > 0
    rule.sample(np.random.default_rng(0))  # its prior for the next datum is a distribution


GAUSSIAN = NormalKnownVariance(0.0, 1.0, 1.0)
HUGE = NaturalParams(GAUSSIAN, {"precision_mean": 1e200, "precision": 1.0})  # A(η) overflows


@pytest.mark.parametrize("name", ["bam", "bam-bounded", "episodic-bam", "segments"])
def test_a_record_that_would_overflow_the_readout_is_refused(name: str, tmp_path: Path) -> None:
    """A rule keeping records for its readout refuses a datum whose base prior plus its
    statistics has no finite log partition: stored, it made the next readout fail for
    every datum, and its saved file refuse to load."""
    rule = MAKERS[name](GAUSSIAN)
    rule.update(GAUSSIAN.stats(0.5))
    state = _state(rule)
    with pytest.raises(ValueError, match=r"^s: the base prior plus its statistics overflows"):
        rule.update(HUGE)
    assert _same(_state(rule), state)
    rule.update(GAUSSIAN.stats(0.7))
    save_object(rule, tmp_path / "rule.npz")
    load_object(tmp_path / "rule.npz", expected=type(rule))


def test_a_rule_without_records_keeps_absorbing_a_huge_but_proper_datum() -> None:
    """Recursive Bayes only needs a proper belief (its mean stays finite)."""
    rule = RecursiveBayes(GAUSSIAN)
    rule.update(HUGE)
    assert np.isfinite(rule.mean)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_valid_data_give_the_same_beliefs_as_the_formulas(name: str) -> None:
    """Recursive Bayes keeps the exact sum of the statistics (the checks change nothing)."""
    rule = MAKERS[name](MODEL)
    rng = np.random.default_rng(0)
    for _ in range(30):
        rule.update(MODEL.stats(successes=float(rng.integers(16)), trials=15))
    if name == "recursive":
        assert float(rule.belief.fields["alpha"]) + float(rule.belief.fields["beta"]) == 452.0
    assert np.isfinite(rule.mean)


@pytest.mark.parametrize(("name", "field"), [("forgetting", "_decayed"), ("power-prior", "_past")])
@pytest.mark.parametrize("value", [-10.0, np.nan, "drop"])
def test_a_restored_rules_past_statistics_give_a_proper_next_prior(
    tmp_path: Path, name: str, field: str, value: Any
) -> None:
    """A crafted file whose past statistics make the next prior Beta(−x, ·) (or drop them)
    loaded, then every Thompson draw from the rule raised."""
    from bam_rl.serialization import FORMAT, read_archive, write_archive

    rule = MAKERS[name](MODEL)
    for k in range(5):
        rule.update(MODEL.stats(successes=float(k % 2), trials=1))
    source = save_object(rule, tmp_path / "rule.npz")
    load_object(source, expected=type(rule)).sample(np.random.default_rng(0))
    document, arrays = read_archive(source, FORMAT, "bam-rl state")
    state = document["root"]["state"]
    if value == "drop":
        del state[field]
    else:
        arrays[state[field]["fields"]["__dict__"]["alpha"]["__array__"]] = np.asarray(value)
    crafted = write_archive(tmp_path / "crafted.npz", document, arrays)
    with pytest.raises(ValueError):
        load_object(crafted, expected=type(rule))
