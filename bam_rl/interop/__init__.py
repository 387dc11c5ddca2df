"""Bridges to other toolkits: NS-Gym (:mod:`bam_rl.interop.nsgym`).

This layer adapts agents and environments across toolkits. It imports gymnasium, numpy, the
standard library and, of ours, the agents' interface and :mod:`bam_rl.checks`; the other
toolkit itself (``ns_gym``) only inside the functions that need it, so ``import bam_rl`` never
does (``tests/test_architecture.py``). Nothing of the core, the agents, the environments or
the wrappers imports this layer.
"""

from __future__ import annotations

from .nsgym import NSGymAgent, NSGymBridge, as_nsgym_agent, from_nsgym

__all__ = ["NSGymAgent", "NSGymBridge", "as_nsgym_agent", "from_nsgym"]
