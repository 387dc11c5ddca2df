"""The run options every experiment's ``reproduce`` takes, written and defaulted once.

Each experiment module decorates its run with :func:`reproduction`, which turns a function
of a :class:`RunOptions` (and the experiment's own keyword arguments) into the public
``reproduce(out, seeds=None, quick=False, n_jobs=1, progress=True, ...)`` that
``bam-rl reproduce`` and the tests call (:data:`~bam_rl.experiments.EXPERIMENTS`),
and its claim rows with :func:`claims_from`, which makes the public ``claims(folder)`` (the
file read once, every claim "not run" without it).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bam_rl.experiments import report
from bam_rl.harness import files


@dataclass(frozen=True)
class RunOptions:
    """One reproduction's common options, with the experiment's defaults filled in.

    Attributes:
        out: The output directory (created before the run starts).
        seeds: Seeds (or runs) to run: the caller's, else the experiment's default.
        quick: The smoke-test size.
        n_jobs: Parallel workers.
        progress: Show a progress bar.
        seeds_given: Whether the caller chose ``seeds`` (``False``: the default was used).
    """

    out: Path
    seeds: int
    quick: bool
    n_jobs: int
    progress: bool
    seeds_given: bool


def sweep_backend(backend: str | None, n_jobs: int) -> str:
    """Where :func:`~bam_rl.harness.run_many` runs an experiment's sweep: ``backend``, else
    serial for one job and loky for more."""
    return backend or ("serial" if n_jobs == 1 else "loky")


def reproduction(
    *, default_seeds: int, quick_seeds: int
) -> Callable[[Callable[..., pd.DataFrame]], Callable[..., pd.DataFrame]]:
    """Makes an experiment's ``reproduce`` from its run ``run(options, *args, **kwargs)``.

    The result takes ``(out, seeds=None, quick=False, n_jobs=1, progress=True)`` followed by
    the run's own parameters after ``options``, creates ``out``, and calls the run with a
    :class:`RunOptions` whose ``seeds`` defaults to ``quick_seeds`` under ``quick``, else to
    ``default_seeds``. It keeps the run's name and docstring (whose ``Args`` describe the public
    parameters), and its signature lists every parameter it accepts.

    Args:
        default_seeds: The number of seeds (or runs) of a full reproduction.
        quick_seeds: The default under ``quick``.
    """

    def decorate(run: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
        # the run's name and docstring, not its annotations (those of ``options`` and its own)
        @functools.wraps(run, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
        def reproduce(
            out: str | Path,
            seeds: int | None = None,
            quick: bool = False,
            n_jobs: int = 1,
            progress: bool = True,
            *args: Any,
            **kwargs: Any,
        ) -> pd.DataFrame:
            folder = Path(out)
            folder.mkdir(parents=True, exist_ok=True)
            options = RunOptions(
                out=folder,
                seeds=seeds if seeds is not None else (quick_seeds if quick else default_seeds),
                quick=quick,
                n_jobs=n_jobs,
                progress=progress,
                seeds_given=seeds is not None,
            )
            return run(options, *args, **kwargs)

        # the public parameters, then the run's own (inspect.signature would otherwise follow
        # __wrapped__ to the run's ``options``)
        common = list(inspect.signature(reproduce, follow_wrapped=False).parameters.values())[:5]
        own = list(inspect.signature(run).parameters.values())[1:]
        reproduce.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            common + own, return_annotation=inspect.signature(run).return_annotation
        )
        # typing.get_type_hints would read these annotations in the run's module
        del reproduce.__wrapped__
        return reproduce

    return decorate


#: An experiment's claim rows: the rows of ``claims(folder)`` from the frame it reads.
ClaimRows = Callable[[pd.DataFrame], list[dict[str, str]]]


def claims_from(
    name: str, experiment: str, section: str, texts: Sequence[str], **read_csv: Any
) -> Callable[[ClaimRows], Callable[[str | Path | None], list[dict[str, str]]]]:
    """Makes an experiment's ``claims(folder)`` from its rows of ``folder/name`` (read with
    ``read_csv``): ``None`` or a missing file makes every claim of ``texts`` "not run"
    (:func:`~bam_rl.experiments.report.not_run` for ``experiment`` and ``section``).

    Args:
        name: The file of the experiment's output folder the rows are read from.
        experiment: The experiment's name (the "not run" rows').
        section: The paper's section, or ``"beyond the paper"``.
        texts: The claims, in the order the rows give them.
        **read_csv: Keyword arguments of :func:`pandas.read_csv`.
    """

    def decorate(rows: ClaimRows) -> Callable[[str | Path | None], list[dict[str, str]]]:
        # the rows' name and docstring; the signature and annotations are claims(folder)'s
        @functools.wraps(rows, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
        def claims(folder: str | Path | None) -> list[dict[str, str]]:
            frame = files.read_results(folder, name, **read_csv)
            return report.not_run(experiment, section, texts) if frame is None else rows(frame)

        del claims.__wrapped__
        return claims

    return decorate


__all__ = ["ClaimRows", "RunOptions", "claims_from", "reproduction", "sweep_backend"]
