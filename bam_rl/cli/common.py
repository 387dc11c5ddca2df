"""What the commands of ``bam-rl`` share: the argument types with their bounds and messages
(:mod:`bam_rl.harness.argtypes`, which the drills use too),
the checks of output folders and files (usage errors, exit 2, before any work), and the
splitting of repeated, comma-separated names. Each command module imports what it uses.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bam_rl.harness.argtypes import (  # the value types, shared with the drills
    MAX_EPISODES,
    MAX_JSON_INT,
    MAX_SEED,
    MAX_SEEDS,
    MAX_STEPS,
    bounded_int,
    bounded_json_int,
    episodes_option,
    finite_float,
    jobs_option,
    json_object,
    no_constant,
    positive_int,
    seed_option,
    seeds_option,
    shard_option,
    steps_option,
)

__all__ = [
    "MAX_EPISODES",
    "MAX_JSON_INT",
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_STEPS",
    "bounded_int",
    "bounded_json_int",
    "command",
    "docstring_summary",
    "episodes_option",
    "finite_float",
    "jobs_option",
    "json_object",
    "no_constant",
    "output_directory",
    "output_file",
    "positive_int",
    "run_writing",
    "seed_option",
    "seeds_option",
    "shard_option",
    "split_names",
    "steps_option",
]


def _unwritable(folder: Path) -> str | None:
    """Creates ``folder`` if needed and writes a temporary file in it; why that failed, or
    ``None`` when it worked (a read-only mount or a full disk show here, before any work)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


def output_directory(parser: argparse.ArgumentParser, out: str | None) -> Path | None:
    """Creates ``--out`` if needed; a usage error (exit 2) if it is a file or not writable."""
    if out is None:
        return None
    if not out.strip():
        parser.error(f"--out {out!r} is empty; give a directory (--out . for this one)")
    path = Path(out)
    if path.exists() and not path.is_dir():
        parser.error(f"--out {out!r} is an existing file; give a directory")
    reason = _unwritable(path)
    if reason is not None:
        parser.error(f"--out {out!r} is not a writable directory ({reason})")
    if not os.access(path, os.W_OK | os.X_OK):  # pragma: no cover - caught above on POSIX
        parser.error(f"--out {out!r} is not a writable directory")
    return path


def output_file(parser: argparse.ArgumentParser, option: str, out: str | None) -> Path | None:
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
    reason = _unwritable(folder)
    if reason is not None:
        parser.error(f"{option} {out!r}: its folder {str(folder)!r} is not writable ({reason})")
    if path.exists() and not os.access(path, os.W_OK):
        parser.error(f"{option} {out!r} exists and is not writable")
    return path


def run_writing(
    parser: argparse.ArgumentParser, run: Callable[[], int], outputs: dict[str, str | None]
) -> int:
    """Checks the output files ``outputs`` (option -> path, as :func:`output_file`) before any
    work, then returns ``run()``; an ``OSError`` while it runs (e.g. the disk filled up) ends
    the command with exit 1 and one line, not a traceback."""
    for option, out in outputs.items():
        output_file(parser, option, out)
    try:
        return run()
    except OSError as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")


def split_names(values: Sequence[str] | None) -> list[str]:
    """``["a,b", "c"] -> ["a", "b", "c"]`` (repeated and comma-separated options), unique."""
    names: list[str] = []
    for value in values or ():
        for name in value.split(","):
            name = name.strip()
            if name and name not in names:
                names.append(name)
    return names


def docstring_summary(function: Callable[..., Any]) -> str:
    """The first paragraph of ``function``'s docstring on one line (whole sentences, never
    its first line only), without reST literal quotes."""
    paragraph = (function.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("``", "")


def command(
    commands: Any,
    name: str,
    handler: Callable[[argparse.Namespace, argparse.ArgumentParser], int],
    help: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A command's subparser (``help``: its line in ``bam-rl --help``), with its handler and
    itself set as defaults: ``main`` calls ``args.handler(args, args.parser)``."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler, parser=parser)
    return parser
