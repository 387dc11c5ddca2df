"""The argparse value types of ``bam-rl`` and of the drills' own command lines: each parses one
value and refuses it with its bound in the message (argparse turns that into a usage error,
exit 2). The commands take them through :mod:`bam_rl.cli.common`; the drills
(:mod:`bam_rl.drills`, below the CLI) import them from here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
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
