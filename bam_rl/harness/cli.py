"""The ``bam-rl`` command line (see ARCHITECTURE.md).

Subcommands::

    bam-rl demo [--steps 300] [--seed 0] [--out DIR]      # BAM tracking a drifting stream
    bam-rl run --env ID --agent NAME[,NAME...] --steps N --seeds S [--out DIR]
               [--jobs J] [--backend serial|loky|ray]      # a sweep over run_many
    bam-rl list                                          # environment ids and agent names
    bam-rl reproduce EXPERIMENT [--quick] [--seeds N] [--jobs J] [--out DIR]  # paper figures
    bam-rl reproduce all [--skip NAME[,NAME]] ...        # every experiment, then the report
    bam-rl report DIR                                    # report.html + report.md of DIR
    bam-rl record [--out swingup.gif]                    # the swing-up animation (GIF)
    bam-rl bench [--quick] [--only GROUP ...]            # performance against peers
    bam-rl drill DRILL [DRILL ...] [--quick]             # reliability drills: pass or fail

Usage errors (an unknown agent or environment, bad numbers, an ``--out`` that is a file or
cannot be written) print a message naming the offending value and the accepted ones to
stderr and exit with status 2. Budgets are bounded (``--steps`` <= 10,000,000 per run,
``--episodes`` <= 1,000,000, ``--seeds`` <= 100,000) because a run's rows are held in
memory (about 100 bytes a step) before they are written; longer studies split into runs.
``python -m bam_rl`` is the same command.

Each command owns its arguments: its handler ``_cmd_<name>`` and its parser ``_add_<name>``
sit side by side, and :func:`build_parser` only calls the ``_add_`` functions. The module stays
one file of about 770 lines (over the house's ~600) on purpose: the seven commands share the
argument types and usage-error conventions at the top, and a file per command would scatter
what a reader checks together.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main"]

_TRUNCATE = 60
#: Bounds of the budget options (rows are held in memory until a run is written).
MAX_STEPS = 10_000_000
MAX_EPISODES = 1_000_000
MAX_SEEDS = 100_000
#: Largest seed (seeds are stored in int64 columns).
MAX_SEED = 2**63 - 1


# ------------------------------------------------------------------------------ helpers
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _bounded_int(maximum: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in ``[1, maximum]``, with ``what`` explaining the bound."""

    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(
                f"expected a positive integer <= {maximum:,}, got {text!r} ({what})"
            )
        return value

    parse.__name__ = "bounded int"  # argparse names the type in some messages
    return parse


_steps = _bounded_int(
    MAX_STEPS,
    "a run's rows are held in memory, about 100 bytes a step; "
    "split longer studies into several runs",
)
_episodes = _bounded_int(MAX_EPISODES, "a run's rows are held in memory")
_seeds = _bounded_int(MAX_SEEDS, "one run per seed")


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, 2**63 - 1], got {text!r}")
    return value


