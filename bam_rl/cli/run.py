"""``bam-rl run``: an (agent × environment × seed) sweep on top of ``run_many``, and its
summary table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from bam_rl.cli.common import (
    MAX_EPISODES,
    MAX_SEEDS,
    MAX_STEPS,
    command,
    episodes_option,
    jobs_option,
    json_object,
    output_directory,
    seed_option,
    seeds_option,
    shard_option,
    split_names,
    steps_option,
)

#: ``bam-rl run``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "a (agent × environment × seed) sweep on top of run_many"
DESCRIPTION = (
    "Runs every agent on every environment for --seeds seeds (common random "
    "numbers across agents), one result file per run in --out (a rerun "
    "resumes), and prints the mean total reward (and regret) per method."
)


def _per_agent_kwargs(
    parser: argparse.ArgumentParser, agents: list[str], given: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """``--agent-kwargs`` per listed agent: keyed by agent name (``{"glr-klucb": {...}}``;
    keys among the listed agents, values JSON objects), or flat (``{"lam": 0.1}``) when one
    agent is listed. A usage error (exit 2) otherwise."""
    from bam_rl.harness import AGENTS

    given = given or {}
    kwargs: dict[str, dict[str, Any]] = {name: {} for name in agents}
    if any(key in AGENTS for key in given):  # keyed by agent
        for key, value in given.items():
            if key not in agents:
                parser.error(
                    f"--agent-kwargs keyed by agent: key {key!r} is not among the listed agents "
                    f"({', '.join(agents)})"
                )
            if not isinstance(value, dict):
                parser.error(
                    f"--agent-kwargs keyed by agent: the value of {key!r} must be a JSON object "
                    f"of keyword arguments, got {json.dumps(value)}"
                )
            kwargs[key] = value
    elif given:
        if len(agents) > 1:
            example = json.dumps({agents[0]: given})
            parser.error(
                f"--agent-kwargs {json.dumps(given)} would go to all {len(agents)} agents "
                f"({', '.join(agents)}); key it by agent name, e.g. --agent-kwargs '{example}'"
            )
        kwargs[agents[0]] = given
    for name, options in kwargs.items():
        if "seed" in options:
            parser.error(
                f"--agent-kwargs must not set 'seed' (of {name!r}): runs are seeded by --seeds "
                "and --root-seed"
            )
    return kwargs


def _import_user_modules(parser: argparse.ArgumentParser, modules: list[str]) -> None:
    """Imports ``--import``'s modules (dotted names) in order, finding them in the current
    directory too, as ``python -m`` does: a usage error (exit 2) for one that is not found,
    exit 1 naming the error and where it was raised for one that fails as it runs."""
    import importlib

    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # run_many hands this process's sys.path to its workers
    for module in modules:
        if not all(part.isidentifier() for part in module.split(".")):
            parser.error(
                f"--import {module}: not a module name (give a dotted name, e.g. my_rewards "
                "for ./my_rewards.py or my_package.rewards)"
            )
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name is not None and (module + ".").startswith(error.name + "."):
                parser.error(
                    f"--import {module}: no module named {error.name!r} in the current "
                    "directory or the installed packages (give a dotted module name, e.g. "
                    "my_rewards for ./my_rewards.py)"
                )
            _user_module_failed(parser, module, error)
        except Exception as error:  # the user's module failed while it ran
            _user_module_failed(parser, module, error)


def _user_module_failed(parser: argparse.ArgumentParser, module: str, error: BaseException) -> None:
    """Exit 1: importing ``module`` raised ``error`` (named with the line that raised it)."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    parser.exit(
        1, f"{parser.prog}: error: --import {module}: {type(error).__name__}{where}: {error}\n"
    )


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import gymnasium as gym

    from bam_rl.harness import check_agent_name, check_env_id, make_agent, make_grid, run_many
    from bam_rl.harness.registry import resolved_settings
    from bam_rl.harness.sweeps import shard

    agents = split_names(args.agent)
    env_ids = split_names(args.env)
    if not agents:
        parser.error("give at least one agent with --agent")
    if not env_ids:
        parser.error("give at least one environment with --env")
    imports = split_names(args.imports)
    # before the names are checked: a module may register environments as well as rewards
    _import_user_modules(parser, imports)
    try:
        for name in agents:
            check_agent_name(name)
        for env_id in env_ids:
            check_env_id(env_id)
    except ValueError as error:
        parser.error(str(error))

    output_directory(parser, args.out)
    env_kwargs = args.env_kwargs or {}
    agent_kwargs = _per_agent_kwargs(parser, agents, args.agent_kwargs)
    configs = {env_id: (env_id, env_kwargs) for env_id in env_ids}
    try:
        # fail fast, before any worker starts, when an agent does not fit an environment
        for env_id in env_ids:
            env = gym.make(env_id, **env_kwargs)
            try:
                for name in agents:
                    make_agent(name, env, 0, n_steps=args.steps, **agent_kwargs[name])
                    if args.dry_run:
                        print(
                            settings_text(
                                env_id,
                                resolved_settings(
                                    name, env, n_steps=args.steps, **agent_kwargs[name]
                                ),
                            )
                        )
            finally:
                env.close()
        if args.dry_run:
            return 0
        grid = make_grid(
            agents,
            configs,
            seeds=args.seeds,
            n_steps=args.steps,
            n_episodes=args.episodes,
            root_seed=args.root_seed,
            agent_kwargs=agent_kwargs,
        )
        if args.shard is not None:
            size = len(grid)
            grid = shard(grid, *args.shard)
            if not grid:
                print(
                    f"shard {args.shard[0]}/{args.shard[1]} of a grid of {size} run(s) holds "
                    "no runs: nothing to do"
                )
                return 0
        frame = run_many(
            grid,
            backend=args.backend,
            n_jobs=args.jobs,
            out_dir=args.out,
            progress=not args.no_progress,
            fmt=args.format,
            imports=imports,
        )
    except gym.error.DependencyNotInstalled as error:  # e.g. Box2D, or pygame for "human"
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    except (ValueError, TypeError, OverflowError, gym.error.Error) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    except OSError as error:  # a full disk, a lost mount, a folder where a claim belongs
        parser.exit(1, f"{parser.prog}: error: {error}\n")

    print(summary_table(frame).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if args.out is not None:
        stats = frame.attrs.get("sweep", {})
        print(
            f"\n{len(grid)} run files in {Path(args.out).resolve()}"
            + (f" (shard {args.shard[0]}/{args.shard[1]})" if args.shard else "")
            + f": {len(stats.get('computed', []))} computed here, {stats.get('loaded', 0)} "
            f"loaded, {stats.get('by_others', 0)} computed by other processes"
            + (f", {len(stats['taken_over'])} taken over" if stats.get("taken_over") else "")
        )
    return 0


def add(commands: Any) -> None:
    """The ``run`` command's parser: its arguments and handler."""
    run = command(commands, "run", handle, HELP, DESCRIPTION)
    run.add_argument(
        "--env",
        action="append",
        metavar="ID",
        help="environment id (repeat or comma-separate for several)",
    )
    run.add_argument(
        "--agent",
        action="append",
        metavar="NAME",
        help="agent name (repeat or comma-separate; see `bam-rl list`)",
    )
    budget = run.add_mutually_exclusive_group(required=True)
    budget.add_argument("--steps", type=steps_option, help=f"steps per run (at most {MAX_STEPS:,})")
    budget.add_argument(
        "--episodes", type=episodes_option, help=f"episodes per run (at most {MAX_EPISODES:,})"
    )
    run.add_argument(
        "--seeds", type=seeds_option, default=1, help=f"seeds per run (1; at most {MAX_SEEDS:,})"
    )
    run.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="directory of the per-run files (none: keep results in memory)",
    )
    run.add_argument("--jobs", type=jobs_option, default=1, help="parallel workers (1)")
    run.add_argument(
        "--backend",
        choices=("serial", "loky", "ray"),
        default="loky",
        help="execution backend (loky; ray: a local Ray, or the cluster RAY_ADDRESS names)",
    )
    run.add_argument(
        "--format",
        choices=("parquet", "csv"),
        default="parquet",
        help="per-run file format (parquet)",
    )
    run.add_argument("--root-seed", type=seed_option, default=0, help="root of all seeds (0; >= 0)")
    run.add_argument(
        "--shard",
        type=shard_option,
        default=None,
        metavar="I/N",
        help="run only shard I of N of the grid (0 <= I < N), e.g. from a job array; "
        "processes may also share one --out without it",
    )
    run.add_argument(
        "--env-kwargs",
        type=json_object,
        default=None,
        metavar="JSON",
        help="environment keyword arguments, e.g. '{\"config_seed\": 3}'",
    )
    run.add_argument(
        "--agent-kwargs",
        type=json_object,
        default=None,
        metavar="JSON",
        help='agent keyword arguments keyed by agent, e.g. \'{"glr-klucb": {"horizon": '
        '5000}, "thompson-bam": {"lam": 0.1}}\', or flat for one agent: \'{"lam": 0.1}\' '
        "(horizon, n_breakpoints and breakpoints default to the run's and environment's; "
        'a planning reward by its registered name, \'{"reward": "NAME"}\')',
    )
    run.add_argument(
        "--import",
        dest="imports",
        action="append",
        metavar="MODULE",
        help="import MODULE (a dotted name, found in the current directory too) in this "
        "process and every worker before any agent is built, e.g. one that registers a "
        "planning reward of your own with bam_rl.agents.rewards.register_reward or a "
        "Gymnasium environment (repeat or comma-separate for several)",
    )
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the settings each agent would be built with on each environment, and "
        "where each came from (the environment's row of the settings table, the environment, "
        "--agent-kwargs or the agent's defaults), and run nothing",
    )


