"""``bam-rl record``: the revisited trial is found, and (slow) a short GIF is rendered headless."""

from __future__ import annotations

from pathlib import Path

import pytest

from bam_rl.experiments.record import revisited_trial


def test_revisited_trial_is_the_second_trial_of_the_first_revisit():
    from bam_rl import envs

    assert revisited_trial(envs.EPISODIC_SCHEDULE) == 46  # Neptune again, its 2nd trial
    assert revisited_trial(envs.EPISODIC_SCHEDULE, offset=0) == 45
    with pytest.raises(ValueError, match="no gravity is revisited"):
        revisited_trial([9.81, 9.81, 3.72])
    with pytest.raises(ValueError, match="shorter"):
        revisited_trial([9.81, 3.72, 9.81])


@pytest.mark.slow
def test_record_writes_a_small_gif(tmp_path):
    import imageio.v2 as imageio

    from bam_rl.cli import main

    path = tmp_path / "swingup.gif"
    assert main(["record", "--quick", "--out", str(path), "--no-progress", "--every", "10"]) == 0
    frames = imageio.mimread(path)
    assert len(frames) >= 2 and frames[0].shape[1] > 2 * 320  # two panels side by side
    assert frames[0].std() > 10  # rendered, not blank
    assert path.stat().st_size < 3_000_000


def test_revisited_trial_picks_the_requested_revisit():
    from bam_rl import envs

    # the paper's schedule revisits 11.15, 3.72 and 9.81 in episodes 4, 5 and 6 (15 trials each)
    assert revisited_trial(envs.EPISODIC_SCHEDULE, revisit=2) == 61
    assert revisited_trial(envs.EPISODIC_SCHEDULE, offset=0, revisit=3) == 75
    with pytest.raises(ValueError, match="revisits a gravity 3 times, not 4"):
        revisited_trial(envs.EPISODIC_SCHEDULE, revisit=4)
    with pytest.raises(ValueError, match="revisit must be an integer >= 1"):
        revisited_trial(envs.EPISODIC_SCHEDULE, revisit=0)


def test_the_recording_replays_the_experiments_runs_trial_for_trial():
    """``run_until`` on a run of the (quick) episodic experiment gives that run's reward."""
    import numpy as np

    from bam_rl.experiments.record import experiment_runs, run_until
    from bam_rl.harness import execute_run

    runs = experiment_runs(1, quick=True)
    assert set(runs) >= {"bam", "recursive"}
    spec = runs["bam"]
    frame = execute_run(spec)
    trial = revisited_trial(spec.env_kwargs["gravity_schedule"], offset=1)
    per_trial = frame.groupby("episode")["reward"].mean().to_numpy()
    states, reward = run_until(spec, trial)
    assert reward == pytest.approx(per_trial[trial], rel=1e-12)  # the same trajectory
    assert states.shape[0] == 201 and np.isfinite(states).all()


def test_cartpole_runs_name_their_planning_dtype():
    """The dtype is part of every learned-model run's options, so of its file key: a sweep
    resumed in a folder of runs made with other planning numerics recomputes them."""
    from bam_rl.experiments.cartpole import cartpole_grid

    for setting in ("episodic", "continual"):
        for spec in cartpole_grid(setting, seeds=1):
            if spec.method != "gt":
                assert spec.agent_kwargs["planning_dtype"] == "float32"


def test_record_shows_the_first_trial_of_a_revisit_with_the_methods_asked_for():
    """Issue 22: segment BAM's first trial on a revisit beside the paper's BAM."""
    from bam_rl import envs
    from bam_rl.experiments.record import check_methods, replay_plan

    assert check_methods(["bam_segments", "bam"])[0] == (
        "bam_segments",
        "segment BAM (beyond the paper)",
    )
    runs, gravities, trial = replay_plan(0, 1, episode_trial=1)
    assert {"bam", "bam_segments", "recursive", "gt"} <= set(runs)
    assert gravities == tuple(envs.EPISODIC_SCHEDULE) and trial == 45  # Neptune's 1st again
    for bad in (["bam"], ["bam", "nope"], ["bam"] * 5):
        with pytest.raises(ValueError, match="methods must be two to four"):
            check_methods(bad)
    with pytest.raises(ValueError, match="episode_trial must be 1 or 2"):
        replay_plan(0, 1, episode_trial=3)


