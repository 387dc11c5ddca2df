"""``bam-rl run --agent-kwargs`` per agent, agents tuned from the run and the environment,
``bam-rl list`` (whole descriptions, a closed pipe) and the cart-pole's precision warning
(issue 38, items 7 and 9)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium as gym
import pytest
from harness_testutils import run_argv, usage_error

from bam_rl.agents import RandomAgent
from bam_rl.cli import _summary, main
from bam_rl.harness import AGENTS
from bam_rl.harness.runner import check_fit

PIECEWISE = "bam_rl/PiecewiseBandit-v0"


def run(agents: str, *extra: str, steps: int = 300) -> list[str]:
    return run_argv(PIECEWISE, agents, steps, "--env-kwargs", '{"problem": 1}', *extra)


def test_agent_kwargs_keyed_by_agent_go_to_that_agent_only(capsys):
    kwargs = {"glr-klucb": {"horizon": 5000, "n_breakpoints": 4}, "klucb": {}}
    assert main(run("klucb,glr-klucb", "--agent-kwargs", json.dumps(kwargs))) == 0
    printed = capsys.readouterr().out
    assert "glr-klucb" in printed and "klucb" in printed


def test_flat_agent_kwargs_still_work_for_one_agent(capsys):
    assert main(run("glr-klucb", "--agent-kwargs", '{"horizon": 5000}')) == 0


def test_flat_agent_kwargs_with_several_agents_name_the_keyed_form(capsys):
    err = usage_error(run("klucb,glr-klucb", "--agent-kwargs", '{"horizon": 5000}'), capsys)
    assert "key it by agent name" in err and '{"klucb": {"horizon": 5000}}' in err


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ('{"ucb": {}}', "key 'ucb' is not among the listed agents (klucb, glr-klucb)"),
        ('{"klucb": {}, "horizon": 3}', "key 'horizon' is not among the listed agents"),
        ('{"klucb": 3}', "the value of 'klucb' must be a JSON object"),
        ('{"klucb": {"seed": 3}}', "must not set 'seed' (of 'klucb')"),
    ],
)
def test_bad_keyed_agent_kwargs_are_usage_errors(given, message, capsys):
    assert message in usage_error(run("klucb,glr-klucb", "--agent-kwargs", given), capsys)


def test_piecewise_agents_need_no_tuning_kwargs(capsys):
    """``glr-klucb`` and ``oracle-restart-klucb`` take the horizon and breakpoints from the
    run and the environment (they used to demand them)."""
    assert main(run("glr-klucb,oracle-restart-klucb,m-klucb,sw-klucb,exp3s", steps=500)) == 0
    printed = capsys.readouterr().out
    for name in ("glr-klucb", "oracle-restart-klucb", "m-klucb", "sw-klucb", "exp3s"):
        assert name in printed


def test_list_prints_every_description_whole(capsys):
    assert main(["list"]) == 0
    lines = {
        line.split()[0]: line.split(None, 1)[1]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("  ") and not line.strip().startswith("bam_rl/")
    }
    assert set(lines) == set(AGENTS)
    for name, text in lines.items():
        assert text == _summary(AGENTS[name])
        # a whole sentence (a cut first line ended "rewards" and "between")
        assert text.endswith("."), (name, text)
        assert ":data:" not in text and "``" not in text


def test_list_into_a_closed_pipe_exits_quietly():
    """``bam-rl list | head -1``: no BrokenPipeError traceback."""
    code = "import sys; from bam_rl.cli import main; sys.exit(main(['list']))"
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader goes away (before the child, still importing, writes)
    err = process.stderr.read().decode()
    process.stderr.close()
    status = process.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert status in (0, 1)


def test_random_agent_on_the_cart_pole_raises_no_precision_warning():
    env = gym.make("bam_rl/GravityCartPoleEpisodic-v0")
    try:
        agent = RandomAgent(env.action_space, seed=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_fit(env, agent)
    finally:
        env.close()
    assert not [w for w in caught if "precision" in str(w.message)], [
        str(w.message) for w in caught
    ]
