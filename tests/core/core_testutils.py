"""Shared helpers for the math-core tests (imported by the test modules of this directory)."""

from __future__ import annotations

from bam_rl import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    ExponentialForgetting,
    PowerPrior,
    RecursiveBayes,
)
from bam_rl.families import ConjugateFamily, NaturalParams


def alpha_beta_kl(model: ConjugateFamily, ap: float, bp: float, aq: float, bq: float) -> float:
    """``model.kl(p, q)`` between the beliefs with fields ``alpha = ap, beta = bp`` and
    ``alpha = aq, beta = bq`` (the Beta and Gamma families)."""
    p = NaturalParams(model, {"alpha": ap, "beta": bp})
    q = NaturalParams(model, {"alpha": aq, "beta": bq})
    return model.kl(p, q)


def boundary_rules(capacity: int) -> dict:
    """Every belief rule at default settings, by name, as ``model -> rule``; the bounded BAM
    rules hold at most ``capacity`` beliefs (the fuzz and refusal properties)."""
    return {
        "recursive": lambda m: RecursiveBayes(m),
        "forgetting": lambda m: ExponentialForgetting(m, alpha=0.8),
        "power": lambda m: PowerPrior(m, alpha=0.5),
        "bocd": lambda m: BOCD(m, hazard=0.1),
        "bam": lambda m: BAM(m),
        "bam-bounded": lambda m: BAM(m, capacity=capacity),
        "bam-parallel": lambda m: BAM(m, method="parallel", lam=0.1),
        "bam-bocd": lambda m: BAMWithChangepoints(m, hazard=0.1, capacity=capacity),
    }
