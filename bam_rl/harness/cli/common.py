"""What the commands of ``bam-rl`` share: the argument types with their bounds and messages,
the checks of output folders and files (usage errors, exit 2, before any work), and the
splitting of repeated, comma-separated names. Each command module imports what it uses.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Bounds of the budget options (rows are held in memory until a run is written).
MAX_STEPS = 10_000_000
MAX_EPISODES = 1_000_000
MAX_SEEDS = 100_000
#: Largest seed (seeds are stored in int64 columns).
MAX_SEED = 2**63 - 1


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def bounded_int(maximum: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in ``[1, maximum]``, with ``what`` explaining the bound."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(
                f"expected a positive integer <= {maximum:,}, got {text!r} ({what})"
            )
        return value

    parse.__name__ = "bounded int"  # argparse names the type in some messages
    return parse


steps_option = bounded_int(
    MAX_STEPS,
    "a run's rows are held in memory, about 100 bytes a step; "
    "split longer studies into several runs",
)
episodes_option = bounded_int(MAX_EPISODES, "a run's rows are held in memory")
seeds_option = bounded_int(MAX_SEEDS, "one run per seed")


def seed_option(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, 2**63 - 1], got {text!r}")
    return value


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


def jobs_option(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    from bam_rl.harness.sweeps import check_jobs

    try:
        return check_jobs(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("n_jobs", "J")) from None


def shard_option(text: str) -> tuple[int, int]:
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


def finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(
            f"the number {text} is beyond float64 (magnitude at most about 1.8e308)"
        )
    return value


def bounded_json_int(text: str) -> int:
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


def no_constant(text: str) -> Any:
    raise argparse.ArgumentTypeError(
        f"{text} is not a number JSON allows (give a finite number, or null)"
    )


def json_object(text: str) -> dict[str, Any]:
    """A JSON object of keyword arguments; every number in it finite and within float64 (a
    ``1e400``, ``Infinity`` or ``NaN`` is refused) and every integer within int64."""
    try:
        value = json.loads(
            text,
            parse_float=finite_float,
            parse_int=bounded_json_int,
            parse_constant=no_constant,
        )
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON ({error}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


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
