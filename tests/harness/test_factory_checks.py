"""An agent factory that returns ``None`` or a half-built agent is refused when it builds,
naming its label (issue 50, fifth round); before, the run failed deep in the rollout with an
``AttributeError`` that named neither the factory nor its label."""

from __future__ import annotations

import pytest

from bam_rl.agents import RandomAgent
from bam_rl.harness.sweeps import execute_run, make_grid, run_many

CONFIGS = {"b": ("bam_rl/SwitchingBandit-v0", {"max_steps": 20})}


class ActsOnly:
    """Half an agent: ``act`` without ``reset`` and ``observe``."""

    def __init__(self, action_space):
        self.action_space = action_space

    def act(self, observation):
        return self.action_space.sample()


class NotCallable(RandomAgent):
    observe = None  # an attribute of the right name that cannot be called


@pytest.mark.parametrize(
    ("factory", "missing"),
    [
        (lambda o, a, s: None, "reset, act, observe"),
        (lambda o, a, s: ActsOnly(a), "reset, observe"),
        (lambda o, a, s: NotCallable(a, seed=s), "observe"),
    ],
)
def test_a_factory_that_builds_no_agent_is_named_by_its_label(factory, missing, tmp_path):
    grid = make_grid({"mine": factory, "ucb": ("ucb", {})}, CONFIGS, seeds=1, n_steps=10)
    pattern = (
        rf"the agent factory of 'mine' \(.*\) returned .*, which has no callable {missing}: "
        r"a factory\(observation_space, action_space, seed\) must return an agent with reset, "
        r"act and observe"
    )
    with pytest.raises(ValueError, match=pattern):
        execute_run(grid[0])
    with pytest.raises(ValueError, match=pattern):
        run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    assert not list(tmp_path.glob("mine__*.parquet"))  # no run file of the refused factory


def test_a_whole_agent_still_runs():
    grid = make_grid({"mine": lambda o, a, s: RandomAgent(a, seed=s)}, CONFIGS, seeds=1, n_steps=10)
    assert len(execute_run(grid[0])) == 10
