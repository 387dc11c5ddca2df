"""``bam-rl reproduce EXPERIMENT|all``: a paper experiment's figure and CSVs (``all``: every
one, then the report).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bam_rl.cli.common import (
    command,
    jobs_option,
    output_directory,
    positive_int,
    seeds_option,
    split_names,
)

#: Why ``reproduce all`` ran no MNIST experiment: the report's "not run" reason (the real
#: options: ``--data DIR``, ``$BAM_RL_MNIST``, ``--download`` where a network is available).
NO_MNIST_DATA = "no data (pass --data DIR or set BAM_RL_MNIST; or add --download where online)"


#: ``bam-rl reproduce``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "run a paper experiment and write its figure and CSVs"
DESCRIPTION = (
    "Runs a paper experiment and writes its figure (medians with quantile "
    "bands), per-step CSV and summary CSV to --out."
)


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


def _claims_line(rows: list[dict[str, str]]) -> str:
    """The verdicts of claim rows counted, e.g. ``"2 of 4 hold, 1 partly, 1 does not, 0 not
    run"`` (the report's ``holds`` column: yes, partly, no, not run)."""
    counts = {verdict: 0 for verdict in ("yes", "partly", "no", "not run")}
    for row in rows:
        verdict = row.get("holds", "not run")
        counts[verdict if verdict in counts else "not run"] += 1
    fails = "does not" if counts["no"] == 1 else "do not"
    return (
        f"{counts['yes']} of {len(rows)} hold, {counts['partly']} partly, {counts['no']} "
        f"{fails}, {counts['not run']} not run"
    )


