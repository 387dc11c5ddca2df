"""Belief rules: how an agent's belief about θ follows the data (paper §2–§4).

Every rule is a :class:`BeliefRule` with one ``update(s)`` per datum, built by name through
:func:`make_rule`: :mod:`~bam_rl.beliefs.rules` (recursive Bayes, exponential forgetting, the
power prior, BOCD), :mod:`~bam_rl.beliefs.bam` (BAM, BAM with changepoints, episodic BAM) and
:mod:`~bam_rl.beliefs.segments` (segment BAM, beyond the paper).
"""

from __future__ import annotations

from bam_rl import hyperparams
from bam_rl.beliefs.bam import BAM, BAMWithChangepoints, EpisodicBAM
from bam_rl.beliefs.rules import (
    BOCD,
    UNBOUNDED_MEMORY_WARNING,
    BeliefRule,
    ExponentialForgetting,
    PerformanceWarning,
    PowerPrior,
    RecursiveBayes,
    warn_if_unbounded_growth,
)
from bam_rl.beliefs.segments import SegmentBAM
from bam_rl.families.base import ConjugateFamily

__all__ = [
    "BAM",
    "BOCD",
    "RULES",
    "UNBOUNDED_MEMORY_WARNING",
    "BAMWithChangepoints",
    "BeliefRule",
    "EpisodicBAM",
    "ExponentialForgetting",
    "PerformanceWarning",
    "PowerPrior",
    "RecursiveBayes",
    "SegmentBAM",
    "make_rule",
    "warn_if_unbounded_growth",
]


#: Names accepted by :func:`make_rule`.
RULES = (
    "recursive",
    "forgetting",
    "bocd",
    "bam",
    "bam_bocd",
    "episodic_bam",
    "bam_segments",
    "power",
)


def make_rule(
    model: ConjugateFamily,
    rule: str = "recursive",
    *,
    forgetting: float = hyperparams.FORGETTING,
    hazard: float | None = hyperparams.BOCD_HAZARD,
    lam: float = 0.0,
    method: str = "greedy",
    power: float = 0.5,
    capacity: int | None = None,
) -> BeliefRule:
    """Builds a belief rule by name (the one place rules are built by name).

    Defaults are the paper's (:mod:`bam_rl.hyperparams`): forgetting 0.8 and the BOCD hazard
    1/100 that every BOCD detector and rule defaults to (:data:`~bam_rl.hyperparams.BOCD_HAZARD`);
    the bandit experiment's 0.016 is chosen in the registry.

    Args:
        model: The conjugate family of one arm.
        rule: ``"recursive"`` (:class:`RecursiveBayes`), ``"forgetting"``
            (:class:`ExponentialForgetting`, factor ``forgetting``), ``"bocd"``
            (:class:`BOCD`, constant ``hazard``), ``"bam"`` (:class:`BAM`, ``lam``,
            ``method``), ``"bam_bocd"`` (:class:`BAMWithChangepoints`), ``"episodic_bam"``
            (:class:`EpisodicBAM`: a readout at an announced change only), ``"bam_segments"``
            (:class:`SegmentBAM`, beyond the paper: readouts over segments at announced
            changes, and at changes BOCD detects unless ``hazard`` is ``None``) or
            ``"power"`` (:class:`PowerPrior`, exponent ``power``).
        forgetting: Exponential-forgetting factor (0.8 in the paper).
        hazard: BOCD hazard (default 1/100, as :class:`BOCD`'s); ``None`` only for
            ``"bam_segments"`` (no detection: changes are announced).
        lam: BAM's complexity penalty.
        method: BAM's readout selector.
        power: Power-prior exponent.
        capacity: Memory bound of the BAM rules (``None``: unbounded, as in the paper).

    Raises:
        ValueError: For an unknown rule name (and the rules' own argument checks).
    """
    if hazard is None and rule != "bam_segments":
        raise ValueError(f"hazard must be a number in (0, 1) for rule {rule!r}, got None")
    if rule == "recursive":
        return RecursiveBayes(model)
    if rule == "forgetting":
        return ExponentialForgetting(model, alpha=forgetting)
    if rule == "bocd":
        return BOCD(model, hazard=hazard)
    if rule == "bam":
        return BAM(model, lam=lam, method=method, capacity=capacity)
    if rule == "bam_bocd":
        return BAMWithChangepoints(model, lam=lam, method=method, hazard=hazard, capacity=capacity)
    if rule == "episodic_bam":
        return EpisodicBAM(model, lam=lam, method=method, capacity=capacity)
    if rule == "bam_segments":
        return SegmentBAM(model, lam=lam, method=method, hazard=hazard, capacity=capacity)
    if rule == "power":
        return PowerPrior(model, alpha=power)
    raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
