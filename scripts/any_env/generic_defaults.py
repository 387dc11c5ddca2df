"""docs/any_env.md: The generic defaults measured with the settings table's rows removed (issue
51): the five "from the environment alone" acceptance lines, each agent built through its door with
the rows hidden, so every planner and model setting not given is a generic default
(``bam_rl.agents.settings.generic_defaults``, docs/env_settings.md#generic-defaults).

``python scripts/any_env/generic_defaults.py --task inverted-pendulum --seeds 0 1 2`` prints one
JSON line per (task, seed). The tasks are ``scripts/any_env/env_settings_acceptance.py``'s (run
here with its ``--no-rows``: the rows' planning rewards are given, as a reward is the user's choice
and none is generic) and

* ``recurring-inverted-pendulum``: ``bam-rl run --env bam_rl/RecurringInvertedPendulum-v0
  --agent mppi-bam-segments,mppi-gt --episodes 17`` (in this process, serial), the first trial
  of each revisit (A at trial 8, B at trial 16) relative to GT MPC's trial from the same start
  state; ``--rows`` keeps the rows (the table's numbers, for the comparison). The id declares
  its planning reward and planner options itself (``env`` in the record), which repeat its
  row; ``--hide-env-options`` hides them too, so the planner is the generic defaults'.

The rows are hidden by rebinding ``bam_rl.agents.settings.ENV_SETTINGS`` to an empty mapping
for the run (:func:`rows_removed`); nothing in the table is deleted. ``--generic JSON``
replaces entries of ``GENERIC_DEFAULTS`` for the run (how the defaults were chosen, on seeds
other than the reported ones).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

import bam_rl  # noqa: F401  (registers the environments)
from bam_rl.agents import settings
from bam_rl.cli import main as cli_main

_SPEC = importlib.util.spec_from_file_location(
    "env_settings_acceptance", Path(__file__).with_name("env_settings_acceptance.py")
)
assert _SPEC is not None and _SPEC.loader is not None
acceptance: Any = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(acceptance)

TASKS = ("inverted-pendulum", "pendulum", "cartpole", "double-pendulum-gt")
RECURRING = "bam_rl/RecurringInvertedPendulum-v0"
#: The first trials of the revisits of a recurring id with 4 trials per world (A B A C B).
REVISIT_TRIALS = {"A": 8, "B": 16}


@contextlib.contextmanager
def rows_removed(
    generic: dict[str, Any] | None = None, hide_env_options: bool = False
) -> Iterator[None]:
    """Every environment without a row inside the block, ``GENERIC_DEFAULTS`` updated with
    ``generic`` (its ``sampling_var_share``: ``GENERIC_SAMPLING_VAR``); the table and the
    defaults are restored after it. ``hide_env_options`` hides what the environments declare
    of their own planning too (``planning_reward`` and ``planner_options`` attributes; the
    recurring ids carry none since issue 51), so every planner setting not given is generic."""
    saved_rows, saved_generic = settings.ENV_SETTINGS, settings.GENERIC_DEFAULTS
    saved_share, saved_declared = settings.GENERIC_SAMPLING_VAR, settings._env_declared
    if hide_env_options:
        settings._env_declared = lambda env: {}
    generic = dict(generic or {})
    settings.GENERIC_SAMPLING_VAR = generic.pop("sampling_var_share", saved_share)
    settings.ENV_SETTINGS = MappingProxyType({})
    settings.GENERIC_DEFAULTS = MappingProxyType({**saved_generic, **generic})
    acceptance.NO_ROWS = True
    try:
        yield
    finally:
        settings.ENV_SETTINGS, settings.GENERIC_DEFAULTS = saved_rows, saved_generic
        settings.GENERIC_SAMPLING_VAR, settings._env_declared = saved_share, saved_declared
        acceptance.NO_ROWS = False


def relative(score: float, gt: float) -> float:
    """A return relative to GT's (docs/recurring.md): score / GT for a positive GT, GT /
    score for costs."""
    return score / gt if gt > 0 else gt / score


def recurring(seeds: list[int], rows: bool) -> list[dict[str, Any]]:
    """``bam-rl run`` on :data:`RECURRING` (serial, in this process): per seed, the learner's
    and GT's first trial of each revisit, and the ratio."""
    agents = "mppi-bam-segments,mppi-gt"
    reward = {"reward": "inverted-pendulum"}  # the row's: a reward is the user's choice
    kwargs = (
        []
        if rows
        else ["--agent-kwargs", json.dumps({"mppi-bam-segments": reward, "mppi-gt": reward})]
    )
    with tempfile.TemporaryDirectory() as out:
        argv = ["run", "--env", RECURRING, "--agent", agents, "--episodes", "17"]
        argv += ["--seeds", str(max(seeds) + 1), "--backend", "serial", "--out", out]
        argv += ["--format", "csv", "--no-progress", *kwargs]
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli_main(argv) == 0
        seconds = time.perf_counter() - started
        frame = pd.concat(pd.read_csv(path) for path in Path(out).glob("*.csv"))
    returns = frame.groupby(["method", "seed_index", "episode"])["reward"].sum()
    results = []
    for seed in seeds:
        row: dict[str, Any] = {"task": "recurring-inverted-pendulum", "seed": seed}
        for world, trial in REVISIT_TRIALS.items():
            learner = float(returns["mppi-bam-segments", seed, trial])
            gt = float(returns["mppi-gt", seed, trial])
            row[world] = {"learner": learner, "gt": gt, "ratio": round(relative(learner, gt), 3)}
        row["pass"] = all(row[w]["ratio"] >= 0.7 for w in REVISIT_TRIALS)
        for method in ("mppi-bam-segments", "mppi-gt"):
            row[method] = [round(float(v), 1) for v in returns[method, seed].tolist()]
        row["seconds"] = round(seconds / len(seeds), 1)
        results.append(row)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--task", action="append", choices=(*TASKS, "recurring-inverted-pendulum"), required=True
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rows", action="store_true", help="keep the rows (the table's numbers)")
    parser.add_argument("--generic", type=json.loads, default={}, help="GENERIC_DEFAULTS entries")
    parser.add_argument(
        "--hide-env-options",
        action="store_true",
        help="hide the planning reward and planner options an environment declares itself",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    context = (
        contextlib.nullcontext()
        if args.rows
        else rows_removed(args.generic, hide_env_options=args.hide_env_options)
    )
    with context:
        for task in args.task:
            if task == "recurring-inverted-pendulum":
                lines = recurring(args.seeds, args.rows)
            else:
                lines = [acceptance.run(task, seed) for seed in args.seeds]
            for line in lines:
                line["rows"] = args.rows
                line["env_options"] = not args.hide_env_options
                if args.generic:
                    line["generic"] = args.generic
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