def _claims(name: str, folder: Path) -> list[dict[str, str]] | str:
    """Experiment ``name``'s claim rows measured in ``folder``, or why they cannot be read."""
    from bam_rl.experiments import get_claims

    try:
        return get_claims(name)(folder)
    except Exception as error:  # the report reads the same files and says the same
        return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def _reproductions(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """The experiments ``args`` asks for: one name, or with ``all`` every one not in
    ``--skip`` (validated here: an unknown name, or ``--skip`` without ``all``, is a usage
    error)."""
    from bam_rl.experiments import REPRODUCTIONS, get_entry

    skip = split_names(args.skip)
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
    return [name for name in REPRODUCTIONS if name not in skip and get_entry(name).in_all]


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import time

    import pandas as pd

    from bam_rl.experiments import (
        REPRODUCTIONS,
        get_entry,
        get_reproduction,
        takes_backend,
    )
    from bam_rl.experiments.report import NOT_RUN_FILE, build_report, write_not_run, write_timing

    names = _reproductions(args, parser)
    _check_recurring_options(args, parser, names)
    if args.backend is not None and any(takes_backend(name) for name in names):
        from bam_rl.harness.sweeps import check_backend

        try:  # Ray missing: a usage error, as `bam-rl run` says, before anything runs
            check_backend(args.backend)
        except ValueError as error:
            parser.error(f"--backend {args.backend}: {error}")
    not_run: dict[str, str] = {  # `all`: the experiments it leaves out, and why
        name: (
            f"skipped (--skip {name})"
            if get_entry(name).in_all
            else f"not part of 'all' yet (run it by name: bam-rl reproduce {name})"
        )
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
    output_directory(parser, args.out)
    for name, reason in not_run.items():
        folder = Path(args.out) / name
        if folder.is_dir() and any(e.name != NOT_RUN_FILE for e in folder.iterdir()):
            continue  # earlier results stay; the report shows them with their own command
        write_not_run(folder, reason, _reproduce_command("all", args))
    measured: list[dict[str, str]] = []  # the claims of every experiment run now
    for name in names:
        start = time.perf_counter()
        out = Path(args.out) / name
        (out / NOT_RUN_FILE).unlink(missing_ok=True)  # this run's results replace the reason
        extra: dict[str, Any] = {}
        if name == "mnist":
            extra = {"data": args.data, "side": args.side, "download": args.download}
        elif takes_backend(name):
            extra = {"backend": args.backend}
        if name == "recurring-worlds":
            extra.update(_recurring_options(args))
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
                if len(summary):
                    print(f"({summary['note'].iloc[0]})")
                summary = summary.drop(columns="note")
            if summary.empty:  # e.g. recurring-worlds with only its extra settings
                print("(no summary rows: the measures are in the folder's other CSV files)")
            else:
                print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        rows = _claims(name, out)
        if isinstance(rows, str):
            print(f"{name}: the paper's claims: unreadable ({rows})")
        else:
            measured.extend(rows)
            print(f"{name}: the paper's claims: {_claims_line(rows)}{_scale_note(args)}")
    if args.experiment == "all":
        for name, reason in not_run.items():
            print(f"== {name}: not run: {reason}")
        print(
            f"\nthe paper's claims, every experiment run now: {_claims_line(measured)}"
            f"{_scale_note(args)}"
        )
        html_path, md_path = build_report(
            args.out, lambda line: print(f"bam-rl report: {line}", file=sys.stderr)
        )
        print(f"\nreport: {html_path.resolve()} (and {md_path.name})")
    return 0


def _recurring_options(args: argparse.Namespace) -> dict[str, Any]:
    """``reproduce recurring-worlds``' own options, those given only (issue 52)."""
    options: dict[str, Any] = {}
    if split_names(args.envs):
        options["envs"] = split_names(args.envs)
    if split_names(args.settings):
        options["settings"] = split_names(args.settings)
    if args.peers:
        options["peers"] = True
    return options


def _check_recurring_options(
    args: argparse.Namespace, parser: argparse.ArgumentParser, names: list[str]
) -> None:
    """A usage error for ``--envs``/``--settings``/``--peers`` without recurring-worlds, or
    naming an unknown environment or setting."""
    given = _recurring_options(args)
    if not given:
        return
    if "recurring-worlds" not in names:
        parser.error(f"--{next(iter(given))} applies to recurring-worlds only")
    from bam_rl.experiments.recurring import EXTRA_SETTINGS, SETTINGS
    from bam_rl.wrappers.recurring import SUITE

    for option, known in (("envs", tuple(SUITE)), ("settings", (*SETTINGS, *EXTRA_SETTINGS))):
        unknown = [value for value in given.get(option, ()) if value not in known]
        if unknown:
            parser.error(f"--{option}: unknown {', '.join(map(repr, unknown))}; one of {known}")


def _scale_note(args: argparse.Namespace) -> str:
    """What the claims line says of its numbers: where the table is, and a smoke test's
    caveat."""
    import shlex

    where = f" (the table: bam-rl report {shlex.quote(str(args.out))})"
    if args.quick:
        return where[:-1] + "; --quick: a smoke test's numbers, not the experiment's)"
    return where


def add(commands: Any) -> None:
    """The ``reproduce`` command's parser: its arguments and handler."""
    from bam_rl.experiments import REPRODUCTIONS

    reproduce = command(commands, "reproduce", handle, HELP, DESCRIPTION)
    reproduce.add_argument(
        "experiment",
        choices=(*REPRODUCTIONS, "all"),
        help="which experiment ('all': every one not run by name only)",
    )
    reproduce.add_argument("--quick", action="store_true", help="short smoke-test runs")
    reproduce.add_argument(
        "--seeds",
        "--runs",
        dest="seeds",
        type=seeds_option,
        default=None,
        help="number of seeds, or runs per cell (default: the paper's; piecewise-bandits: "
        "until each SE is a tenth of the published std)",
    )
    reproduce.add_argument(
        "--out", default="results", metavar="DIR", help="output directory (results)"
    )
    reproduce.add_argument("--jobs", type=jobs_option, default=1, help="parallel workers (1)")
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
        type=positive_int,
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
    reproduce.add_argument(
        "--envs",
        action="append",
        default=None,
        metavar="NAME[,NAME]",
        help="recurring-worlds: suite environments to run (default: all seven)",
    )
    reproduce.add_argument(
        "--settings",
        action="append",
        default=None,
        metavar="NAME[,NAME]",
        help="recurring-worlds: of episodic, continual, in_trial, stationary (default: "
        "episodic,continual)",
    )
    reproduce.add_argument(
        "--peers",
        action="store_true",
        help="recurring-worlds: add the peers (recent window, CRP mixture; beyond the paper) "
        "where nothing is announced",
    )


def _reproduce_command(name: str, args: argparse.Namespace) -> str:
    """The ``bam-rl reproduce`` command that reruns experiment ``name`` as ``args`` ran it."""
    import shlex

    from bam_rl.experiments import takes_backend

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
        ("--skip", ",".join(split_names(args.skip)) or None if every else None),
        *(
            (f"--{key}", value if isinstance(value, bool) else ",".join(value))
            for key, value in _recurring_options(args).items()
            if name == "recurring-worlds"
        ),
    ):
        if value is True:
            words.append(option)
        elif value is not None and not (option == "--jobs" and value == 1):
            words += [option, str(value)]
    if (every or name == "mnist") and args.download:
        words.append("--download")
    words += ["--out", str(args.out)]
    return shlex.join(words)
