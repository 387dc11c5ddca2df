"""Issue 39: the state files of RandomAgent and BeliefTracker, and the open segment of the
segment agents' SegmentBAM, are checked as the constructors (and updates) check them: a
crafted file with a recomputed digest is refused at load, where it used to fail only while
acting (an AttributeError, a count refused against ``n_trials = -15``, a readout overflow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from agents_testutils import assert_crafted_state_file_refused

from bam_rl.agents.bandits import ThompsonSampling
from bam_rl.agents.random_agent import RandomAgent
from bam_rl.agents.tracking import BeliefTracker
from bam_rl.beliefs import BAM, BOCD
from bam_rl.families import BetaBinomial
from bam_rl.harness.runner import check_fit
from bam_rl.serialization import FORMAT, read_archive, write_archive

BOX = gym.spaces.Box(
    np.array([-1.0, 0.0], np.float32), np.array([1.0, np.inf], np.float32), dtype=np.float32
)


def _played_random(space: gym.Space) -> RandomAgent:
    agent = RandomAgent(space, seed=0)
    for _ in range(5):
        agent.act(0)
    return agent


def _played_tracker(rule: Any, n_trials: int | None = 15) -> BeliefTracker:
    agent = BeliefTracker(rule, n_trials=n_trials, seed=0)
    agent.reset(0, {})
    for k in range(12):
        action = agent.act(0)
        agent.observe(action, 0.0, k % 16, False, False, {})
    return agent


def _played_segments() -> ThompsonSampling:
    agent = ThompsonSampling.gaussian(3, "bam_segments", hazard=0.016, seed=0)
    for k in range(20):
        arm = agent.act(0)
        agent.observe(arm, float((k * 7 + arm) % 3 == 0), 0, False, False, {})
    return agent


AGENTS: dict[str, Any] = {
    "random-discrete": lambda: _played_random(gym.spaces.Discrete(10)),
    "random-box": lambda: _played_random(BOX),
    "tracker-bam": lambda: _played_tracker(BAM(BetaBinomial(), lam=0.1)),
    "tracker-bocd": lambda: _played_tracker(BOCD(BetaBinomial(), 0.016)),
    "tracker-from-info": lambda: _played_tracker(BOCD(BetaBinomial(), 0.016), None),
    "thompson-segments": _played_segments,
}


def _array(state: dict[str, Any], arrays: dict[str, np.ndarray], name: str) -> np.ndarray:
    return arrays[state[name]["__array__"]]


def _set_array(state: dict[str, Any], arrays: dict[str, np.ndarray], name: str, value: Any) -> None:
    arrays[state[name]["__array__"]] = np.asarray(value)


def _open_datum(state: dict[str, Any]) -> dict[str, Any]:
    """The fields of the last datum of the first arm's open segment that holds one."""
    for rule in state["rules"]["__list__"]:
        data = rule["state"]["_open"]["__list__"]
        if data:
            fields: dict[str, Any] = data[-1]["fields"]["__dict__"]
            return fields
    raise AssertionError("no open segment holds a datum")


