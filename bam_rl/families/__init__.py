"""Conjugate families: natural-parameter beliefs that add and scale."""

from bam_rl.families.base import ConjugateFamily, NaturalParams, concatenate, stack
from bam_rl.families.beta_binomial import BetaBinomial

__all__ = [
    "BetaBinomial",
    "ConjugateFamily",
    "NaturalParams",
    "concatenate",
    "stack",
]
