"""Decision makers behind one ``reset``/``act``/``observe``/``save``/``load`` interface.

See ARCHITECTURE.md, "Where to add things" for the agent protocol.

``SB3Agent`` is importable without Stable-Baselines3 or torch installed: :mod:`agents.sb3`
imports them only when an :class:`SB3Agent` is built or loaded.
"""

from agents.bandits import UCB, ThompsonSampling
from agents.base import Agent, BaseAgent
from agents.mppi import GroundTruthMPPI, MPPIAgent
from agents.random_agent import RandomAgent
from agents.sb3 import SB3Agent
from agents.tracking import BeliefTracker
from agents.ucbam import UCBAM

__all__ = [
    "UCB",
    "UCBAM",
    "Agent",
    "BaseAgent",
    "BeliefTracker",
    "GroundTruthMPPI",
    "MPPIAgent",
    "RandomAgent",
    "SB3Agent",
    "ThompsonSampling",
]
