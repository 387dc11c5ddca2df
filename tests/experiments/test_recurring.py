"""Recurring worlds (issue 42): the suite's ids, their schedules, and a --quick reproduction."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

import bam_rl  # noqa: F401  (registers the ids)
from bam_rl import envs
from bam_rl.wrappers.recurring import (
    ORDER,
    SUITE,
    entry_point_name,
    make_recurring,
    recurring_id,
)


def test_registered_names_match_the_suite():
    assert envs.RECURRING_NAMES == tuple(SUITE)
    assert len(envs.RECURRING_IDS) == 2 * len(SUITE) == 14
    for name in SUITE:
        assert recurring_id(name) in gym.registry
        assert recurring_id(name, continual=True) in gym.registry


@pytest.mark.parametrize("name", list(SUITE))
@pytest.mark.parametrize("continual", [False, True])
def test_each_id_makes_steps_and_changes_world_on_schedule(name, continual):
    spec = SUITE[name]
    env = gym.make(recurring_id(name, continual), trials_per_world=1, trial_steps=3)
    seen = []
    for trial in range(len(ORDER) + 1):
        _, info = env.reset(seed=0 if trial == 0 else None)
        assert ("context" in info) is not continual  # announced only in the episodic variant
        seen.append(env.get_wrapper_attr("context")[spec.parameter])
        done, steps = False, 0
        while not done:
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            done, steps = terminated or truncated, steps + 1
        assert steps <= 3
    worlds = dict(zip("ABC", spec.worlds, strict=True))
    assert seen == [worlds[w] for w in ORDER] + [worlds[ORDER[-1]]]  # the last world holds
    env.close()


def test_worlds_last_trials_per_world_and_differ():
    for spec in SUITE.values():
        values = spec.values()
        assert len(values) == len(ORDER) * spec.trials_per_world
        assert len(set(spec.worlds)) == 3
    env = make_recurring("Pendulum", trials_per_world=2)
    worlds = []
    for trial in range(10):
        env.reset(seed=0 if trial == 0 else None)
        worlds.append(env.get_wrapper_attr("context")["g"])
    assert worlds == list(SUITE["Pendulum"].values(2))


@pytest.mark.parametrize("name", ["Pendulum", "CartPole", "InvertedPendulum"])
def test_check_env_passes(name):
    env = gym.make(recurring_id(name), trials_per_world=1, trial_steps=5)
    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("fixed", [{"name": "CartPole"}, {"continual": True}])
def test_an_id_refuses_the_keywords_it_fixes(fixed):
    """Each id has its own entry point: a caller cannot turn the Pendulum id into CartPole-v1
    or the episodic variant into the continual one."""
    (key,) = fixed
    with pytest.raises(ValueError, match=f"fixes {key}"):
        gym.make(recurring_id("Pendulum"), **fixed)
    for name in SUITE:
        for continual in (False, True):
            spec = gym.spec(recurring_id(name, continual))
            assert spec.kwargs == {}
            assert spec.entry_point == (
                f"bam_rl.wrappers.recurring:{entry_point_name(name, continual)}"
            )


@pytest.mark.parametrize("trial_steps", [7, 250])
def test_trial_steps_shortens_and_lengthens_a_trial(trial_steps):
    """``trial_steps`` sets the inner limit (Pendulum-v1's own is 200)."""
    env = gym.make(recurring_id("Pendulum"), trial_steps=trial_steps)
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done, steps = terminated or truncated, steps + 1
    assert steps == trial_steps and env.spec.max_episode_steps == trial_steps
    # the cart-pole's own limit (max_steps) too
    cartpole = make_recurring("CartPoleSwingUp", trial_steps=trial_steps)
    assert cartpole.unwrapped.max_steps == trial_steps
    cartpole.close()


def test_each_ids_planning_settings_are_its_settings_row():
    from bam_rl.agents.settings import settings_for

    env = gym.make(recurring_id("InvertedPendulum", continual=True), trial_steps=5)
    row, env_id = settings_for(env)
    assert env_id == recurring_id("InvertedPendulum", continual=True)
    assert row.reward == "inverted-pendulum-lqr-terminal"
    assert dict(row.planner) == {
        "horizon": 5,
        "n_samples": 16,
        "temperature": 0.01,
    }  # docs/recurring.md's measured setting (issue 53)
    env.close()


def test_registry_mppi_agents_default_to_the_ids_reward_and_planner():
    from bam_rl.harness.registry import make_agent

    env = gym.make(recurring_id("InvertedPendulum"), trial_steps=5)
    for name in ("mppi-bam-segments", "mppi-bam", "mppi-gt"):
        agent = make_agent(name, env, seed=0)
        assert agent.planner.horizon == 5 and agent.planner.n_samples == 16
        assert getattr(agent.planner.reward, "name", None) == "inverted-pendulum-lqr-terminal"
    given = make_agent("mppi-gt", env, seed=0, horizon=7, reward="inverted-pendulum")
    assert given.planner.horizon == 7  # an explicit value wins
    env.close()


def test_a_rows_segment_readouts_are_segment_bams_default_there_only():
    from bam_rl.agents.settings import SEGMENT_READOUT_AFTER_STEPS
    from bam_rl.harness.registry import make_agent, resolved_settings

    double = gym.make(recurring_id("InvertedDoublePendulum"), trial_steps=30)
    segments = make_agent("mppi-bam-segments", double, seed=0)
    # the row's steps inside the 30-step trial (its 1-25)
    assert segments.readout_after_steps == (1, 2, 3, 4, 5, 6, 8, 10, 15, 25)
    recorded = resolved_settings("mppi-bam-segments", double)["settings"]
    assert recorded["readout_after_steps"] == {
        "value": [1, 2, 3, 4, 5, 6, 8, 10, 15, 25],
        "source": "table",
    }
    assert "readout_after_steps" not in resolved_settings("mppi-bam", double)["settings"]
    given = make_agent("mppi-bam-segments", double, seed=0, readout_after_steps=(5,))
    assert given.readout_after_steps == (5,)  # an explicit value wins
    double.close()
    single = gym.make(recurring_id("InvertedPendulum"), trial_steps=30)
    assert make_agent("mppi-bam-segments", single, seed=0).readout_after_steps == (
        SEGMENT_READOUT_AFTER_STEPS
    )
    recorded = resolved_settings("mppi-bam-segments", single)["settings"]
    assert recorded["readout_after_steps"]["source"] == "default"  # the rule's own
    single.close()


def test_bam_rl_run_plans_on_a_recurring_id_without_agent_kwargs(tmp_path):
    from bam_rl.cli import main

    argv = ["run", "--env", recurring_id("Pendulum"), "--agent", "mppi-bam-segments,mppi-gt"]
    assert main([*argv, "--steps", "12", "--out", str(tmp_path)]) == 0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="name must be one of"):
        make_recurring("Nope")
    with pytest.raises(ValueError, match="trials_per_world"):
        make_recurring("Pendulum", trials_per_world=0)
    with pytest.raises(ValueError, match="trial_steps"):
        make_recurring("Pendulum", trial_steps=0)


