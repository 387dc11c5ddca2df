"""``bam-rl record``: the GIF of BAM and recursive Bayes swinging up on a revisited gravity."""

from __future__ import annotations

import argparse
import json
import os
from functools import partial
from typing import Any

from bam_rl.cli.common import command, output_file, positive_int, seed_option, split_names

#: ``bam-rl record``'s line in ``bam-rl --help`` and its ``--help`` description.
HELP = "GIF of BAM vs recursive Bayes swinging up on a revisited gravity"
DESCRIPTION = (
    "Runs MPPI with BAM and with recursive Bayes through the episodic cart-pole "
    "schedule and renders, side by side and headless (MUJOCO_GL=egl), the "
    "second trial of a revisited episode (the first trial after BAM's "
    "readout). Takes a few minutes."
)


class _Out(argparse.Action):
    """Stores ``--out`` and notes that it was given (``--recurring`` has another default)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.out_given = True


def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bam_rl.experiments.record import (
        check_frame_size,
        check_methods,
        record_swingup,
        replay_plan,
    )

    if args.recurring is not None:
        return handle_recurring(args, parser)
    if args.results is not None:
        parser.error(
            f"--results {args.results}: needs --recurring NAME (it checks the returns of "
            "'reproduce recurring-worlds')"
        )
    args.episode_trial = args.episode_trial or 2
    methods = split_names(args.methods) or ["bam", "recursive"]
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
    return _write(
        parser, args, record_swingup, args.out, methods=methods, episode_trial=args.episode_trial
    )


def _write(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    record: Any,
    out: str,
    **options: Any,
) -> int:
    """Checks ``out``, then runs ``record(out, ...)`` (a recording function of
    :mod:`bam_rl.experiments.record`) with the options every recording takes and ``options``, and
    prints its result. A GIF that could not be written (a full disk, a lost mount) or a
    replayed return that is not the results folder's exits 1."""
    from bam_rl.experiments.record_recurring import ReplayMismatch

    output_file(parser, "--out", out)  # before minutes of work
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        result = record(
            out,
            seed=args.seed,
            revisit=args.revisit,
            size=(args.width, args.height),
            every=args.every,
            quick=args.quick,
            progress=None if args.no_progress else print,
            **options,
        )
    except (ReplayMismatch, OSError) as error:  # not the folder's run; an unwritable GIF
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    print(json.dumps(result, indent=2))
    return 0


def handle_recurring(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``bam-rl record --recurring NAME``: the recurring-worlds experiment's runs."""
    from bam_rl.experiments.record import check_frame_size
    from bam_rl.experiments.record_recurring import (
        RECURRING_METHODS,
        check_recurring,
        expected_returns,
        record_recurring,
        recurring_path,
        recurring_plan,
        recurring_trial_steps,
    )

    try:
        name = check_recurring(args.recurring)
    except ValueError as error:
        parser.error(f"--recurring {args.recurring}: {error}")
    methods = split_names(args.methods) or list(RECURRING_METHODS)
    episode_trial = args.episode_trial or 1
    try:  # methods, a seed index or revisit the experiment does not have: usage errors
        runs, values, trial = recurring_plan(
            name, args.seed, args.revisit, args.quick, episode_trial, methods
        )
    except ValueError as error:
        parser.error(
            f"--recurring {name} --methods {','.join(methods)} --seed {args.seed} "
            f"--revisit {args.revisit} --episode-trial {episode_trial}: {error}"
        )
    try:  # a frame size the renderer or the memory cannot take
        check_frame_size(
            (args.width, args.height), args.every, recurring_trial_steps(runs[methods[0]], name)
        )
    except ValueError as error:
        parser.error(f"--width {args.width} --height {args.height} --every {args.every}: {error}")
    if args.results is not None:  # the folder holds this trial of every run shown
        try:
            expected_returns(args.results, name, args.seed, trial, methods, values[trial])
        except ValueError as error:
            parser.error(f"--results {args.results}: {error}")
    out = args.out if args.out_given else recurring_path(name)
    return _write(
        parser,
        args,
        partial(record_recurring, name),
        out,
        methods=methods,
        episode_trial=episode_trial,
        results=args.results,
    )


def add(commands: Any) -> None:
    """The ``record`` command's parser: its arguments and handler."""
    from bam_rl.experiments.record import DEFAULT_PATH
    from bam_rl.experiments.record_recurring import RECURRING_NAMES

    record = command(commands, "record", handle, HELP, DESCRIPTION)
    record.set_defaults(out_given=False)
    record.add_argument(
        "--out",
        action=_Out,
        default=DEFAULT_PATH,
        metavar="PATH",
        help=f"GIF path (default: {DEFAULT_PATH} in the current directory, with --recurring "
        "recurring_NAME.gif; the docs' figure is made with --out docs/figures/swingup.gif)",
    )
    record.add_argument(
        "--seed",
        type=seed_option,
        default=0,
        help="seed index of the episodic experiment, 0-999 (0; its runs are replayed trial for "
        "trial)",
    )
    record.add_argument(
        "--revisit",
        type=positive_int,
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
        default=None,
        help="trial of the revisited episode: 1 (first, after the announced change) or 2 "
        "(the first after the paper's readout; default; with --recurring the default is 1)",
    )
    record.add_argument("--width", type=positive_int, default=320, help="panel width (320)")
    record.add_argument("--height", type=positive_int, default=240, help="panel height (240)")
    record.add_argument(
        "--every",
        type=positive_int,
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
    record.add_argument(
        "--recurring",
        metavar="NAME",
        help="record an environment of 'reproduce recurring-worlds' instead: "
        f"{', '.join(RECURRING_NAMES)} (MuJoCo; the classic-control ones would need pygame). Its "
        "episodic runs of --seed, segment BAM beside recursive Bayes (--methods: also gt and "
        "its other methods), on the 1st trial (--episode-trial) of world A's return "
        "(--revisit 2: B's); GIF recurring_NAME.gif unless --out",
    )
    record.add_argument(
        "--results",
        metavar="DIR",
        help="with --recurring: check each replayed return against DIR/trials.csv of "
        "'reproduce recurring-worlds'",
    )
