"""Smoke tests of the ground-truth rollout bench (``python -m bam_rl.bench.rollout``): the rows
it prints run and have their shape; no timing is asserted."""

from __future__ import annotations

from bam_rl.bench import rollout


def test_quick_rows_time_one_workload_and_bar_only_the_two_thread_row(monkeypatch):
    calls: list[str] = []
    original = rollout._side_by_side

    def counting(env_id, k, h, threads, n_calls):
        calls.append(env_id)
        return original(env_id, k, h, threads, n_calls)

    monkeypatch.setattr(rollout, "_side_by_side", counting)
    rows = rollout.rollout_rows(quick=True)
    assert calls == ["InvertedPendulum-v5"] * 2
    assert [row[3] is not None for row in rows] == [True, False]  # the bar: 2 threads only
    assert all(row[1] > 0 and row[2] > 0 for row in rows)


def test_gap_and_act_rows_run():
    gaps = rollout.gap_rows(calls=2)
    assert [label for label, _ in gaps] == [
        "after a 0 ms gap",
        "after a 1 ms gap",
        "after a 12 ms gap",
    ]
    acts = rollout.act_rows(blocks=1, block_steps=2)
    assert [label.split(" K =")[0] for label, _, _ in acts] == [
        "GT MPC act InvertedPendulum-v5",
        "GT MPC act InvertedDoublePendulum-v5",
    ]
    assert all(ours > 0 and peer > 0 for _, ours, peer in acts)
