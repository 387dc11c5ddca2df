"""``bam-rl record``: the revisited trial is found, and (slow) a short GIF is rendered headless."""

from __future__ import annotations

import pytest

from bam_rl.harness.record import revisited_trial


def test_revisited_trial_is_the_second_trial_of_the_first_revisit():
    import envs

    assert revisited_trial(envs.EPISODIC_SCHEDULE) == 46  # Neptune again, its 2nd trial
    assert revisited_trial(envs.EPISODIC_SCHEDULE, offset=0) == 45
    with pytest.raises(ValueError, match="no gravity is revisited"):
        revisited_trial([9.81, 9.81, 3.72])
    with pytest.raises(ValueError, match="shorter"):
        revisited_trial([9.81, 3.72, 9.81])


@pytest.mark.slow
def test_record_writes_a_small_gif(tmp_path):
    import imageio.v2 as imageio

    from bam_rl.harness.cli import main

    path = tmp_path / "swingup.gif"
    assert main(["record", "--quick", "--out", str(path), "--no-progress", "--every", "10"]) == 0
    frames = imageio.mimread(path)
    assert len(frames) >= 2 and frames[0].shape[1] > 2 * 320  # two panels side by side
    assert frames[0].std() > 10  # rendered, not blank
    assert path.stat().st_size < 3_000_000


def test_revisited_trial_picks_the_requested_revisit():
    import envs

    # the paper's schedule revisits 11.15, 3.72 and 9.81 in episodes 4, 5 and 6 (15 trials each)
    assert revisited_trial(envs.EPISODIC_SCHEDULE, revisit=2) == 61
    assert revisited_trial(envs.EPISODIC_SCHEDULE, offset=0, revisit=3) == 75
    with pytest.raises(ValueError, match="revisits a gravity 3 times, not 4"):
        revisited_trial(envs.EPISODIC_SCHEDULE, revisit=4)
    with pytest.raises(ValueError, match="revisit must be an integer >= 1"):
        revisited_trial(envs.EPISODIC_SCHEDULE, revisit=0)
