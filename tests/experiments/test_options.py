"""The public ``reproduce`` and ``claims`` that :mod:`bam_rl.experiments.options`
makes: every experiment shows the documented signatures, and their type hints resolve."""

from __future__ import annotations

import importlib
import inspect
import typing

import pytest

from bam_rl import experiments

COMMON = ["out", "seeds", "quick", "n_jobs", "progress"]


@pytest.mark.parametrize("name", experiments.REPRODUCTIONS)
def test_reproduce_and_claims_show_their_public_signatures(name):
    entry = experiments.get_entry(name)
    module = importlib.import_module(entry.module)
    # the decorated run (cart-pole's reproduce_episodic/continual forward to it)
    reproduce, claims = module.reproduce, getattr(module, entry.claims)
    parameters = inspect.signature(reproduce).parameters
    assert list(parameters)[:5] == COMMON
    assert [parameters[p].default for p in COMMON[1:]] == [None, False, 1, True]
    assert list(inspect.signature(claims).parameters) == ["folder"]
    assert "folder" in typing.get_type_hints(claims)
    assert "out" in typing.get_type_hints(reproduce)  # resolvable, not a NameError
    assert claims(None) and all(row["holds"] == "not run" for row in claims(None))
