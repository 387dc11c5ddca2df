"""Decision makers behind one ``reset``/``act``/``observe``/``save``/``load`` interface.

See ARCHITECTURE.md, "Where to add things" for the agent protocol.

``SB3Agent`` is importable without Stable-Baselines3 or torch installed: :mod:`bam_rl.agents.sb3`
imports them only when an :class:`SB3Agent` is built or loaded.
"""

from .bandits import UCB, ThompsonSampling
from .base import Agent, BanditAgent, BaseAgent
from .mppi import GroundTruthMPPI, MPPIAgent
from .random_agent import RandomAgent
from .rewards import REWARDS, register_reward
from .sb3 import SB3Agent
from .tracking import BeliefTracker
from .ucbam import UCBAM

__all__ = [
    "REWARDS",
    "UCB",
    "UCBAM",
    "Agent",
    "BanditAgent",
    "BaseAgent",
    "BeliefTracker",
    "GroundTruthMPPI",
    "MPPIAgent",
    "RandomAgent",
    "SB3Agent",
    "ThompsonSampling",
    "register_reward",
]
