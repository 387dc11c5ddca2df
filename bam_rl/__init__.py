"""bam-rl: Bayes with Adaptive Memory for non-stationary reinforcement learning.

Importing this package registers the ``bam_rl/...`` Gymnasium environments.
"""

import envs as _envs  # noqa: F401  (registers the environments with string entry points)
from bam_rl.families import BetaBinomial, ConjugateFamily, NaturalParams

__version__ = "0.1.0"

__all__ = ["BetaBinomial", "ConjugateFamily", "NaturalParams", "__version__"]