def test_mppi_forgetting_is_registered_and_learns_over_trials():
    from bam_rl.beliefs import ExponentialForgetting
    from bam_rl.harness import rollout
    from bam_rl.harness.registry import make_agent

    env = gym.make(recurring_id("Pendulum"), trials_per_world=1, trial_steps=5)
    agent = make_agent(
        "mppi-forgetting", env, seed=0, reward="pendulum-swingup", horizon=5, n_samples=4
    )
    assert isinstance(agent.rule, ExponentialForgetting) and agent.rule.alpha == 0.8
    rollout(env, agent, n_episodes=2, seed=0)  # two trials: the agent reset at each start
    assert agent.n_trials >= 1


def test_relative_score():
    from bam_rl.experiments.recurring import relative

    np.testing.assert_allclose(relative([50.0, 100.0], [100.0, 100.0]), [0.5, 1.0])
    np.testing.assert_allclose(relative([-200.0, -100.0, 5.0], [-100.0] * 3), [0.5, 1.0, 1.0])


def test_quick_reproduction_writes_sane_files(tmp_path):
    from bam_rl.cli import main
    from bam_rl.experiments.recurring import METHODS, QUICK_ENVS, VISIT_COLUMNS, claims, scale

    out = ["reproduce", "recurring-worlds", "--quick", "--out", str(tmp_path), "--no-progress"]
    assert main(out) == 0
    folder = tmp_path / "recurring-worlds"
    trials = pd.read_csv(folder / "trials.csv")
    assert set(trials["env"]) == set(QUICK_ENVS)
    assert set(trials["method"]) == set(METHODS)
    assert set(trials["setting"]) == {"episodic", "continual"}
    assert trials.groupby(["env", "setting", "method"]).size().eq(len(ORDER)).all()
    visits = pd.read_csv(folder / "visits.csv")
    assert list(visits.columns) == list(VISIT_COLUMNS)  # no key of a visit dropped
    assert visits["revisit"].sum() == 2 * 2 * 2 * 6  # 2 revisits x 2 envs x 2 settings x 6
    summary = pd.read_csv(folder / "summary.csv")
    assert {"first", "to_90", "drop", "regret", "pass_07"} <= set(summary.columns)
    for name in QUICK_ENVS:
        assert (folder / f"recurring_{name}.png").stat().st_size > 0
    assert (folder / "recurring_overview.png").stat().st_size > 0
    rows = claims(folder)
    assert len(rows) == len(QUICK_ENVS) and all(r["holds"] in ("yes", "no") for r in rows)
    assert "seed" in scale(folder)
    assert claims(None)[0]["holds"] == "not run"
    # resumable: a second call loads every run
    assert main(out) == 0


