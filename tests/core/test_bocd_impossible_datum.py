"""Issue 39: BOCD (the detector, the BOCD rule, BAM with changepoints and SegmentBAM with a
hazard) refuses an impossible datum at the first step as at later ones, and stays usable."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bam_rl.beliefs import BOCD, BAMWithChangepoints, SegmentBAM
from bam_rl.bocd import ChangepointDetector
from bam_rl.families import BetaBinomial, NaturalParams, NormalKnownVariance

MODEL = BetaBinomial(1.0, 1.0)
IMPOSSIBLE = NaturalParams(MODEL, {"alpha": -5.0, "beta": 1.0})  # Beta(1, 1) + s = Beta(-4, 2)

MAKERS: dict[str, Any] = {
    "detector": lambda: ChangepointDetector(MODEL, 0.1),
    "bocd": lambda: BOCD(MODEL, 0.1),
    "bam-bocd": lambda: BAMWithChangepoints(MODEL, hazard=0.1),
    "segments": lambda: SegmentBAM(MODEL, hazard=0.1),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("before", [0, 3])
def test_an_impossible_datum_is_refused_at_any_step(name: str, before: int) -> None:
    rule = MAKERS[name]()
    for k in range(before):
        rule.update(MODEL.stats(successes=float(k % 2), trials=1))
    with pytest.raises(ValueError, match="impossible datum"):
        rule.update(IMPOSSIBLE)
    assert rule.t == before  # nothing absorbed
    rule.update(MODEL.stats(successes=1.0, trials=1))  # a valid datum still is
    belief = rule.map_belief if isinstance(rule, ChangepointDetector) else rule.belief
    assert float(belief.fields["alpha"]) > 0 and float(belief.fields["beta"]) > 0


def test_a_batch_stops_at_its_impossible_datum() -> None:
    """``run`` (the compiled batch) absorbs the data before the impossible one, as the
    per-step path does, then refuses it."""
    detector = ChangepointDetector(MODEL, 0.1)
    stats = NaturalParams(MODEL, {"alpha": np.array([1.0, 0.0, -5.0]), "beta": np.ones(3)})
    with pytest.raises(ValueError, match="impossible datum"):
        detector.run(stats)
    assert detector.t == 2


def test_a_gaussian_impossible_datum_is_refused() -> None:
    model = NormalKnownVariance(0.0, 1.0, 1.0)
    detector = ChangepointDetector(model, 0.1)
    with pytest.raises(ValueError, match="impossible datum"):
        detector.update(NaturalParams(model, {"precision_mean": 0.0, "precision": -3.0}))
    assert detector.t == 0
