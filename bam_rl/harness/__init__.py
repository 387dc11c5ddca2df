"""The run layer proper: named agents, the run loop, resumable sweeps, claims and plotting.

This subpackage is the only part of ``bam_rl`` that sees everything (the math core, ``agents``,
``envs``, pandas, joblib, Ray); the math core never imports it (see ``ARCHITECTURE.md``)::

    from bam_rl.harness import make_agent, make_grid, rollout, run_many

The paper's experiments, the CLI, the benchmarks and the drills are packages of their own
(``bam_rl.experiments``, ``bam_rl.cli``, ``bam_rl.bench``, ``bam_rl.drills``); their old paths
under ``bam_rl.harness`` still import, with a ``DeprecationWarning`` (:mod:`bam_rl.harness._moved`).
"""

from bam_rl.harness import _moved
from bam_rl.harness.registry import (
    AGENTS,
    ENV_IDS,
    check_agent_name,
    check_env_id,
    make_agent,
)
from bam_rl.harness.runner import INFO_FIELDS, rollout
from bam_rl.harness.sweeps import (
    BACKENDS,
    SORT_COLUMNS,
    RunSpec,
    execute_run,
    make_grid,
    read_run,
    run_many,
)

_moved.install()

__all__ = [
    "AGENTS",
    "BACKENDS",
    "ENV_IDS",
    "INFO_FIELDS",
    "SORT_COLUMNS",
    "RunSpec",
    "check_agent_name",
    "check_env_id",
    "execute_run",
    "make_agent",
    "make_grid",
    "read_run",
    "rollout",
    "run_many",
]