def test_a_reproduction_of_the_extra_settings_alone_writes_its_measures(tmp_path):
    """``--settings stationary`` alone (no episodic or continual run, so no visit to score)
    writes ``unannounced.csv`` and an empty ``visits.csv`` instead of failing in the summary."""
    from bam_rl.cli import main
    from bam_rl.experiments.recurring import VISIT_COLUMNS

    out = [
        "reproduce", "recurring-worlds", "--quick", "--envs", "CartPole",
        "--settings", "stationary", "--out", str(tmp_path), "--no-progress",
    ]  # fmt: skip
    assert main(out) == 0
    folder = tmp_path / "recurring-worlds"
    assert set(pd.read_csv(folder / "trials.csv")["setting"]) == {"stationary"}
    visits = pd.read_csv(folder / "visits.csv")
    assert visits.empty and list(visits.columns) == list(VISIT_COLUMNS)
    unannounced = pd.read_csv(folder / "unannounced.csv")
    assert set(unannounced["setting"]) == {"stationary"} and "named_30" in unannounced
    assert not (folder / "recurring_overview.png").exists()


def test_gt_as_a_learner_scores_exactly_one(tmp_path):
    """Paired scoring: every method's trial t of seed s starts from the same state as GT MPC's
    (one config per environment and setting), so GT MPC in a learner's place scores 1."""
    from bam_rl.experiments.recurring import (
        config_label,
        per_trial,
        summarize,
        visit_table,
    )
    from bam_rl.harness import make_grid, run_many

    options = {"reward": "pendulum-swingup", "horizon": 5, "n_samples": 4}
    env = (recurring_id("Pendulum"), {"trials_per_world": 2, "trial_steps": 8})
    runs = make_grid(
        {"bam_segments": ("mppi-gt", options), "gt": ("mppi-gt", options)},
        {config_label("Pendulum", "episodic"): env},
        seeds=2,
        n_episodes=2 * len(ORDER),
    )
    steps = run_many(runs, backend="serial", out_dir=tmp_path, progress=False)
    trials = per_trial(steps)
    visits = visit_table(trials)
    assert len(visits) == 2 * len(ORDER) and set(visits["method"]) == {"bam_segments"}
    np.testing.assert_array_equal(visits["first"], 1.0)
    np.testing.assert_array_equal(visits["to_90"], 1)
    np.testing.assert_array_equal(visits["regret"], 0.0)
    assert (summarize(visits)["pass_07"] == 1.0).all()
    # the two seeds start from different states, the trials of one seed too
    gt = trials[trials["method"] == "gt"]
    assert gt["score"].nunique() > len(ORDER)