def settings_text(env_id: str, resolved: dict[str, Any]) -> str:
    """``--dry-run``'s lines for one agent on one environment: each setting, its value and
    its source (:func:`~bam_rl.harness.registry.resolved_settings`)."""
    row = resolved["env_row"]
    where = (
        f"the settings table's row {row} ({resolved['row_source']})"
        if row is not None
        else "no row of the settings table"
        if resolved["agent"].startswith("mppi-")
        else "settings table not used"
    )
    lines = [f"{resolved['agent']} on {env_id}: {where}"]
    settings = resolved["settings"]
    width = max((len(name) for name in settings), default=0)
    for name, entry in settings.items():
        value = json.dumps(entry["value"])
        lines.append(f"  {name:<{width}}  {value:<24}  {entry['source']}")
    return "\n".join(lines)


def summary_table(frame: Any) -> Any:
    """Per (method, config): mean ± std over seeds of the total reward (and total regret)."""
    import pandas as pd

    keys = ["method", "config", "seed"]
    totals = {"total_reward": ("reward", "sum")}
    if "regret" in frame.columns:
        totals["total_regret"] = ("regret", "sum")
    per_run = frame.groupby(keys, sort=False).agg(steps=("step", "size"), **totals)
    rows = []
    for (method, config), runs in per_run.groupby(level=["method", "config"], sort=False):
        row: dict[str, Any] = {
            "method": method,
            "config": config,
            "seeds": len(runs),
            "steps": int(runs["steps"].mean()),
        }
        for column in totals:
            row[f"mean_{column}"] = runs[column].mean()
            row[f"std_{column}"] = runs[column].std(ddof=1) if len(runs) > 1 else 0.0
        rows.append(row)
    return pd.DataFrame(rows)
