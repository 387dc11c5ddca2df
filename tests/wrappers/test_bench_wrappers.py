"""``bam-rl bench --only wrappers`` runs (smoke size; timings are reported, never asserted)."""

from __future__ import annotations

import math

from bam_rl.bench import GROUPS, wrappers


def test_the_wrappers_group_is_registered_and_gives_its_rows():
    assert "wrappers" in GROUPS
    rows = wrappers.wrapper_rows(quick=True)
    assert len(rows) == 3 * len(wrappers.ENVS)
    step, peer, copy = rows[:3]
    assert (
        "InvertedPendulum-v5 step with NonStationary" in step[0] and step[3] == "ours ≤ 1.10× peer"
    )
    assert all(math.isfinite(x) and x > 0 for x in (step[1], step[2], copy[1]))
    assert "NS-Gym" in peer[0] and copy[3] == "ours ≤ 0.5 ms"
    assert isinstance(step[4], bool) and isinstance(copy[4], bool)
