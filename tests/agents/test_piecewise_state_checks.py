"""Issue 39: the klUCB family's settings are checked once, by the constructor and by a
restored agent alike (crafted state files with a recomputed digest), sizes against the memory
budget before anything is allocated, and M-klUCB explores every arm of a large bandit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bam_rl.agents.klucb import (
    CUSUMKLUCB,
    GLRKLUCB,
    KLUCB,
    MonitoredKLUCB,
    OracleRestartKLUCB,
)
from bam_rl.agents.passive import DiscountedKLUCB, DiscountedThompson, Exp3S, SlidingWindowKLUCB
from bam_rl.checks import MEMORY_BUDGET_ENV
from bam_rl.serialization import FORMAT, read_archive, write_archive

AGENTS: dict[str, Any] = {
    "klucb": lambda: KLUCB(3, seed=0),
    "glr": lambda: GLRKLUCB(3, horizon=300, n_breakpoints=2, seed=0),
    "glr-global": lambda: GLRKLUCB(3, horizon=300, n_breakpoints=2, local=False, seed=0),
    "cusum": lambda: CUSUMKLUCB(3, horizon=300, n_breakpoints=2, warmup=5, seed=0),
    "m-klucb": lambda: MonitoredKLUCB(3, horizon=300, seed=0),
    "oracle": lambda: OracleRestartKLUCB(3, breakpoints=[20, 40], seed=0),
    "d-klucb": lambda: DiscountedKLUCB(3, seed=0),
    "d-klucb-ref": lambda: DiscountedKLUCB(3, variant="smpybandits-0.9.7", seed=0),
    "sw": lambda: SlidingWindowKLUCB(3, tau=12, seed=0),
    "dts": lambda: DiscountedThompson(3, seed=0),
    "exp3s": lambda: Exp3S(3, horizon=300, n_breakpoints=2, seed=0),
}

#: (agent, field, crafted value): each a state the constructor could not have made
CRAFTED: list[tuple[str, str, Any]] = [
    ("glr", "period", -2),
    ("glr", "period", 0),
    ("glr", "delta", 0.5),
    ("glr", "c", -1.0),
    ("glr", "c", {"__float__": "nan"}),
    ("glr", "c", True),
    ("glr", "local", "yes"),
    ("glr", "horizon", 0),
    ("glr", "check_every", 0),
    ("glr", "split_every", -3),
    ("glr", "n_restarts", -1),
    ("glr-global", "alpha", 2.0),
    ("cusum", "epsilon", 2.0),
    ("cusum", "epsilon", "0.1"),
    ("cusum", "warmup", 0),
    ("cusum", "threshold", -1.0),
    ("cusum", "horizon", 1),
    ("m-klucb", "gamma", 2.0),
    ("m-klucb", "period", 0),
    ("m-klucb", "window", 0),
    ("m-klucb", "b", -1.0),
    ("m-klucb", "last_restart", 10**6),
    ("m-klucb", "per_arm_restart", 1),
    ("oracle", "variant", "junk"),
    ("oracle", "breakpoints", [0, -5]),
    ("oracle", "breakpoints", [40, 20]),
    ("oracle", "breakpoints", "123"),
    ("d-klucb", "gamma", 2.0),
    ("d-klucb", "gamma", {"__float__": "nan"}),
    ("d-klucb", "gamma", "0.9"),
    ("d-klucb", "variant", "junk"),
    ("d-klucb", "t", -1),
    ("sw", "tau", 0),
    ("sw", "tau", 13),
    ("dts", "gamma", 1.0),
    ("dts", "variant", "junk"),
    ("exp3s", "gamma", 0.0),
    ("exp3s", "alpha", -1.0),
    ("exp3s", "horizon", None),
    ("klucb", "n_arms", 2),
    ("klucb", "n_arms", 0),
]

#: (agent, array, crafted values)
CRAFTED_ARRAYS: list[tuple[str, str, Any]] = [
    ("exp3s", "weights", np.zeros(3)),
    ("exp3s", "weights", np.array([0.5, -0.1, 0.6])),
    ("klucb", "pulls", np.array([-1.0, 0.0, 0.0])),
    ("klucb", "pulls", np.array([1e9, 0.0, 0.0])),
    ("glr", "restart_times", np.array([1e9, 0.0, 0.0])),
    ("glr", "history", np.full((3, 300), 7.0)),
    ("sw", "arms", np.full(12, 5, dtype=np.int64)),
    ("sw", "arms", np.full(12, -1, dtype=np.int64)),
    ("dts", "successes", np.array([-1.0, 0.0, 0.0])),
    ("m-klucb", "filled", np.full(3, 99, dtype=np.int64)),
    ("oracle", "changes", np.ones((3, 3), dtype=bool)),
    ("d-klucb", "last_pull", np.array([1e6, 0.0, 0.0])),
]


def _played(name: str) -> Any:
    agent = AGENTS[name]()
    rng = np.random.default_rng(0)
    for _ in range(60):
        arm = agent.act(0)
        agent.observe(arm, float(rng.random() < 0.3 + 0.2 * arm), 0, False, False, {})
    return agent


def _craft(tmp_path: Path, name: str, edit: Any) -> Path:
    source = tmp_path / f"{name}.npz"
    _played(name).save(source)
    document, arrays = read_archive(source, FORMAT, "bam-rl state")
    edit(document["root"]["state"], arrays)
    return write_archive(tmp_path / "crafted.npz", document, arrays)  # digest recomputed


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_saved_agent_loads_and_continues_identically(tmp_path: Path, name: str) -> None:
    agent = _played(name)
    agent.save(tmp_path / "a.npz")
    loaded = type(agent).load(tmp_path / "a.npz")
    for _ in range(30):
        arm = agent.act(0)
        assert loaded.act(0) == arm
        agent.observe(arm, 1.0, 0, False, False, {})
        loaded.observe(arm, 1.0, 0, False, False, {})


@pytest.mark.parametrize(("name", "field", "value"), CRAFTED)
def test_crafted_settings_are_refused_at_load(
    tmp_path: Path, name: str, field: str, value: Any
) -> None:
    def edit(state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        if isinstance(value, list):
            arrays[state[field]["__array__"]] = np.array(value, dtype=np.int64)
        else:
            state[field] = value

    path = _craft(tmp_path, name, edit)
    with pytest.raises(ValueError):
        type(AGENTS[name]()).load(path)


@pytest.mark.parametrize(("name", "field", "value"), CRAFTED_ARRAYS)
def test_crafted_arrays_are_refused_at_load(
    tmp_path: Path, name: str, field: str, value: Any
) -> None:
    def edit(state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        arrays[state[field]["__array__"]] = value

    path = _craft(tmp_path, name, edit)
    with pytest.raises(ValueError, match=field):
        type(AGENTS[name]()).load(path)


def test_strings_and_bools_are_not_numbers() -> None:
    for make, name in (
        (lambda: DiscountedKLUCB(3, gamma="0.9"), "gamma"),
        (lambda: DiscountedThompson(3, gamma="0.9"), "gamma"),
        (lambda: CUSUMKLUCB(3, horizon=100, n_breakpoints=1, epsilon="0.1"), "epsilon"),
        (lambda: GLRKLUCB(3, horizon=100, n_breakpoints=1, c=True), "c must"),
        (lambda: GLRKLUCB(3, horizon=100, n_breakpoints=1, local=1), "local"),
        (lambda: GLRKLUCB(3, horizon=100.0, n_breakpoints=1), "horizon"),
        (lambda: Exp3S(3, horizon=100, n_breakpoints=True), "n_breakpoints"),
        (lambda: MonitoredKLUCB(3, horizon=100, n_breakpoints="2"), "n_breakpoints"),
        (lambda: SlidingWindowKLUCB(3, tau=2e8), "tau"),
    ):
        with pytest.raises(ValueError, match=name):
            make()


@pytest.mark.parametrize("breakpoints", ["123", [2.7], 5, 1e400, [3, 2], [5, 5], [0, 4], [True]])
def test_breakpoints_must_be_increasing_ints(breakpoints: Any) -> None:
    with pytest.raises(ValueError, match="breakpoints"):
        OracleRestartKLUCB(3, breakpoints=breakpoints)


def test_breakpoints_as_given_are_kept() -> None:
    agent = OracleRestartKLUCB(2, breakpoints=(3, np.int64(7)))
    assert agent.breakpoints.tolist() == [3, 7] and agent.breakpoints.dtype == np.int64
    assert OracleRestartKLUCB(2, breakpoints=[]).breakpoints.size == 0


def test_refusals_name_the_argument_given() -> None:
    with pytest.raises(ValueError, match="horizon") as error:
        SlidingWindowKLUCB(3, horizon=1, n_breakpoints=1)
    assert "got 0" not in str(error.value)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: GLRKLUCB(3, horizon=10**12, n_breakpoints=1), "horizon"),
        (lambda: GLRKLUCB(3, horizon=10**9, n_breakpoints=1, local=False), "horizon"),
        (lambda: CUSUMKLUCB(3, horizon=10**12, n_breakpoints=1), "horizon"),
        (lambda: MonitoredKLUCB(3, horizon=10**12), "horizon"),
        (lambda: MonitoredKLUCB(3, horizon=1000, window=10**10), "window"),
        (lambda: SlidingWindowKLUCB(3, tau=2 * 10**8), "tau"),
        (lambda: SlidingWindowKLUCB(3, horizon=10**30, n_breakpoints=1), "horizon"),
        (lambda: KLUCB(10**12), "n_arms"),
    ],
)
def test_sizes_beyond_the_memory_budget_are_refused_before_allocating(
    monkeypatch: pytest.MonkeyPatch, make: Any, name: str
) -> None:
    monkeypatch.setenv(MEMORY_BUDGET_ENV, str(2**30))
    with pytest.raises(ValueError, match=name):
        make()


def test_m_klucb_explores_every_arm_of_a_large_bandit() -> None:
    """With more than 100 arms the fallback rate 0.01 K exceeds 1: clipped to 1 (SMPyBandits'
    Monitored_UCB.py), every arm is explored; unclipped, arms 100 and up never were."""
    agent = MonitoredKLUCB(150, horizon=2000, seed=0)
    assert agent.gamma == 1.0
    means = np.full(150, 0.1)
    means[149] = 0.9
    rng = np.random.default_rng(0)
    pulls = np.zeros(150)
    for _ in range(2000):
        arm = agent.act(0)
        pulls[arm] += 1
        agent.observe(arm, float(rng.random() < means[arm]), 0, False, False, {})
    assert pulls[100:].min() > 0 and pulls[149] > 0
    for n_arms in (2, 3, 5, 10):  # the benchmark's problems: the formula, unchanged
        small = MonitoredKLUCB(n_arms, horizon=5000)
        assert small.gamma < 1.0 and small.period == int(np.ceil(n_arms / small.gamma))