@pytest.mark.slow
def test_record_writes_a_gif_of_three_methods_on_the_first_trial(tmp_path):
    import imageio.v2 as imageio

    from bam_rl.cli import main

    path = tmp_path / "first.gif"
    arguments = ["record", "--quick", "--out", str(path), "--no-progress", "--every", "20"]
    arguments += ["--methods", "bam_segments,bam,gt", "--episode-trial", "1"]
    assert main(arguments) == 0
    frames = imageio.mimread(path)
    assert frames[0].shape[1] > 3 * 320  # three panels side by side


def test_record_writes_to_the_working_directory_unless_told(tmp_path, monkeypatch):
    """Issue 38: the default never overwrites the committed docs figure."""
    import inspect

    from bam_rl.cli import build_parser
    from bam_rl.experiments.record import DEFAULT_PATH, record_swingup

    default = build_parser().parse_args(["record"]).out
    assert default == DEFAULT_PATH == "swingup.gif"
    assert inspect.signature(record_swingup).parameters["path"].default == DEFAULT_PATH
    assert Path(default).parent == Path(".") and "docs" not in Path(default).parts
    told = build_parser().parse_args(["record", "--out", "docs/figures/swingup.gif"]).out
    assert told == "docs/figures/swingup.gif"


def _fake_replay(monkeypatch):
    """``record_swingup``'s runs replaced by two synthetic 3-frame panels (no MuJoCo)."""
    from types import SimpleNamespace

    import numpy as np

    from bam_rl.experiments import record

    runs = {m: SimpleNamespace(agent_name=f"mppi-{m}") for m in ("bam", "recursive")}
    monkeypatch.setattr(record, "replay_plan", lambda *a: (runs, (9.81, 9.81, 3.72), 1))
    monkeypatch.setattr(
        record, "run_until", lambda spec, trial, progress=None: (np.zeros((7, 5)), -0.5)
    )
    monkeypatch.setattr(
        record,
        "render_states",
        lambda states, size: [  # distinct frames (a GIF merges identical ones)
            np.full((size[1], size[0], 3), 60 + 20 * i, np.uint8) for i in range(len(states))
        ],
    )


def _red(frame) -> int:
    """Pixels of the smoke-test label's red (176, 0, 32), allowing for the GIF palette."""
    rgb = frame[..., :3].astype(int)
    return int(((rgb[..., 0] > 130) & (rgb[..., 1] < 60) & (rgb[..., 2] < 90)).sum())


@pytest.mark.parametrize("quick", [True, False])
def test_a_quick_gif_carries_the_smoke_test_label_in_every_frame(quick, tmp_path, monkeypatch):
    import imageio.v2 as imageio

    from bam_rl.experiments.record import record_swingup

    _fake_replay(monkeypatch)
    path = tmp_path / "quick.gif"
    result = record_swingup(path, quick=quick, progress=None, size=(200, 120), every=1)
    frames = imageio.mimread(path)
    assert result["path"] == str(path) and len(frames) == 6
    for frame in frames:
        assert (_red(frame) > 50) is quick  # the label's text, in red, in every frame


def test_the_label_is_drawn_above_the_caption():
    import numpy as np

    from bam_rl.experiments.record import SMOKE_LABEL, label_frame

    frame = np.full((40, 400, 3), 90, np.uint8)
    plain, marked = label_frame(frame, ["caption"]), label_frame(frame, ["caption"], SMOKE_LABEL)
    assert marked.shape[0] == plain.shape[0] + 18  # one more line of text
    assert _red(marked[:20]) > 50 and _red(plain) == 0
    assert (marked[22:] == plain[4:]).all()  # the caption and the frame below are unchanged


