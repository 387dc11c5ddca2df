"""Paper experiments: each returns tidy frames, summaries and figures.

:data:`EXPERIMENTS` is the one table of them: each name accepted by ``bam-rl reproduce``
with the module and names of its ``reproduce(out, seeds=None, quick=False, n_jobs=1,
progress=True) -> summary frame`` (:func:`get_reproduction`) and its ``claims(folder) ->
list[dict]`` (:func:`get_claims`, the rows of the report's claim table,
:mod:`bam_rl.harness.report`). :data:`REPRODUCTIONS` lists the names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

import pandas as pd


@dataclass(frozen=True)
class Experiment:
    """One entry of :data:`EXPERIMENTS`: where an experiment's functions live (imported on
    first use, so ``bam-rl --help`` does not load every experiment's dependencies)."""

    module: str
    reproduce: str = "reproduce"
    claims: str = "claims"


#: The experiments of ``bam-rl reproduce``, in the paper's order: name -> entry.
EXPERIMENTS: dict[str, Experiment] = {
    "tracking": Experiment("bam_rl.harness.experiments.tracking"),
    "cartpole-episodic": Experiment(
        "bam_rl.harness.experiments.cartpole", "reproduce_episodic", "claims_episodic"
    ),
    "cartpole-continual": Experiment(
        "bam_rl.harness.experiments.cartpole", "reproduce_continual", "claims_continual"
    ),
    "bandits": Experiment("bam_rl.harness.experiments.bandits"),
    "mnist": Experiment("bam_rl.harness.experiments.mnist"),
}


def _entry(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    return EXPERIMENTS[name]


def get_reproduction(name: str) -> Callable[..., pd.DataFrame]:
    """The ``reproduce`` function of experiment ``name`` (imported on demand)."""
    entry = _entry(name)
    return getattr(import_module(entry.module), entry.reproduce)


def get_claims(name: str) -> Callable[..., list[dict[str, str]]]:
    """The ``claims(folder)`` function of experiment ``name``: the paper's claims (§4) with
    the numbers measured in ``folder`` (``None``: every claim "not run")."""
    entry = _entry(name)
    return getattr(import_module(entry.module), entry.claims)


REPRODUCTIONS = tuple(EXPERIMENTS)
