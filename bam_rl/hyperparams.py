"""The paper's hyperparameters: the one place every default of an experiment comes from.

Each constant names the section of Nassar et al. (ICLR 2022) that fixes it. Rules, agents and
experiments take these as defaults, so changing one here changes it everywhere.
"""

from __future__ import annotations

__all__ = [
    "BANDIT_HAZARD",
    "BANDIT_NOISE_STD",
    "BLR_NOISE_VAR",
    "BLR_PRIOR_PRECISION",
    "BOCD_HAZARD",
    "CARTPOLE_HAZARD",
    "FORGETTING",
    "MNIST_NOISE_VAR",
    "MNIST_PRIOR_PRECISION",
    "MPPI_HORIZON",
    "MPPI_SAMPLES",
    "MPPI_SAMPLING_VAR",
    "MPPI_TEMPERATURE",
    "RFF_BANDWIDTH",
    "RFF_FEATURES",
    "TRACKING_HAZARD",
]

#: Exponential-forgetting factor of the "BF" baselines (§4.1, App. D.3).
FORGETTING = 0.8
#: BOCD hazard of the tracking experiment: one change per 100 steps (§4.1).
TRACKING_HAZARD = 1 / 100
#: The default hazard of every BOCD detector and rule (``ChangepointDetector``, ``BOCD``,
#: ``BAMWithChangepoints``, ``make_rule``): the tracking experiment's. The bandit and cart-pole
#: experiments choose theirs in the registry (:data:`BANDIT_HAZARD`, :data:`CARTPOLE_HAZARD`).
BOCD_HAZARD = TRACKING_HAZARD
#: BOCD hazard of the bandit baselines: the arms' switch probability (App. D.3).
BANDIT_HAZARD = 0.016
#: Reward noise of the switching bandit (App. D.3).
BANDIT_NOISE_STD = 0.25
#: BOCD hazard over trials of the continual cart-pole (App. D.1).
CARTPOLE_HAZARD = 0.11

#: Random Fourier features of the MPPI dynamics model and their bandwidth (App. D.1).
RFF_FEATURES = 200
RFF_BANDWIDTH = 6.0
#: Bayesian linear regression of the dynamics model: noise variance and prior precision.
BLR_NOISE_VAR = 1e-6
BLR_PRIOR_PRECISION = 1e-4
#: MPPI planner (App. D.1, LyceumAI defaults): horizon, samples, sampling variance, temperature.
MPPI_HORIZON = 50
MPPI_SAMPLES = 32
MPPI_SAMPLING_VAR = 0.4
MPPI_TEMPERATURE = 0.5

#: Rotated MNIST (App. D.2): prior precision of each output's regression and noise variance.
MNIST_PRIOR_PRECISION = 0.1
MNIST_NOISE_VAR = 1e-4