def test_a_gif_that_fails_to_write_leaves_the_old_file(tmp_path, monkeypatch):
    """``write_gif`` writes atomically: a writer that fails part way leaves the file it would
    have replaced as it was, and no temporary file behind; one that succeeds replaces it."""
    import imageio.v2 as imageio
    import numpy as np

    from bam_rl.experiments.record import write_gif

    frames = [np.full((8, 10, 3), 40 * i, np.uint8) for i in range(3)]
    path = tmp_path / "run.gif"
    path.write_bytes(b"the old recording")

    def broken(uri, images, **options):
        Path(uri).write_bytes(b"GIF89a half")
        raise OSError("disk full")

    monkeypatch.setattr(imageio, "mimsave", broken)
    with pytest.raises(OSError, match="disk full"):
        write_gif(path, [frames], ["caption"], quick=False, fps=10.0)
    assert path.read_bytes() == b"the old recording"
    assert [p.name for p in tmp_path.iterdir()] == ["run.gif"]
    monkeypatch.undo()
    write_gif(path, [frames, frames], ["caption"], quick=False, fps=10.0)
    assert len(imageio.mimread(path)) == 3


# ------------------------------------------------------- record --recurring (issue 42)
def test_recurring_recording_replays_the_experiments_own_runs():
    """The runs are the ones ``reproduce recurring-worlds`` builds at its default size (the
    same specification, so the same file key and seeds), episodic, of one seed."""
    from bam_rl.experiments import recurring
    from bam_rl.experiments.record_recurring import recurring_plan, recurring_runs

    default = {spec.key for spec in recurring.grid(recurring.SEEDS)}
    runs = recurring_runs("Reacher", 3, methods=["bam_segments", "recursive", "gt"])
    assert set(runs) == {"bam_segments", "recursive", "gt"}
    assert {spec.key for spec in runs.values()} <= default
    assert {spec.config for spec in runs.values()} == {"Reacher-episodic"}
    # 2 trials per world: A A B B A A C C B B; the first trial of A's and of B's return
    _, values, trial = recurring_plan("InvertedPendulum", 0)
    assert trial == 4 and values[trial] == values[0] == 9.81
    assert recurring_plan("InvertedPendulum", 0, revisit=2)[2] == 8
    assert recurring_plan("InvertedPendulum", 0, episode_trial=2)[2] == 5


def _trials_csv(folder, runs):
    """``folder/trials.csv`` as ``reproduce recurring-worlds`` writes it, of ``runs``."""
    import pandas as pd

    from bam_rl.experiments.recurring import per_trial
    from bam_rl.harness import execute_run
    from bam_rl.harness.files import write_frame

    trials = per_trial(pd.concat([execute_run(spec) for spec in runs], ignore_index=True))
    write_frame(trials, folder / "trials.csv")
    return trials


def test_recurring_replay_gives_the_experiments_return_and_is_deterministic(tmp_path):
    import numpy as np

    from bam_rl.experiments.record import replay_trial
    from bam_rl.experiments.record_recurring import record_recurring, recurring_plan

    runs, _, trial = recurring_plan("InvertedPendulum", 1, quick=True)
    trials = _trials_csv(tmp_path, runs.values())
    for method, spec in runs.items():
        states, rewards = replay_trial(spec, trial)
        again = replay_trial(spec, trial)
        assert np.array_equal(rewards, again[1]) and np.array_equal(states, again[0])
        row = trials[(trials["method"] == method) & (trials["trial"] == trial)]
        assert float(np.sum(rewards)) == pytest.approx(float(row["score"].iloc[0]), rel=1e-12)
        assert len(states) == len(rewards) + 1 == int(row["steps"].iloc[0]) + 1
    gif = tmp_path / "checked.gif"
    arguments = {"seed": 1, "quick": True, "progress": None, "size": (64, 48), "every": 10}
    result = record_recurring("InvertedPendulum", gif, results=tmp_path, **arguments)
    assert result["checked"] and gif.exists()
    # or the --out folder of 'reproduce', which holds the experiment's folder
    (tmp_path / "out" / "recurring-worlds").mkdir(parents=True)
    (tmp_path / "trials.csv").rename(tmp_path / "out" / "recurring-worlds" / "trials.csv")
    result = record_recurring("InvertedPendulum", gif, results=tmp_path / "out", **arguments)
    assert result["checked"]
    # a folder whose return differs: not the same run, refused before a GIF is written
    tampered = trials.copy()
    tampered.loc[tampered["method"] == "recursive", "score"] += 1.0
    tampered.to_csv(tmp_path / "out" / "recurring-worlds" / "trials.csv", index=False)
    with pytest.raises(ValueError, match="differs from"):
        record_recurring(
            "InvertedPendulum", tmp_path / "no.gif", results=tmp_path / "out", **arguments
        )
    assert not (tmp_path / "no.gif").exists()


