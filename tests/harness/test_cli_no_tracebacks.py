"""Every command of ``bam-rl`` with a bad argument or a bad file: a usage line, never a
traceback (issue 26). Each case runs in-process; an uncaught exception fails the test."""

from __future__ import annotations

import importlib.util
import json
import time

import pytest

from bam_rl.cli import main

RUN = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--steps", "5"]
#: ``bam-rl run`` on ``bam_rl/NonStationary-v0`` with these ``--env-kwargs``.
NS = ["run", "--env", "bam_rl/NonStationary-v0", "--agent", "random", "--steps", "5"]
NS_CYCLE = {"g": {"cycle": {"values": [9.81, 3.72]}}}


def _cases(tmp):
    afile = tmp / "afile"
    afile.write_text("not a folder")
    empty = tmp / "empty"
    empty.mkdir()
    corrupt = tmp / "corrupt"
    (corrupt / "tracking").mkdir(parents=True)
    (corrupt / "tracking" / "tracking_summary.csv").write_bytes(b"\x00\xff garbage")
    claims_file = tmp / "claims_file"  # a sweep folder whose .claims is a regular file
    claims_file.mkdir()
    (claims_file / ".claims").write_text("not a folder")
    huge = "9" * 30
    return {
        "demo steps": ["demo", "--steps", "-3"],
        "demo out is a file": ["demo", "--steps", "5", "--out", str(afile)],
        "run env": ["run", "--env", "NoSuch-v9", "--agent", "ucb", "--steps", "5"],
        "run agent": [*RUN[:4], "nosuch", *RUN[5:]],
        "run json": [*RUN, "--env-kwargs", "{not json"],
        "run env kwargs": [*RUN, "--env-kwargs", '{"n_arms": -1}'],
        "run agent seed": [*RUN, "--agent-kwargs", '{"seed": 1}'],
        "run out is a file": [*RUN, "--out", str(afile)],
        "run shard": [*RUN, "--shard", "3/2"],
        "run jobs": [*RUN, "--jobs", "100000"],
        "run prefix": [*RUN, "--seed", "3"],
        "list extra": ["list", "--nothing"],
        "reproduce name": ["reproduce", "nosuch"],
        "reproduce out is a file": ["reproduce", "tracking", "--quick", "--out", str(afile)],
        "reproduce mnist data": ["reproduce", "mnist", "--quick", "--data", str(empty)],
        "report missing": ["report", str(tmp / "missing")],
        "report file": ["report", str(afile)],
        "report empty": ["report", str(empty)],
        "record seed": ["record", "--seed", "-1"],
        "record size": ["record", "--width", "0"],
        "bench group": ["bench", "--only", "nosuch"],
        # issue 39: oversized numbers, empty or directory outputs, a foreign .claims
        "run agent kwargs 1e400": [*RUN, "--agent-kwargs", '{"c": 1e400}'],
        "run agent kwargs huge int": [*RUN, "--agent-kwargs", f'{{"horizon": {huge}}}'],
        "run env kwargs 1e400": [*RUN, "--env-kwargs", '{"n_arms": 1e400}'],
        "run env kwargs -1e400 nested": [*RUN, "--env-kwargs", '{"means": [0.5, -1e400]}'],
        "run env kwargs huge int": [*RUN, "--env-kwargs", f'{{"n_arms": {huge}}}'],
        "run env kwargs NaN": [*RUN, "--env-kwargs", '{"n_arms": NaN}'],
        "run env kwargs huge seed": [*RUN, "--env-kwargs", f'{{"config_seed": {huge}}}'],
        "run out empty": [*RUN, "--out", ""],
        "demo out empty": ["demo", "--steps", "5", "--out", ""],
        "reproduce out empty": ["reproduce", "tracking", "--quick", "--out", ""],
        "run claims is a file": [*RUN, "--no-progress", "--out", str(claims_file)],
        "record out is a folder": ["record", "--quick", "--out", str(empty)],
        "record out empty": ["record", "--quick", "--out", ""],
        "record out under a file": ["record", "--quick", "--out", str(afile / "x.gif")],
        "bench json is a folder": ["bench", "--quick", "--json", str(empty)],
        "bench json empty": ["bench", "--quick", "--json", ""],
        "bench markdown is a folder": ["bench", "--quick", "--markdown", str(empty)],
        # NonStationary-v0's kwargs: Gymnasium's own errors, a missing env or changes
        "nonstationary unknown env": [
            *NS, "--env-kwargs", json.dumps({"env": "Nope-v1", "changes": {}}),
        ],
        "nonstationary no box2d": [
            *NS, "--env-kwargs", json.dumps({"env": "CarRacing-v3", "changes": {}}),
        ],
        "nonstationary render human": [
            *NS, "--env-kwargs",
            json.dumps({"env": "Pendulum-v1", "changes": NS_CYCLE, "render_mode": "human"}),
        ],
        "nonstationary no kwargs": NS,
        "nonstationary no changes": [*NS, "--env-kwargs", json.dumps({"env": "Pendulum-v1"})],
        "drill name": ["drill", "--quick", "nosuch"],
        "recurring kwarg": [
            "run", "--env", "bam_rl/RecurringPendulum-v0", "--agent", "random", "--steps", "5",
            "--env-kwargs", json.dumps({"nope": 1}),
        ],
    }  # fmt: skip