def test_overview_draws_dots_names_the_highlighted_and_has_no_legend_in_the_axes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from bam_rl.experiments import recurring as R

    envs, methods = ["Pendulum", "CartPole"], ["bam_segments", "bam", "recursive", "bocd"]
    visits = pd.DataFrame(
        [
            {"env": env, "setting": setting, "method": method, "revisit": True, "first": 0.5}
            for env in envs
            for setting in ("episodic", "continual")
            for method in methods
        ]
    )
    figure = R.plot_overview(visits, tmp_path / "overview.png")
    assert (tmp_path / "overview.png").is_file()
    for axis in figure.axes[:2]:
        assert axis.get_legend() is None  # the others are named in one row below the panels
        assert all(line.get_linestyle() == "None" for line in axis.lines if line.get_gid())
    texts = {t.get_text() for t in figure.axes[1].texts}
    assert {R.LABELS["bam_segments"], R.LABELS["recursive"]} <= texts


def test_overview_dots_on_the_reference_lines_are_drawn_whole_inside_the_axis():
    """Issue 49: CartPole's dots at exactly 0.70 sat at the axis' edge; dots on the reference
    lines and at the extremes are drawn whole, clear of the edges."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bam_rl.experiments import recurring as R

    methods = ["bam_segments", "bam", "recursive"]
    for values in ({"Pendulum": 1.0, "CartPole": 0.7}, {"Pendulum": 1.6, "CartPole": -2.0}):
        visits = pd.DataFrame(
            [
                {"env": env, "setting": setting, "method": method, "revisit": True, "first": v}
                for env, v in values.items()
                for setting in ("episodic", "continual")
                for method in methods
            ]
        )
        figure = R.plot_overview(visits)
        for axis in figure.axes[:2]:
            bottom, top = axis.get_window_extent().y0, axis.get_window_extent().y1
            for line in axis.lines:
                if not line.get_gid():
                    continue  # the reference lines
                radius = line.get_markersize() / 2 * figure.dpi / 72  # points -> pixels
                heights = axis.transData.transform(np.asarray(line.get_xydata()))[:, 1]
                # whole, with a visible gap: 5 % of the axis height between dot and edge
                gap = 0.05 * (top - bottom)
                assert (heights - radius - gap >= bottom).all()
                assert (heights + radius + gap <= top).all()
        plt.close(figure)


def test_per_environment_figures_tick_whole_trials():
    """Issue 49: the trial axis had ticks at half trials (0.5, 1.5, …)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bam_rl.experiments import recurring as R

    trials = pd.DataFrame(
        [
            {
                "env": "CartPole",
                "setting": setting,
                "method": method,
                "seed_index": 0,
                "trial": trial,
                "score": 100.0 if method == "gt" else 50.0 + 10 * trial,
                "world_value": [0.1, 1.0, 0.1, 0.5, 1.0][trial],
            }
            for setting in ("episodic", "continual")
            for method in ("bam_segments", "recursive", "gt")
            for trial in range(5)
        ]
    )
    figure = R.plot_environment(trials, "CartPole")
    figure.canvas.draw()
    for axis in figure.axes:
        ticks = [t for t in axis.get_xticks() if axis.get_xlim()[0] <= t <= axis.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    plt.close(figure)