def test_record_recurring_writes_two_labelled_panels(tmp_path, monkeypatch, capsys):
    import json

    import imageio.v2 as imageio

    from bam_rl.cli import main

    monkeypatch.chdir(tmp_path)  # the default path: recurring_<Name>.gif here
    arguments = ["record", "--recurring", "InvertedPendulum", "--quick", "--no-progress"]
    assert main([*arguments, "--width", "160", "--height", "120", "--every", "2"]) == 0
    result = json.loads(capsys.readouterr().out)
    path = tmp_path / "recurring_InvertedPendulum.gif"
    assert result["path"] == "recurring_InvertedPendulum.gif" and path.exists()
    assert (result["trial"], result["world"], result["value"]) == (2, "A", 9.81)
    assert {"return_bam_segments", "return_recursive"} <= set(result)
    frames = imageio.mimread(path)
    longest = max(result["steps_bam_segments"], result["steps_recursive"])
    assert len(frames) == (longest + 1) // 2  # every 2nd step of the longer trial
    assert frames[0].shape[1] == 2 * 160 + 6  # two panels side by side
    assert frames[0].std() > 10 and all(_red(frame) > 50 for frame in frames)  # smoke label


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--recurring", "Nope"], "InvertedPendulum, InvertedDoublePendulum, Reacher"),
        (["--recurring", "Pendulum"], "needs pygame"),
        (["--recurring", "CartPoleSwingUp"], "without --recurring"),
        (["--recurring", "Reacher", "--revisit", "3"], "1 (world A's return) or 2"),
        (["--recurring", "Reacher", "--methods", "bam,nope"], "'bam_segments'"),
        (["--recurring", "Reacher", "--quick", "--episode-trial", "2"], "shorter than 2"),
        (["--recurring", "Reacher", "--results", "nowhere"], "no trials.csv"),
        (["--results", "nowhere"], "needs --recurring"),
        # the swing-up's own recording
        (["--quick", "--revisit", "2"], "revisits a gravity 1 times"),
        (["--seed", "5000"], "seed"),
    ],
)
def test_record_refuses_what_it_cannot_record(arguments, message, capsys, tmp_path):
    from bam_rl.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["record", "--out", str(tmp_path / "x.gif"), "--no-progress", *arguments])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()


def test_the_progress_lines_name_the_trial_as_the_printed_result_does(
    tmp_path, monkeypatch, capsys
):
    """Issue 49: the result said ``"trial": 4`` and the screen "trial 5/5". Both name the
    0-based index now (the ``trial`` column of trials.csv); the screen adds the count."""
    import json

    from bam_rl.cli import main

    monkeypatch.chdir(tmp_path)
    arguments = ["record", "--recurring", "InvertedPendulum", "--quick", "--every", "10"]
    assert main([*arguments, "--width", "64", "--height", "48"]) == 0
    out = capsys.readouterr().out
    lines, _, text = out.partition("\n{")
    result = json.loads("{" + text)
    progress = lines.splitlines()
    assert result["trial"] == 2 and len(progress) == 2 * (result["trial"] + 1)  # two methods
    for method in ("mppi-bam-segments", "mppi-recursive"):
        mine = [line for line in progress if line.startswith(f"{method}: ")]
        for index, line in enumerate(mine):
            assert f": trial {index} (0-based; {index + 1} of 3 replayed)" in line
        assert f"trial {result['trial']} (0-based" in mine[-1]
