"""bam-rl: Bayes with Adaptive Memory for non-stationary reinforcement learning.

Importing this package registers the ``bam_rl/...`` Gymnasium environments.
"""

from importlib import metadata as _metadata

from bam_rl import envs as _envs  # noqa: F401  (registers the environments: string entry points)
from bam_rl.beliefs import (
    BAM,
    BOCD,
    BAMWithChangepoints,
    BeliefRule,
    ExponentialForgetting,
    PowerPrior,
    RecursiveBayes,
    SegmentBAM,
    make_rule,
)
from bam_rl.bocd import ChangepointDetector
from bam_rl.families import (
    BayesianLinearRegression,
    BayesianLinearRegressionNIG,
    BetaBinomial,
    ConjugateFamily,
    DirichletCategorical,
    GammaPoisson,
    NaturalParams,
    NormalGamma,
    NormalKnownVariance,
)
from bam_rl.memory import Memory
from bam_rl.readout import ReadoutResult, select

try:
    __version__ = _metadata.version("bam-rl")
except _metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
    __version__ = "0+unknown"

__all__ = [
    "BAM",
    "BOCD",
    "BAMWithChangepoints",
    "BayesianLinearRegression",
    "BayesianLinearRegressionNIG",
    "BeliefRule",
    "BetaBinomial",
    "ChangepointDetector",
    "ConjugateFamily",
    "DirichletCategorical",
    "ExponentialForgetting",
    "GammaPoisson",
    "Memory",
    "NaturalParams",
    "NormalGamma",
    "NormalKnownVariance",
    "PowerPrior",
    "ReadoutResult",
    "RecursiveBayes",
    "SegmentBAM",
    "__version__",
    "make_rule",
    "select",
]
