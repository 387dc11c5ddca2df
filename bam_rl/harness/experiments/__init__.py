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
    #: whether its ``reproduce`` takes ``backend`` (runs through :func:`~bam_rl.harness.run_many`)
    backend: bool = False


#: The experiments of ``bam-rl reproduce``, in the paper's order: name -> entry.
EXPERIMENTS: dict[str, Experiment] = {
    "tracking": Experiment("bam_rl.harness.experiments.tracking"),
    "cartpole-episodic": Experiment(
        "bam_rl.harness.experiments.cartpole", "reproduce_episodic", "claims_episodic", True
    ),
    "cartpole-continual": Experiment(
        "bam_rl.harness.experiments.cartpole", "reproduce_continual", "claims_continual", True
    ),
    # why §4.2's one-shot recovery does not reproduce (an analysis of the paper's BAM agent)
    "cartpole-readout": Experiment("bam_rl.harness.experiments.cartpole_readout"),
    "bandits": Experiment("bam_rl.harness.experiments.bandits", backend=True),
    "mnist": Experiment("bam_rl.harness.experiments.mnist"),
    # beyond the paper: Besson et al.'s piecewise-stationary benchmark
    "piecewise-bandits": Experiment("bam_rl.harness.experiments.piecewise"),
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


def takes_backend(name: str) -> bool:
    """Whether ``bam-rl reproduce name`` accepts ``--backend``."""
    return _entry(name).backend
