"""Conjugate families: natural-parameter beliefs that add and scale."""

from bam_rl.families.base import ConjugateFamily, NaturalParams, concatenate, stack
from bam_rl.families.beta_binomial import BetaBinomial
from bam_rl.families.dirichlet import DirichletCategorical
from bam_rl.families.linear_regression import BayesianLinearRegression
from bam_rl.families.linear_regression_nig import BayesianLinearRegressionNIG
from bam_rl.families.normal import NormalGamma, NormalKnownVariance
from bam_rl.families.poisson import GammaPoisson

__all__ = [
    "BayesianLinearRegression",
    "BayesianLinearRegressionNIG",
    "BetaBinomial",
    "ConjugateFamily",
    "DirichletCategorical",
    "GammaPoisson",
    "NaturalParams",
    "NormalGamma",
    "NormalKnownVariance",
    "concatenate",
    "stack",
]
