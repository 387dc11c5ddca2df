"""State files written by the code at commit 034ed49 (before the settings of the agents were
checked on restore) load with the current code and continue as the old code did.

``tests/data/legacy_034ed49`` holds one small file per agent registered then, written by
``scripts/development/write_legacy_state_files.py`` with that commit's code on ``PYTHONPATH``, and
in ``expected.json`` the steps that code's agent took after the save. Each file is loaded, fed the
recorded steps (observation, reward, next observation, info and resets: no environment runs)
and must choose the recorded actions: integers exactly, floats to a relative 1e-4 (MPPI plans
through BLAS and MuJoCo, whose rounding differs between processors and releases: a fresh
install with mujoco 4.0.0 and numpy 2.4.6 chose -0.30150458 where the file's run chose
-0.30149865, 2e-5 apart relatively; a wrong belief or model moves an action by far more).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bam_rl.agents.passive import Exp3S
from bam_rl.serialization import load_object, save_object

DATA = Path(__file__).resolve().parents[1] / "data" / "legacy_034ed49"
EXPECTED = json.loads((DATA / "expected.json").read_text())["agents"]


def decode(value: Any) -> Any:
    """The inverse of the script's ``encode``."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "ndarray" in value:
        return np.array(decode(value["ndarray"]), dtype=value["dtype"])
    if "scalar" in value:
        return np.dtype(value["dtype"]).type(decode(value["scalar"]))
    if "dict" in value:
        return {decode(k): decode(v) for k, v in value["dict"]}
    if "float" in value:
        return float(value["float"])
    raise AssertionError(f"unknown entry {value!r}")


def test_the_set_covers_every_agent_registered_at_034ed49():
    assert len(EXPECTED) == 30 and "exp3s" in EXPECTED and "mppi-bam-segments" in EXPECTED
    assert sorted(p.name for p in DATA.glob("*.npz")) == sorted(
        record["file"] for record in EXPECTED.values()
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_034ed49_state_file_loads_and_continues_as_the_old_code_did(name):
    record = EXPECTED[name]
    agent = load_object(DATA / record["file"])
    assert f"{type(agent).__module__}.{type(agent).__qualname__}" == record["class"]
    for i, step in enumerate(record["continued"]):
        action = decode(step["action"])
        chosen = agent.act(decode(step["observation"]))
        if np.asarray(action).dtype.kind == "f":
            np.testing.assert_allclose(chosen, action, rtol=1e-4, atol=1e-6, err_msg=f"step {i}")
        else:
            assert np.array_equal(chosen, action), f"step {i}: {chosen!r} != {action!r}"
        agent.observe(  # the old run's action, so a rounding difference does not grow
            action,
            decode(step["reward"]),
            decode(step["next_observation"]),
            step["terminated"],
            step["truncated"],
            decode(step["info"]),
        )
        if "reset" in step:
            agent.reset(decode(step["reset"]["observation"]), decode(step["reset"]["info"]))


def test_an_old_exp3s_keeps_its_rates_and_saves_and_loads_again(tmp_path):
    old = load_object(DATA / EXPECTED["exp3s"]["file"])
    fresh = Exp3S(3, horizon=200, n_breakpoints=2, seed=0)  # the file's tuning
    assert (old.horizon, old.n_breakpoints) == (None, None)
    assert (old.gamma, old.alpha) == (fresh.gamma, fresh.alpha)
    again = load_object(save_object(old, tmp_path / "again.npz") or tmp_path / "again.npz")
    assert (again.gamma, again.alpha, again.horizon) == (old.gamma, old.alpha, None)
    assert again.act(0) == old.act(0)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"gamma": 1.5}, "gamma must be"),
        ({"alpha": 0.0}, "alpha must be"),
        ({"alpha": math.nan}, "alpha must be"),
        ({"gamma": "0.5"}, "gamma must be"),
        ({"n_breakpoints": 2}, "horizon must be given"),  # half a tuning: refused as before
    ],
)
def test_an_old_exp3s_with_rates_out_of_range_is_refused(tmp_path, change, message):
    old = load_object(DATA / EXPECTED["exp3s"]["file"])
    state = vars(old)
    del state["horizon"], state["n_breakpoints"]
    state.update(change)
    path = save_object(old, tmp_path / "bad.npz") or tmp_path / "bad.npz"
    with pytest.raises(ValueError, match=message):
        load_object(path)


def test_the_constructor_still_needs_the_tuning():
    with pytest.raises(ValueError, match="horizon must be given"):
        Exp3S(3)
    with pytest.raises(ValueError, match="n_breakpoints must be given"):
        Exp3S(3, horizon=100)