NAMES = [
    "demo steps", "demo out is a file", "run env", "run agent", "run json", "run env kwargs",
    "run agent seed", "run out is a file", "run shard", "run jobs", "run prefix", "list extra",
    "reproduce name", "reproduce out is a file", "reproduce mnist data", "report missing",
    "report file", "report empty", "record seed", "record size", "bench group",
    "run agent kwargs 1e400", "run agent kwargs huge int", "run env kwargs 1e400",
    "run env kwargs -1e400 nested", "run env kwargs huge int", "run env kwargs NaN",
    "run env kwargs huge seed",
    "run out empty", "demo out empty", "reproduce out empty", "run claims is a file",
    "record out is a folder", "record out empty", "record out under a file",
    "bench json is a folder", "bench json empty", "bench markdown is a folder",
    "nonstationary unknown env", "nonstationary no box2d", "nonstationary render human",
    "nonstationary no kwargs", "nonstationary no changes", "drill name", "recurring kwarg",
]  # fmt: skip
#: Exit codes checked exactly: 2 for a usage error, 1 for a missing optional dependency.
EXIT_CODES = {
    "nonstationary unknown env": 2, "nonstationary no box2d": 1,
    "nonstationary render human": 1, "nonstationary no kwargs": 2,
    "nonstationary no changes": 2, "drill name": 2, "recurring kwarg": 2,
}  # fmt: skip
#: Cases that only fail while this package is not installed.
NEEDS_ABSENT = {"nonstationary no box2d": "Box2D", "nonstationary render human": "pygame"}
#: Checked before any work: each case ends within this many seconds (record and bench took
#: 9-19 s before failing on their output path).
UP_FRONT_SECONDS = 5.0


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_argument_or_file_is_one_usage_line(name, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BAM_RL_MNIST", raising=False)
    if name in NEEDS_ABSENT and importlib.util.find_spec(NEEDS_ABSENT[name]) is not None:
        pytest.skip(f"{NEEDS_ABSENT[name]} is installed")
    argv = _cases(tmp_path)[name]
    start = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert time.monotonic() - start < UP_FRONT_SECONDS
    assert exit_info.value.code not in (0, None)
    assert exit_info.value.code == EXIT_CODES.get(name, exit_info.value.code)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("bam-rl")  # one closing error line
    last = err.strip().splitlines()[-1]
    if name == "nonstationary no kwargs":
        assert "needs env and changes" in last
    if name == "nonstationary no changes":
        assert "needs changes" in last
    if name == "nonstationary unknown env":
        assert "env='Nope-v1'" in last


def test_a_corrupt_experiment_is_one_line_and_the_command_succeeds(tmp_path, capsys):
    cases = _cases(tmp_path)
    assert cases  # builds the folders
    assert main(["report", str(tmp_path / "corrupt")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tracking: unreadable" in err and "Traceback" not in err