def _output_directory(parser: argparse.ArgumentParser, out: str | None) -> Path | None:
    """Creates ``--out`` if needed; a usage error (exit 2) if it is a file or not writable."""
    if out is None:
        return None
    if not out.strip():
        parser.error(f"--out {out!r} is empty; give a directory (--out . for this one)")
    path = Path(out)
    if path.exists() and not path.is_dir():
        parser.error(f"--out {out!r} is an existing file; give a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        parser.error(f"--out {out!r} is not a writable directory ({reason})")
    if not os.access(path, os.W_OK | os.X_OK):  # pragma: no cover - caught above on POSIX
        parser.error(f"--out {out!r} is not a writable directory")
    return path


def _output_file(parser: argparse.ArgumentParser, option: str, out: str | None) -> Path | None:
    """Checks an output file's path before any work: not empty, not a directory, its folder
    creatable and writable. A usage error (exit 2) otherwise; the file itself is written
    (atomically) only when the work is done."""
    if out is None:
        return None
    if not out.strip():
        parser.error(f"{option} {out!r} is empty; give a file path")
    path = Path(out)
    if path.is_dir() or out.endswith(("/", os.sep)):
        parser.error(f"{option} {out!r} is a directory; give a file path (e.g. {option} x.json)")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        parser.error(f"{option} {out!r}: {str(folder)!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        parser.error(f"{option} {out!r}: its folder {str(folder)!r} is not writable ({reason})")
    if path.exists() and not os.access(path, os.W_OK):
        parser.error(f"{option} {out!r} exists and is not writable")
    return path


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    from bam_rl.harness.sweeps import check_jobs

    try:
        return check_jobs(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("n_jobs", "J")) from None


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N (e.g. 0/4), got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < N in I/N, got {text!r}")
    return i, n


#: Largest magnitude of an integer in ``--agent-kwargs``/``--env-kwargs`` (int64, as seeds).
MAX_JSON_INT = 2**63 - 1


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(
            f"the number {text} is beyond float64 (magnitude at most about 1.8e308)"
        )
    return value


def _bounded_json_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:  # more digits than any int64 (and than int() parses fast)
        raise argparse.ArgumentTypeError(
            f"the integer {text[:24]}{'…' if len(text) > 24 else ''} ({len(text.lstrip('-'))} "
            f"digits) is out of range: integers must be within ±{MAX_JSON_INT} (2**63 - 1)"
        )
    value = int(text)
    if abs(value) > MAX_JSON_INT:
        raise argparse.ArgumentTypeError(
            f"the integer {text} is out of range: integers must be within ±{MAX_JSON_INT} "
            "(2**63 - 1)"
        )
    return value


def _no_constant(text: str) -> Any:
    raise argparse.ArgumentTypeError(
        f"{text} is not a number JSON allows (give a finite number, or null)"
    )


def _json_object(text: str) -> dict[str, Any]:
    """A JSON object of keyword arguments; every number in it finite and within float64 (a
    ``1e400``, ``Infinity`` or ``NaN`` is refused) and every integer within int64."""
    try:
        value = json.loads(
            text,
            parse_float=_finite_float,
            parse_int=_bounded_json_int,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON ({error}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _split_names(values: Sequence[str] | None) -> list[str]:
    """``["a,b", "c"] -> ["a", "b", "c"]`` (repeated and comma-separated options), unique."""
    names: list[str] = []
    for value in values or ():
        for name in value.split(","):
            name = name.strip()
            if name and name not in names:
                names.append(name)
    return names


def _summary(function: Callable[..., Any]) -> str:
    """The first paragraph of ``function``'s docstring on one line (whole sentences, never
    its first line only), without reST literal quotes."""
    paragraph = (function.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("``", "")


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


# ----------------------------------------------------------------------------- commands
def _cmd_list(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.harness import AGENTS, ENV_IDS

    print("environments:")
    for env_id in ENV_IDS:
        print(f"  {env_id}")
    print()
    print("agents:")
    width = max(len(name) for name in AGENTS)
    for name, builder in AGENTS.items():
        print(f"  {name:<{width}}  {_summary(builder)}")
    return 0


def _add_list(commands: Any) -> None:
    """The ``list`` command's parser: its arguments and handler."""
    listing = commands.add_parser("list", help="environment ids and agent names")
    listing.set_defaults(handler=_cmd_list, parser=listing)


def _cmd_run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import gymnasium as gym

    from bam_rl.harness import check_agent_name, check_env_id, make_agent, make_grid, run_many
    from bam_rl.harness.sweeps import shard

    agents = _split_names(args.agent)
    env_ids = _split_names(args.env)
    if not agents:
        parser.error("give at least one agent with --agent")
    if not env_ids:
        parser.error("give at least one environment with --env")
    try:
        for name in agents:
            check_agent_name(name)
        for env_id in env_ids:
            check_env_id(env_id)
    except ValueError as error:
        parser.error(str(error))

    _output_directory(parser, args.out)
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
            finally:
                env.close()
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
        )
    except (ValueError, TypeError, OverflowError) as error:
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


def _add_run(commands: Any) -> None:
    """The ``run`` command's parser: its arguments and handler."""
    run = commands.add_parser(
        "run",
        help="a (agent × environment × seed) sweep on top of run_many",
        description="Runs every agent on every environment for --seeds seeds (common random "
        "numbers across agents), one result file per run in --out (a rerun "
        "resumes), and prints the mean total reward (and regret) per method.",
    )
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
    budget.add_argument("--steps", type=_steps, help=f"steps per run (at most {MAX_STEPS:,})")
    budget.add_argument(
        "--episodes", type=_episodes, help=f"episodes per run (at most {MAX_EPISODES:,})"
    )
    run.add_argument(
        "--seeds", type=_seeds, default=1, help=f"seeds per run (1; at most {MAX_SEEDS:,})"
    )
    run.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="directory of the per-run files (none: keep results in memory)",
    )
    run.add_argument("--jobs", type=_jobs, default=1, help="parallel workers (1)")
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
    run.add_argument("--root-seed", type=_seed, default=0, help="root of all seeds (0; >= 0)")
    run.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="I/N",
        help="run only shard I of N of the grid (0 <= I < N), e.g. from a job array; "
        "processes may also share one --out without it",
    )
    run.add_argument(
        "--env-kwargs",
        type=_json_object,
        default=None,
        metavar="JSON",
        help="environment keyword arguments, e.g. '{\"config_seed\": 3}'",
    )
    run.add_argument(
        "--agent-kwargs",
        type=_json_object,
        default=None,
        metavar="JSON",
        help='agent keyword arguments keyed by agent, e.g. \'{"glr-klucb": {"horizon": '
        '5000}, "thompson-bam": {"lam": 0.1}}\', or flat for one agent: \'{"lam": 0.1}\' '
        "(horizon, n_breakpoints and breakpoints default to the run's and environment's)",
    )
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    run.set_defaults(handler=_cmd_run, parser=run)


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


def _cmd_demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import time

    import gymnasium as gym
    import numpy as np
    import pandas as pd

    from bam_rl.harness import make_agent, rollout

    out = _output_directory(parser, args.out)
    start = time.perf_counter()
    env_id = "bam_rl/BinomialStream-v0"
    methods = {"tracker-recursive": "recursive Bayes", "tracker-bam": "BAM (λ=0)"}
    frames = []
    env = gym.make(env_id, max_steps=args.steps)
    unwrapped: Any = env.unwrapped  # the stream: amplitude, period, offset, n
    try:
        for name in methods:
            agent = make_agent(name, env, seed=args.seed)
            frames.append(
                rollout(env, agent, n_steps=args.steps, seed=args.seed, method=name, config=env_id)
            )
    finally:
        env.close()
    frame = pd.concat(frames, ignore_index=True)

    print(
        f"BAM demo: tracking θ_t = {unwrapped.amplitude:g}·sin(2πt/{unwrapped.period:g}) + "
        f"{unwrapped.offset:g} from Binomial({unwrapped.n}, θ_t) counts, "
        f"{args.steps} steps, seed {args.seed}."
    )
    print("Posterior mean of θ_t after each count vs the truth; 'remembered' is how many past")
    print("counts BAM's readout keeps for the current estimate (recursive Bayes keeps all).")
    print()
    print(
        f"{'method':<16} {'posterior-mean MSE':>19} {'remembered (mean)':>18} "
        f"{'remembered (end)':>17}"
    )
    for name, label in methods.items():
        run = frame[frame["method"] == name]
        mse = float(np.mean((run["belief_mean"] - run["theta"]) ** 2))
        remembered = run["belief_remembered"]
        if remembered.isna().all():  # no readout: every past datum is remembered
            mean_text, end_text = "all", f"all ({len(run) - 1})"
        else:
            mean_text = f"{remembered.mean():.1f}"
            end_text = f"{remembered.iloc[-1]:.0f} of {len(run) - 1}"
        print(f"{label:<16} {mse:>19.5f} {mean_text:>18} {end_text:>17}")
    if out is not None:
        from bam_rl.harness.files import write_frame

        path = out / "demo_tracking.csv"
        write_frame(frame, path, "csv")
        print(f"\nper-step records: {path.resolve()}")
    print(f"\n({time.perf_counter() - start:.1f} s)")
    return 0


def _add_demo(commands: Any) -> None:
    """The ``demo`` command's parser: its arguments and handler."""
    demo = commands.add_parser(
        "demo",
        help="BAM vs recursive Bayes tracking the sinusoidal Binomial stream",
        description="Tracks the sinusoidal BinomialStream with recursive Bayes and BAM and "
        "prints the posterior-mean MSE and how many past data BAM remembers. "
        "Writes nothing unless --out is given.",
    )
    demo.add_argument(
        "--steps", type=_steps, default=300, help=f"stream length (300; at most {MAX_STEPS:,})"
    )
    demo.add_argument("--seed", type=_seed, default=0, help="stream seed (0; >= 0)")
    demo.add_argument("--out", default=None, help="directory for the per-step CSV")
    demo.set_defaults(handler=_cmd_demo, parser=demo)


#: Why ``reproduce all`` ran no MNIST experiment: the report's "not run" reason (the real
#: options: ``--data DIR``, ``$BAM_RL_MNIST``, ``--download`` where a network is available).
NO_MNIST_DATA = "no data (pass --data DIR or set BAM_RL_MNIST; or add --download where online)"


def _mnist_problem(args: argparse.Namespace) -> str | None:
    """Why the MNIST files cannot be read (after fetching them with ``--download``), or
    ``None`` when all four are there."""
    from bam_rl.datasets import MNIST_FILES, download_mnist, find_mnist_file, mnist_directory

    try:
        directory = mnist_directory(args.data)
        if args.download:  # fetched first: offline is one line, no files
            download_mnist(directory)
        for role in MNIST_FILES:
            find_mnist_file(directory, role)
    except (OSError, ValueError) as error:
        return str(error)
    return None


def _reproductions(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """The experiments ``args`` asks for: one name, or with ``all`` every one not in
    ``--skip`` (validated here: an unknown name, or ``--skip`` without ``all``, is a usage
    error)."""
    from bam_rl.harness.experiments import REPRODUCTIONS

    skip = _split_names(args.skip)
    unknown = [name for name in skip if name not in REPRODUCTIONS]
    if unknown:
        parser.error(
            f"--skip: unknown experiment {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(REPRODUCTIONS)} (comma-separated)"
        )
    if skip and args.experiment != "all":
        parser.error(
            f"--skip applies to 'reproduce all', not to one experiment ({args.experiment})"
        )
    if args.experiment != "all":
        return [args.experiment]
    return [name for name in REPRODUCTIONS if name not in skip]


def _cmd_reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import time

    import pandas as pd

    from bam_rl.harness.experiments import REPRODUCTIONS, get_reproduction, takes_backend
    from bam_rl.harness.report import NOT_RUN_FILE, build_report, write_not_run, write_timing

    names = _reproductions(args, parser)
    not_run: dict[str, str] = {  # `all`: the experiments it leaves out, and why
        name: f"skipped (--skip {name})"
        for name in REPRODUCTIONS
        if args.experiment == "all" and name not in names
    }
    if args.experiment == "mnist" and not args.download:  # missing data: a usage error
        from bam_rl.datasets import MNIST_FILES, find_mnist_file, mnist_directory

        try:
            for role in MNIST_FILES:
                find_mnist_file(mnist_directory(args.data), role)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
    if args.experiment == "mnist" and args.download:  # fetched first: offline is one line
        from bam_rl.datasets import download_mnist, mnist_directory

        try:
            download_mnist(mnist_directory(args.data))
        except ValueError as error:
            parser.error(str(error))
        except OSError as error:
            parser.exit(1, f"{parser.prog}: error: {error}\n")
    if args.experiment == "all" and "mnist" in names:
        problem = _mnist_problem(args)
        if problem is not None:  # the rest runs; the report says why MNIST did not
            not_run["mnist"] = NO_MNIST_DATA
            names.remove("mnist")
            print(f"bam-rl reproduce: mnist not run: {problem}", file=sys.stderr)
    _output_directory(parser, args.out)
    for name, reason in not_run.items():
        folder = Path(args.out) / name
        if folder.is_dir() and any(e.name != NOT_RUN_FILE for e in folder.iterdir()):
            continue  # earlier results stay; the report shows them with their own command
        write_not_run(folder, reason, _reproduce_command("all", args))
    for name in names:
        start = time.perf_counter()
        out = Path(args.out) / name
        (out / NOT_RUN_FILE).unlink(missing_ok=True)  # this run's results replace the reason
        extra: dict[str, Any] = {}
        if name == "mnist":
            extra = {"data": args.data, "side": args.side, "download": args.download}
        elif takes_backend(name):
            extra = {"backend": args.backend}
        summary = get_reproduction(name)(
            out,
            seeds=args.seeds,
            quick=args.quick,
            n_jobs=args.jobs,
            progress=not args.no_progress,
            **extra,
        )
        seconds = time.perf_counter() - start
        write_timing(
            out,
            seconds,
            _reproduce_command(name, args),
            quick=args.quick,
            seeds=args.seeds,
            jobs=args.jobs,
        )
        with pd.option_context("display.width", 120, "display.max_columns", 20):
            print(f"== {name} ({seconds:.1f} s) -> {out.resolve()}")
            if "note" in summary:  # one line, not a column of the table
                print(f"({summary['note'].iloc[0]})")
                summary = summary.drop(columns="note")
            print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if args.experiment == "all":
        for name, reason in not_run.items():
            print(f"== {name}: not run: {reason}")
        html_path, md_path = build_report(
            args.out, lambda line: print(f"bam-rl report: {line}", file=sys.stderr)
        )
        print(f"\nreport: {html_path.resolve()} (and {md_path.name})")
    return 0


def _add_reproduce(commands: Any) -> None:
    """The ``reproduce`` command's parser: its arguments and handler."""
    from bam_rl.harness.experiments import REPRODUCTIONS

    reproduce = commands.add_parser(
        "reproduce",
        help="run a paper experiment and write its figure and CSVs",
        description="Runs a paper experiment and writes its figure (medians with quantile "
        "bands), per-step CSV and summary CSV to --out.",
    )
    reproduce.add_argument(
        "experiment", choices=(*REPRODUCTIONS, "all"), help="which experiment ('all': every one)"
    )
    reproduce.add_argument("--quick", action="store_true", help="short smoke-test runs")
    reproduce.add_argument(
        "--seeds",
        "--runs",
        dest="seeds",
        type=_seeds,
        default=None,
        help="number of seeds, or runs per cell (default: the paper's; piecewise-bandits: "
        "until each SE is a tenth of the published std)",
    )
    reproduce.add_argument(
        "--out", default="results", metavar="DIR", help="output directory (results)"
    )
    reproduce.add_argument("--jobs", type=_jobs, default=1, help="parallel workers (1)")
    reproduce.add_argument(
        "--backend",
        choices=("serial", "loky", "ray"),
        default=None,
        help="cartpole, bandits: where the runs execute (default: serial for one job, else "
        "loky; ray: a local Ray, or the cluster RAY_ADDRESS names)",
    )
    reproduce.add_argument("--no-progress", action="store_true", help="hide progress bars")
    reproduce.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="mnist: directory of the four MNIST files, gzipped or not (default: $BAM_RL_MNIST)",
    )
    reproduce.add_argument(
        "--side",
        type=_positive_int,
        default=None,
        choices=(28, 14),
        help="mnist: image side, 28 (785 features) or 14 (197; faster)",
    )
    reproduce.add_argument(
        "--download",
        action="store_true",
        help="mnist: download missing MNIST files into --data first",
    )
    reproduce.add_argument(
        "--skip",
        action="append",
        default=None,
        metavar="NAME[,NAME]",
        help="all: experiments not to run (e.g. --skip mnist,piecewise-bandits); the report "
        "marks them not run",
    )
    reproduce.set_defaults(handler=_cmd_reproduce, parser=reproduce)


def _reproduce_command(name: str, args: argparse.Namespace) -> str:
    """The ``bam-rl reproduce`` command that reruns experiment ``name`` as ``args`` ran it."""
    import shlex

    from bam_rl.harness.experiments import takes_backend

    words = ["bam-rl", "reproduce", name]
    if args.quick:
        words.append("--quick")
    every = name == "all"
    for option, value in (
        ("--seeds", args.seeds),
        ("--jobs", args.jobs),
        ("--backend", args.backend if every or takes_backend(name) else None),
        ("--data", args.data if every or name == "mnist" else None),
        ("--side", args.side if every or name == "mnist" else None),
        ("--skip", ",".join(_split_names(args.skip)) or None if every else None),
    ):
        if value is not None and not (option == "--jobs" and value == 1):
            words += [option, str(value)]
    if (every or name == "mnist") and args.download:
        words.append("--download")
    words += ["--out", str(args.out)]
    return shlex.join(words)


def _cmd_report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.harness.report import build_report

    directory = Path(args.directory)
    if not directory.exists():
        parser.error(
            f"results directory {args.directory!r} does not exist "
            "(run `bam-rl reproduce ... --out DIR` first)"
        )
    if not directory.is_dir():
        parser.error(f"results directory {args.directory!r} is a file, not a folder")
    try:
        html_path, md_path = build_report(
            directory, lambda line: print(f"bam-rl report: {line}", file=sys.stderr)
        )
    except ValueError as error:
        parser.error(str(error))
    print(f"{html_path.resolve()}\n{md_path.resolve()}")
    return 0


def _add_report(commands: Any) -> None:
    """The ``report`` command's parser: its arguments and handler."""
    report = commands.add_parser(
        "report",
        help="one report (report.html + report.md) of a results directory",
        description="Writes DIR/report.html (self-contained: figures embedded) and its Markdown "
        "twin DIR/report.md from the experiment folders in DIR: every figure, the "
        "table of the paper's claims with the measured numbers, wall times, "
        "commands, package versions and the machine.",
    )
    report.add_argument("directory", metavar="DIR", help="results directory (of reproduce)")
    report.set_defaults(handler=_cmd_report, parser=report)


def _cmd_record(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.harness.record import (
        check_frame_size,
        check_methods,
        record_swingup,
        replay_plan,
    )

    methods = _split_names(args.methods) or ["bam", "recursive"]
    try:  # methods, a seed index or revisit the experiment does not have: usage errors
        check_methods(methods)
        replay_plan(args.seed, args.revisit, args.quick, args.episode_trial)
    except ValueError as error:
        parser.error(
            f"--methods {','.join(methods)} --seed {args.seed} --revisit {args.revisit} "
            f"--episode-trial {args.episode_trial}: {error}"
        )
    try:  # so is a frame size the renderer or the memory cannot take
        check_frame_size((args.width, args.height), args.every)
    except ValueError as error:
        parser.error(f"--width {args.width} --height {args.height} --every {args.every}: {error}")
    _output_file(parser, "--out", args.out)  # before minutes of work
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        result = record_swingup(
            args.out,
            seed=args.seed,
            revisit=args.revisit,
            size=(args.width, args.height),
            every=args.every,
            quick=args.quick,
            progress=None if args.no_progress else print,
            methods=methods,
            episode_trial=args.episode_trial,
        )
    except OSError as error:  # the GIF could not be written (a full disk, a lost mount)
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    print(json.dumps(result, indent=2))
    return 0


def _add_record(commands: Any) -> None:
    """The ``record`` command's parser: its arguments and handler."""
    from bam_rl.harness.record import DEFAULT_PATH

    record = commands.add_parser(
        "record",
        help="GIF of BAM vs recursive Bayes swinging up on a revisited gravity",
        description="Runs MPPI with BAM and with recursive Bayes through the episodic cart-pole "
        "schedule and renders, side by side and headless (MUJOCO_GL=egl), the "
        "second trial of a revisited episode (the first trial after BAM's "
        "readout). Takes a few minutes.",
    )
    record.add_argument(
        "--out",
        default=DEFAULT_PATH,
        metavar="PATH",
        help=f"GIF path (default: {DEFAULT_PATH} in the current directory; the docs' figure "
        "is made with --out docs/figures/swingup.gif)",
    )
    record.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed index of the episodic experiment, 0-999 (0; its runs are replayed trial for "
        "trial)",
    )
    record.add_argument(
        "--revisit",
        type=_positive_int,
        default=1,
        help="which revisited episode: 1, 2 or 3 (11.15, 3.72, 9.81 m/s^2 again; default 1; "
        "--quick has one)",
    )
    record.add_argument(
        "--methods",
        action="append",
        default=None,
        metavar="M[,M]",
        help="episodic methods shown left to right (bam,recursive; also bam_segments, gt)",
    )
    record.add_argument(
        "--episode-trial",
        type=int,
        choices=(1, 2),
        default=2,
        help="trial of the revisited episode: 1 (first, after the announced change) or 2 "
        "(the first after the paper's readout; default)",
    )
    record.add_argument("--width", type=_positive_int, default=320, help="panel width (320)")
    record.add_argument("--height", type=_positive_int, default=240, help="panel height (240)")
    record.add_argument(
        "--every",
        type=_positive_int,
        default=3,
        help="keep every N-th simulator step's frame (3; played in real time)",
    )
    record.add_argument(
        "--quick",
        action="store_true",
        help="the runs of 'reproduce --quick' (two trials per episode, a short planner); "
        "every frame says it is a smoke test",
    )
    record.add_argument("--no-progress", action="store_true", help="no line per trial")
    record.set_defaults(handler=_cmd_record, parser=record)


def _cmd_bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.harness.bench import run_from_args

    _output_file(parser, "--json", args.json)  # before the workloads run
    _output_file(parser, "--markdown", args.markdown)
    try:
        return run_from_args(args)
    except OSError as error:  # e.g. the disk filled up while the workloads ran
        parser.exit(1, f"{parser.prog}: error: {error}\n")


def _add_bench(commands: Any) -> None:
    """The ``bench`` command's parser: its arguments and handler."""
    from bam_rl.harness.bench import add_arguments as add_bench_arguments

    bench = commands.add_parser(
        "bench",
        help="performance table against peers (workload, ours, peer, ratio, bar, met)",
        description="Runs the benchmark workloads of bam_rl.harness.bench and prints one "
        "table; peers come from the optional 'bench' extra.",
    )
    add_bench_arguments(bench)
    bench.set_defaults(handler=_cmd_bench, parser=bench)


def _cmd_drill(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.harness.drills import run_from_args

    _output_file(parser, "--json", args.json)  # before the drills run
    try:
        return run_from_args(args)
    except OSError as error:  # e.g. the disk filled up while the drills ran
        parser.exit(1, f"{parser.prog}: error: {error}\n")


def _add_drill(commands: Any) -> None:
    """The ``drill`` command's parser: its arguments and handler."""
    from bam_rl.harness.drills import add_arguments as add_drill_arguments

    drill = commands.add_parser(
        "drill",
        help="reliability drills (soak, interrupted sweeps, fuzz, ...): pass or fail",
        description="Runs the reliability drills of bam_rl.harness.drills (minutes each; "
        "--quick: seconds), prints their output and one table of verdicts, and exits 1 when "
        "a drill fails.",
    )
    add_drill_arguments(drill)
    drill.set_defaults(handler=_cmd_drill, parser=drill)


# ------------------------------------------------------------------------------ parser
class _Parser(argparse.ArgumentParser):
    """``argparse`` with exact option names (no prefixes: ``--seed`` is not ``--seeds``) and
    a suggestion of the options close to an unknown one."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def unknown(self, extras: Sequence[str]) -> None:
        """A usage error for ``extras``, naming the accepted options closest to each."""
        known = [o for action in self._actions for o in action.option_strings]
        hints = []
        for token in extras:
            if token.startswith("-"):
                close = difflib.get_close_matches(token.split("=")[0], known, n=3, cutoff=0.6)
                if close:
                    hints.append(f"{token}: did you mean {' or '.join(close)}?")
        message = f"unrecognized arguments: {' '.join(extras)}"
        self.error(message + ("; " + "; ".join(hints) if hints else ""))


def build_parser() -> _Parser:
    """The argument parser of ``bam-rl`` (one subparser per command)."""
    from bam_rl import __version__

    parser = _Parser(
        prog="bam-rl",
        description="Bayes with Adaptive Memory (BAM) for non-stationary reinforcement "
        "learning: demos, sweeps and paper reproductions.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_demo(commands)
    _add_run(commands)
    _add_list(commands)
    _add_reproduce(commands)
    _add_report(commands)
    _add_record(commands)
    _add_bench(commands)
    _add_drill(commands)
    return parser


#: Environment variables by which a user sets the BLAS threads (then left as they are).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread() -> None:
    """One BLAS thread in this process unless the user chose a number.

    The linear algebra of bam-rl is many small products and factorisations, where a second
    BLAS thread costs more than it gains: ``reproduce mnist --quick`` took 9.5 s with
    OpenBLAS's default two threads and 4.7 s with one on two idle cores, and OpenBLAS threads
    spin-wait, so beside another busy process the default could be many times slower. Sweep
    workers (loky) get their own limit from joblib.
    """
    if any(os.environ.get(variable) for variable in BLAS_THREAD_VARIABLES):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bam-rl`` console script.

    Args:
        argv: Arguments (without the program name); ``None`` reads ``sys.argv``.

    Returns:
        0 on success.

    Raises:
        SystemExit: With status 2 on a usage error (message on stderr).
    """
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    _one_blas_thread()
    if extras:
        owner = getattr(args, "parser", parser)
        (owner if isinstance(owner, _Parser) else parser).unknown(extras)
    try:
        status: int = args.handler(args, args.parser)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`bam-rl list | head`): stop quietly, as Unix tools do; point
        # stdout at devnull so the interpreter's final flush does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
