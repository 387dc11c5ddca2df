"""Smoke tests of the soak (:mod:`bam_rl.drills.soak`; the soak itself takes hours,
and ``bam-rl drill soak`` runs a fraction of it)."""

from __future__ import annotations

import importlib.util

import pytest


@pytest.fixture
def soak():
    return importlib.import_module("bam_rl.drills.soak")


def test_soak_runs_every_workload_briefly(soak, capsys):
    argv = ["--stream-steps", "300", "--bandit-steps", "200", "--capacity", "16"]
    argv += ["--agents", "ucb", "thompson-bam", "ucbam:capacity=8", "--check-every", "10"]
    argv += ["--time-tolerance", "1e9"]  # a few hundred steps time nothing reliably
    assert soak.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out[:2]] == [
        "stream BAM(capacity=16)",
        "stream BOCD(max_run_length=10000)",
    ]
    assert any(line.startswith("bandit ucbam:capacity=8: 200 steps") for line in out)
    assert out[-1].startswith("soak: PASS — 5 workloads, stream 300 steps")
    assert "0 non-finite values" in out[-1]


def test_soak_fails_on_a_non_finite_value(soak, monkeypatch, capsys):
    def poisoned(text, steps, seed, check_every):
        return soak.timed_loop(f"bandit {text}", steps, lambda t: int(t == 7))

    monkeypatch.setattr(soak, "soak_bandit", poisoned)
    assert soak.main(["--skip", "bam", "bocd", "--agents", "ucb", "--bandit-steps", "50"]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("soak: FAIL — 1 workloads, bandits 50 steps x 1 agents")
    assert "1 non-finite values" in last and "failed: bandit ucb" in last


def test_agent_options_are_parsed(soak):
    assert soak.agent_spec("thompson-bam:capacity=256,lam=0.5") == (
        "thompson-bam",
        {"capacity": 256, "lam": 0.5},
    )
    assert soak.agent_spec("ucb") == ("ucb", {})
