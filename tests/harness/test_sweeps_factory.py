"""Agents of your own in sweeps: ``make_grid``/``run_many`` take an agent factory beside
registered names, with resumable files keyed by the label (issue 38, item 8)."""

from __future__ import annotations

import functools

import pytest

from bam_rl.agents import RandomAgent
from bam_rl.harness.sweeps import RunSpec, execute_run, make_grid, run_many

BANDIT = "bam_rl/SwitchingBandit-v0"
CONFIGS = {"b": (BANDIT, {"max_steps": 60})}


def random_factory(observation_space, action_space, seed):
    """A module-level factory (pickles by reference)."""
    return RandomAgent(action_space, seed=seed)


def scaled_factory(observation_space, action_space, seed, offset=0):
    return RandomAgent(action_space, seed=seed + offset)


def test_a_factory_runs_beside_a_registered_agent_and_resumes(tmp_path):
    calls = []

    def counting(observation_space, action_space, seed):
        calls.append(seed)
        return random_factory(observation_space, action_space, seed)

    methods = {"mine": counting, "ucb": ("ucb", {})}
    grid = make_grid(methods, CONFIGS, seeds=2, n_steps=40)
    assert [spec.method for spec in grid] == ["mine", "mine", "ucb", "ucb"]
    frame = run_many(grid, backend="serial", out_dir=tmp_path, progress=False)
    assert set(frame["method"]) == {"mine", "ucb"} and len(frame) == 4 * 40
    assert len(calls) == 2 and frame.attrs["sweep"]["loaded"] == 0
    assert sorted(p.name.split("__")[0] for p in tmp_path.glob("*.parquet")) == [
        "mine",
        "mine",
        "ucb",
        "ucb",
    ]
    # a second call (a fresh closure: another object, the same label) loads every run
    again = run_many(
        make_grid({"mine": lambda o, a, s: counting(o, a, s), "ucb": ("ucb", {})}, CONFIGS, 2, 40),
        backend="serial",
        out_dir=tmp_path,
        progress=False,
    )
    assert len(calls) == 2 and again.attrs["sweep"] == {
        "computed": [],
        "loaded": 4,
        "by_others": 0,
        "taken_over": [],
    }
    assert again.equals(frame)


def test_the_factory_gets_the_spaces_and_the_runs_agent_seed():
    seen = []

    def factory(observation_space, action_space, seed):
        seen.append((observation_space, action_space, seed))
        return RandomAgent(action_space, seed=seed)

    (spec,) = make_grid({"mine": factory}, CONFIGS, seeds=1, n_steps=5)
    execute_run(spec)
    ((observations, actions, seed),) = seen
    assert str(actions) == "Discrete(10)" and str(observations) == "Discrete(1)"
    assert seed == spec.seeds()[1]
    # the same seeds as a registered agent of the same config (common random numbers)
    (random_spec,) = make_grid(["random"], CONFIGS, seeds=1, n_steps=5)
    assert execute_run(random_spec)["reward"].tolist() == execute_run(spec)["reward"].tolist()


def test_keys_name_the_label_not_the_factory_and_registry_keys_are_unchanged():
    one = RunSpec("mine", BANDIT, n_steps=5, factory=random_factory)
    other = RunSpec("mine", BANDIT, n_steps=5, factory=lambda o, a, s: RandomAgent(a, seed=s))
    assert one.key == other.key
    assert one.key != RunSpec("mine", BANDIT, n_steps=5, agent="random").key
    # keys of registered agents are those written before factories existed
    kwargs = {"env_kwargs": {"max_steps": 50}, "config": "b", "seed_index": 1, "n_steps": 40}
    assert RunSpec("ucb", BANDIT, root_seed=3, **kwargs).key == "ucb__b__s1__e83ebf20452f"
    labelled = RunSpec(
        "lab", BANDIT, root_seed=3, agent="thompson-bam", agent_kwargs={"lam": 0.1}, **kwargs
    )
    assert labelled.key == "lab__b__s1__f4885f342ed9"


@pytest.mark.parametrize(
    ("factory", "label"),
    [
        (random_factory, "module-level function"),
        (functools.partial(scaled_factory, offset=0), "functools.partial"),
        (lambda o, a, s: RandomAgent(a, seed=s), "lambda"),
    ],
)
def test_factories_run_in_loky_workers(factory, label, tmp_path):
    """loky sends tasks with cloudpickle, so lambdas travel as well as functions."""
    grid = make_grid({"mine": factory}, CONFIGS, seeds=2, n_steps=30)
    parallel = run_many(grid, backend="loky", n_jobs=2, out_dir=tmp_path, progress=False)
    serial = run_many(grid, backend="serial", progress=False)
    assert parallel.equals(serial), label
    assert len(parallel.attrs["sweep"]["computed"]) == 2


def test_bad_methods_and_factory_specs():
    with pytest.raises(ValueError, match=r"methods\['x'\] must be a pair .* or an agent factory"):
        make_grid({"x": 3}, CONFIGS, seeds=1, n_steps=5)
    with pytest.raises(ValueError, match="factory must be None or a callable"):
        RunSpec("mine", BANDIT, n_steps=5, factory=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="takes neither agent nor agent_kwargs"):
        RunSpec("mine", BANDIT, n_steps=5, factory=random_factory, agent_kwargs={"lam": 1})
    with pytest.raises(ValueError, match="labels must be non-empty strings"):
        make_grid({"": random_factory}, CONFIGS, seeds=1, n_steps=5)
