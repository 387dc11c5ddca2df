"""Every agent through every environment it supports, via the protocol only."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from agents_testutils import (
    BANDIT_AGENTS,
    STREAM,
    TRACKER_RULES,
    drive,
    make_agent,
    make_env,
)

from bam_rl.agents import Agent, BaseAgent

CASES = [(f"tracker_{rule}", STREAM) for rule in TRACKER_RULES] + [
    (name, spec) for name, (_, specs) in BANDIT_AGENTS.items() for spec in specs
]


def _case_id(case: tuple[str, tuple[str, dict]]) -> str:
    name, (env_id, kwargs) = case
    return f"{name}-{env_id.split('/')[-1]}-{kwargs.get('reward', '')}".rstrip("-")


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_agent_runs_through_environment(case):
    name, spec = case
    env = make_env(spec)
    agent = make_agent(name, env, seed=1)
    assert isinstance(agent, Agent) and isinstance(agent, BaseAgent)
    steps = 100 if name in ("ucbam_select", "ucbam_bernoulli") else 300
    actions = drive(env, agent, steps, seed=3)  # 120-step episodes: two env.reset calls
    assert len(actions) == steps
    summary = agent.summary()
    assert isinstance(summary, dict)
    assert all(isinstance(v, float) and math.isfinite(v) for v in summary.values())
    if name.startswith("tracker_"):
        assert all(a.dtype == np.float32 and a.shape == (1,) for a in actions)
        assert 0.0 <= agent.mean <= 1.0 and agent.variance >= 0.0
    else:
        assert all(type(a) is int for a in actions)
        assert len(set(actions)) > 1  # it explores
    env.close()


def test_agents_import_without_torch_or_sb3():
    """``import bam_rl.agents`` (SB3Agent included) works when torch and SB3 are missing."""
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "sys.modules['stable_baselines3'] = None\n"
        "import bam_rl.agents\n"
        "from bam_rl.agents import SB3Agent\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    SB3Agent(object())\n"
        "except ImportError as error:\n"
        "    assert 'bam-rl[sb3]' in str(error)\n"
        "else:\n"
        "    raise AssertionError('SB3Agent built without stable_baselines3')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
