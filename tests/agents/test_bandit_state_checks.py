"""Issue 39: the state files of Thompson sampling, UCBAM, segment UCBAM and SegmentBAM (the
segment agents' rule) are checked as the constructors check their arguments: a crafted file
with a recomputed digest is refused at load (e.g. two rules for three arms, which left arm 2
never pulled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agents_testutils import assert_crafted_state_file_refused

from bam_rl.agents.bandits import UCB, ThompsonSampling
from bam_rl.agents.ucbam import UCBAM, SegmentUCBAM
from bam_rl.beliefs import SegmentBAM
from bam_rl.families import BetaBinomial

AGENTS: dict[str, Any] = {
    "thompson-bam": lambda: ThompsonSampling.bernoulli(3, "bam", seed=0),
    "thompson-bocd": lambda: ThompsonSampling.gaussian(3, "bocd", hazard=0.1, seed=0),
    "thompson-fast": lambda: ThompsonSampling.gaussian(3, "recursive", seed=0),
    "thompson-fast-beta": lambda: ThompsonSampling.bernoulli(3, "recursive", seed=0),
    "thompson-segments": lambda: ThompsonSampling.bernoulli(3, "bam_segments", hazard=0.1, seed=0),
    "ucbam": lambda: UCBAM(3, BetaBinomial(), seed=0),
    "ucbam-segments": lambda: SegmentUCBAM(3, BetaBinomial(), hazard=0.1, seed=0),
    "ucb": lambda: UCB(3, seed=0),
}


def _played(name: str) -> Any:
    agent = AGENTS[name]()
    for k in range(30):
        arm = agent.act(0)
        agent.observe(arm, float((k * 7 + arm) % 3 == 0), 0, False, False, {})
    return agent


def _list(state: dict[str, Any], name: str) -> list[Any]:
    return state[name]["__list__"]


def _segment_rule(state: dict[str, Any]) -> dict[str, Any]:
    return _list(state, "rules")[0]["state"]


def _set(rule: dict[str, Any], name: str, value: Any) -> None:
    rule[name] = value


#: (agent, description, edit of the root state and arrays)
EDITS: list[tuple[str, str, Any]] = [
    ("thompson-bam", "2 rules for 3 arms", lambda s, a: _list(s, "rules").pop()),
    ("thompson-bocd", "2 rules for 3 arms", lambda s, a: _list(s, "rules").pop()),
    ("thompson-segments", "2 rules for 3 arms", lambda s, a: _list(s, "rules").pop()),
    (
        "thompson-bam",
        "4 rules for 3 arms",
        lambda s, a: _list(s, "rules").append(_list(s, "rules")[0]),
    ),
    ("thompson-bam", "another rule name", lambda s, a: s.update(rule_name="BOCD")),
    ("thompson-fast", "fast with rules dropped", lambda s, a: s.update(fast=False)),
    (
        "thompson-fast",
        "short fields",
        lambda s, a: a.update({s["_fields"]["__dict__"]["precision"]["__array__"]: np.ones(2)}),
    ),
    (
        "thompson-fast",
        "zero precision",
        lambda s, a: a.update({s["_fields"]["__dict__"]["precision"]["__array__"]: np.zeros(3)}),
    ),
    (
        "thompson-fast-beta",
        "negative alpha",
        lambda s, a: a.update({s["_fields"]["__dict__"]["alpha"]["__array__"]: -np.ones(3)}),
    ),
    ("ucbam", "2 beliefs for 3 arms", lambda s, a: _list(s, "beliefs").pop()),
    ("ucbam", "2 memories for 3 arms", lambda s, a: _list(s, "memories").pop()),
    ("ucbam", "negative lam", lambda s, a: s.update(lam=-1.0)),
    ("ucbam", "known as a string", lambda s, a: s.update(known="yes")),
    ("ucbam", "stats of 2 arms", lambda s, a: s["stats"]["state"].update(n_arms=2)),
    ("ucbam", "stats t off", lambda s, a: s["stats"]["state"].update(t=10**6)),
    ("ucb", "counts and t disagree", lambda s, a: s["stats"]["state"].update(t=3)),
    ("ucb", "n_unpulled off", lambda s, a: s["stats"]["state"].update(n_unpulled=2)),
    ("ucbam-segments", "2 rules for 3 arms", lambda s, a: _list(s, "rules").pop()),
    ("ucbam-segments", "hazard 1.5", lambda s, a: s.update(hazard=1.5)),
    ("ucbam-segments", "no detector", lambda s, a: _set(_segment_rule(s), "detector", None)),
    (
        "ucbam-segments",
        "pending change a string",
        lambda s, a: _set(_segment_rule(s), "_pending_change", "x"),
    ),
    (
        "ucbam-segments",
        "a leftover evidence",
        lambda s, a: _set(_segment_rule(s), "_evidence", _segment_rule(s)["belief"]),
    ),
    (
        "ucbam-segments",
        "open start past t",
        lambda s, a: _set(_segment_rule(s), "_open_start", 10**6),
    ),
    (
        "ucbam-segments",
        "negative segment size",
        lambda s, a: _set(_segment_rule(s), "segment_sizes", {"__list__": [-1]}),
    ),
    (
        "ucbam-segments",
        "open segment of a number",
        lambda s, a: _set(_segment_rule(s), "_open", {"__list__": [3]}),
    ),
    (
        "ucbam-segments",
        "changepoint past t",
        lambda s, a: _set(_segment_rule(s), "changepoints", {"__list__": [10**6]}),
    ),
]


@pytest.mark.parametrize(
    ("name", "description", "edit"), EDITS, ids=[f"{e[0]}: {e[1]}" for e in EDITS]
)
def test_crafted_state_files_are_refused(
    tmp_path: Path, name: str, description: str, edit: Any
) -> None:
    assert_crafted_state_file_refused(tmp_path, _played(name), edit)


def test_a_segment_rule_round_trips_mid_segment(tmp_path: Path) -> None:
    model = BetaBinomial()
    rule = SegmentBAM(model, hazard=0.05)
    for k in range(40):
        rule.update(model.stats(successes=float(k < 20), trials=1))
    from bam_rl.serialization import load_object, save_object

    save_object(rule, tmp_path / "rule.npz")
    loaded = load_object(tmp_path / "rule.npz", expected=SegmentBAM)
    for k in range(10):
        s = model.stats(successes=float(k % 2), trials=1)
        a, b = rule.update(s), loaded.update(s)
        assert a.fields["alpha"] == b.fields["alpha"] and a.fields["beta"] == b.fields["beta"]
