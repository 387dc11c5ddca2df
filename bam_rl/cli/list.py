"""``bam-rl list``: the environment ids and the agent names (with each builder's summary)."""

from __future__ import annotations

import argparse
from typing import Any

from bam_rl.cli.common import command, docstring_summary


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.envs import NONSTATIONARY_ID, RECURRING_IDS
    from bam_rl.harness import AGENTS, ENV_IDS

    print("environments:")
    for env_id in ENV_IDS:
        print(f"  {env_id}")
    print()
    print("recurring worlds (docs/recurring.md; <Name>Continual: changes not announced):")
    for env_id in RECURRING_IDS:
        print(f"  {env_id}")
    print()
    print("any Gymnasium environment made non-stationary:")
    print(
        f"  {NONSTATIONARY_ID}  needs --env-kwargs with env and changes, e.g. "
        """'{"env": "Pendulum-v1", "changes": {"g": {"cycle": {"values": [10, 3.72], """
        """"every": 3}}}}' (docs/nonstationary.md)"""
    )
    print()
    print("agents:")
    width = max(len(name) for name in AGENTS)
    for name, builder in AGENTS.items():
        print(f"  {name:<{width}}  {docstring_summary(builder)}")
    return 0


def add(commands: Any) -> None:
    """The ``list`` command's parser: its arguments and handler."""
    command(commands, "list", handle, "environment ids and agent names")