#: (agent, description, edit of the root state and arrays)
EDITS: list[tuple[str, str, Any]] = [
    ("random-discrete", "no kind", lambda s, a: s.pop("kind")),
    ("random-discrete", "kind inf", lambda s, a: s.update(kind={"__float__": "inf"})),
    ("random-discrete", "kind -1", lambda s, a: s.update(kind=-1)),
    ("random-discrete", "kind true", lambda s, a: s.update(kind=True)),
    ("random-discrete", "kind box without bounds", lambda s, a: s.update(kind="box")),
    ("random-discrete", "no n", lambda s, a: s.pop("n")),
    ("random-discrete", "n 0", lambda s, a: s.update(n=0)),
    ("random-discrete", "n a float", lambda s, a: s.update(n=10.0)),
    ("random-discrete", "start -1.0", lambda s, a: s.update(start=-1.0)),
    ("random-discrete", "start past int64", lambda s, a: s.update(start=2**63 - 5)),
    ("random-box", "no low", lambda s, a: s.pop("low")),
    ("random-box", "dtype junk", lambda s, a: s.update(dtype="x")),
    ("random-box", "dtype object", lambda s, a: s.update(dtype="O")),
    ("random-box", "dtype a number", lambda s, a: s.update(dtype=3)),
    ("random-box", "low NaN", lambda s, a: _set_array(s, a, "low", [np.nan, 0.0])),
    ("random-box", "low above high", lambda s, a: _set_array(s, a, "low", [2.0, 0.0])),
    ("random-box", "low of another shape", lambda s, a: _set_array(s, a, "low", [-1.0])),
    ("random-box", "low beyond float32", lambda s, a: _set_array(s, a, "low", [-1e300, 0.0])),
    ("random-box", "bounds of strings", lambda s, a: _set_array(s, a, "high", ["a", "b"])),
    ("tracker-bam", "no n_trials_given", lambda s, a: s.pop("n_trials_given")),
    ("tracker-bocd", "no n_trials_given", lambda s, a: s.pop("n_trials_given")),
    ("tracker-bam", "n_trials -15", lambda s, a: s.update(n_trials=-15)),
    ("tracker-bam", "n_trials not the given", lambda s, a: s.update(n_trials=20)),
    ("tracker-bam", "n_trials_given true", lambda s, a: s.update(n_trials_given=True)),
    ("tracker-bam", "n_trials_given 0", lambda s, a: s.update(n_trials_given=0)),
    ("tracker-from-info", "n_trials 0", lambda s, a: s.update(n_trials=0)),
    ("tracker-from-info", "n_trials 2.5", lambda s, a: s.update(n_trials=2.5)),
    ("tracker-bam", "last_count -8", lambda s, a: s.update(last_count=-8.0)),
    ("tracker-bam", "last_count 2.5", lambda s, a: s.update(last_count=2.5)),
    ("tracker-bam", "last_count a string", lambda s, a: s.update(last_count="x")),
    ("tracker-bam", "rule a number", lambda s, a: s.update(rule=-1)),
    ("tracker-bam", "no rule", lambda s, a: s.pop("rule")),
    (
        "thompson-segments",
        "open datum of precision_mean 1e300",
        lambda s, a: _set_array(_open_datum(s), a, "precision_mean", 1e300),
    ),
    (
        "thompson-segments",
        "open datum of negative precision",
        lambda s, a: _set_array(_open_datum(s), a, "precision", -50.0),
    ),
]


@pytest.mark.parametrize(
    ("name", "description", "edit"), EDITS, ids=[f"{e[0]}: {e[1]}" for e in EDITS]
)
def test_crafted_state_files_are_refused(
    tmp_path: Path, name: str, description: str, edit: Any
) -> None:
    assert_crafted_state_file_refused(tmp_path, AGENTS[name](), edit)


def test_a_random_agent_of_another_space_loads_and_the_run_loop_refuses_it(
    tmp_path: Path,
) -> None:
    """``n = 10**9`` is a valid RandomAgent (of ``Discrete(10**9)``): it loads, and
    ``check_fit`` (the run loop's) refuses it for a 10-armed bandit before any step."""
    source = _played_random(gym.spaces.Discrete(10)).save(tmp_path / "agent.npz")
    document, arrays = read_archive(source, FORMAT, "bam-rl state")
    document["root"]["state"]["n"] = 10**9
    agent = RandomAgent.load(write_archive(tmp_path / "crafted.npz", document, arrays))
    assert 0 <= agent.act(0) < 10**9
    env = gym.make("bam_rl/SwitchingBandit-v0")
    with pytest.raises(ValueError, match="acts in Discrete"):
        check_fit(env, agent)


def test_random_agent_refuses_a_box_it_cannot_draw_from() -> None:
    """A bounded Box too wide for a float64 uniform draw was accepted, then ``act`` raised
    OverflowError; the constructor's check (shared with the restore) refuses it."""
    space = gym.spaces.Box(-1e308, 1e308, shape=(2,), dtype=np.float64)
    with pytest.raises(ValueError, match="low and high"):
        RandomAgent(space, seed=0)


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Discrete(4, start=-2),
        BOX,
        gym.spaces.Box(0, 5, shape=(3,), dtype=np.int64),
        gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64),
    ],
    ids=repr,
)
def test_random_agent_round_trips_valid_spaces(tmp_path: Path, space: gym.Space) -> None:
    agent = _played_random(space)
    loaded = RandomAgent.load(agent.save(tmp_path / "agent.npz"))
    for _ in range(5):
        assert np.array_equal(np.asarray(loaded.act(0)), np.asarray(agent.act(0)))


def test_tracker_constructor_checks_are_unchanged() -> None:
    rule = BAM(BetaBinomial())
    bad: Any
    for bad in (0, -15, 2.0, True):
        with pytest.raises(ValueError, match="n_trials"):
            BeliefTracker(rule, n_trials=bad)
    with pytest.raises(ValueError, match="rule"):
        BeliefTracker("bam")  # type: ignore[arg-type]
    assert BeliefTracker(rule).n_trials == 15 and BeliefTracker(rule, 7).n_trials == 7
