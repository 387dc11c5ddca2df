"""Paper experiments: each returns tidy frames, summaries and figures.

:data:`REPRODUCTIONS` maps the names accepted by ``bam-rl reproduce`` to functions
``reproduce(out, seeds=None, quick=False, n_jobs=1, progress=True) -> summary frame``, and
:func:`get_claims` to each experiment's ``claims(folder) -> list[dict]`` (the rows of the
report's claim table, :mod:`bam_rl.harness.report`).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

import pandas as pd

_MODULES = {
    "tracking": "bam_rl.harness.experiments.tracking",
    "cartpole-episodic": "bam_rl.harness.experiments.cartpole:reproduce_episodic",
    "cartpole-continual": "bam_rl.harness.experiments.cartpole:reproduce_continual",
    "bandits": "bam_rl.harness.experiments.bandits",
    "mnist": "bam_rl.harness.experiments.mnist",
}


def get_reproduction(name: str) -> Callable[..., pd.DataFrame]:
    """The ``reproduce`` function of experiment ``name`` (imported on demand)."""
    if name not in _MODULES:
        raise ValueError(f"experiment must be one of {sorted(_MODULES)}, got {name!r}")
    module, _, function = _MODULES[name].partition(":")
    return getattr(import_module(module), function or "reproduce")


def get_claims(name: str) -> Callable[..., list[dict[str, str]]]:
    """The ``claims(folder)`` function of experiment ``name``: the paper's claims (§4) with
    the numbers measured in ``folder`` (``None``: every claim "not run")."""
    if name not in _MODULES:
        raise ValueError(f"experiment must be one of {sorted(_MODULES)}, got {name!r}")
    module, _, function = _MODULES[name].partition(":")
    suffix = function.removeprefix("reproduce")  # "_episodic" for the cart-pole settings
    return getattr(import_module(module), f"claims{suffix}")


REPRODUCTIONS = tuple(_MODULES)
