"""``bam-rl reproduce all`` without MNIST data and with ``--skip`` (issue 38): the other
experiments run, the report marks the rest "not run" with the reason, the exit status is 0.

The experiments themselves are replaced by a stub that writes one file (a real ``--quick``
pass over all seven takes minutes); the command's own logic, the not-run notes and the report
are the real ones.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from bam_rl import experiments
from bam_rl.cli import NO_MNIST_DATA, main
from bam_rl.experiments.report import NOT_RUN_FILE, read_not_run, write_not_run

ALL = experiments.REPRODUCTIONS
#: what ``reproduce all`` runs: every experiment but those run by name only (``in_all=False``)
IN_ALL = [name for name in ALL if experiments.get_entry(name).in_all]


@pytest.fixture
def ran(monkeypatch) -> list[str]:
    """The experiments ``reproduce`` runs, in order (each writes ``stub.txt``)."""
    calls: list[str] = []

    def stub(name: str):
        def reproduce(out: Path, **kwargs) -> pd.DataFrame:
            out.mkdir(parents=True, exist_ok=True)
            (out / "stub.txt").write_text(json.dumps(sorted(kwargs)))
            calls.append(name)
            return pd.DataFrame({"method": ["stub"], "value": [1.0]})

        return reproduce

    monkeypatch.setattr(experiments, "get_reproduction", stub)
    return calls


@pytest.fixture
def no_mnist(monkeypatch, tmp_path) -> Path:
    """``$BAM_RL_MNIST`` names an empty folder (no MNIST files)."""
    empty = tmp_path / "no-mnist"
    empty.mkdir()
    monkeypatch.setenv("BAM_RL_MNIST", str(empty))
    return empty


def _all(out: Path, *extra: str) -> int:
    return main(["reproduce", "all", "--quick", "--no-progress", "--out", str(out), *extra])


@pytest.mark.parametrize("environment", ["empty folder", "unset"])
def test_all_without_mnist_runs_the_rest_and_says_why_mnist_did_not(
    environment, ran, no_mnist, tmp_path, monkeypatch, capsys
):
    if environment == "unset":
        monkeypatch.delenv("BAM_RL_MNIST")
    out = tmp_path / "results"
    assert _all(out) == 0
    assert ran == [name for name in IN_ALL if name != "mnist"]
    captured = capsys.readouterr()
    assert "mnist not run" in captured.err
    assert f"== mnist: not run: {NO_MNIST_DATA}" in captured.out
    assert read_not_run(out / "mnist") == NO_MNIST_DATA
    assert "--data" in NO_MNIST_DATA and "--download" in NO_MNIST_DATA
    assert "BAM_RL_MNIST" in NO_MNIST_DATA  # the three real ways to give the data
    markdown = (out / "report.md").read_text(encoding="utf-8")
    html_text = (out / "report.html").read_text(encoding="utf-8")
    for text in (markdown, html_text):
        assert "not run: no data (pass --data" in text  # the claim rows
        assert "Not run: no data (pass --data" in text  # the experiment's section
    # the experiments that ran are not "not run" in the experiments table
    tracking_row = next(line for line in markdown.splitlines() if line.startswith("| tracking |"))
    assert "not run" not in tracking_row


def test_skip_leaves_experiments_out_and_needs_no_mnist_data(ran, no_mnist, tmp_path, capsys):
    out = tmp_path / "results"
    assert _all(out, "--skip", "mnist,piecewise-bandits", "--skip", "cartpole-readout") == 0
    assert ran == [n for n in IN_ALL if n not in {"mnist", "piecewise-bandits", "cartpole-readout"}]
    assert "mnist not run" not in capsys.readouterr().err  # no data check for a skipped one
    assert read_not_run(out / "mnist") == "skipped (--skip mnist)"
    assert read_not_run(out / "piecewise-bandits") == "skipped (--skip piecewise-bandits)"
    note = json.loads((out / "mnist" / NOT_RUN_FILE).read_text())
    assert note["command"].startswith("bam-rl reproduce all --quick ")
    assert "--skip mnist,piecewise-bandits,cartpole-readout" in note["command"]
    assert "Not run: skipped (--skip piecewise-bandits)" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["all", "--skip", "mnsit"], "--skip: unknown experiment 'mnsit'; choose from tracking"),
        (["all", "--skip", "mnist,nope"], "unknown experiment 'nope'"),
        (["tracking", "--skip", "mnist"], "--skip applies to 'reproduce all'"),
    ],
)
def test_skip_names_are_checked(arguments, message, ran, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", *arguments, "--out", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert ran == []


def test_earlier_results_are_kept_and_a_later_run_clears_the_note(ran, no_mnist, tmp_path):
    out = tmp_path / "results"
    (out / "mnist").mkdir(parents=True)
    pd.DataFrame(
        {
            "method": ["ols", "bam"],
            "side": 14,
            "accuracy_mean": [60.0, 80.0],
            "accuracy_sd": 1.0,
            "seeds": 2,
        }
    ).to_csv(out / "mnist" / "mnist_summary.csv", index=False)
    (out / "piecewise-bandits").mkdir()
    write_not_run(out / "piecewise-bandits", "skipped (--skip piecewise-bandits)", "cmd")
    assert _all(out) == 0
    # mnist's earlier results stay and are reported, not overwritten by a "not run" note
    assert not (out / "mnist" / NOT_RUN_FILE).exists()
    assert (out / "mnist" / "mnist_summary.csv").is_file()
    mnist = _section(out / "report.md", "Experiment 4")
    assert "Not run" not in mnist and "Unreadable" not in mnist
    # piecewise ran this time: its old note is gone
    assert not (out / "piecewise-bandits" / NOT_RUN_FILE).exists()
    assert "Not run" not in _section(out / "report.md", "Beyond the paper: piecewise")


def test_one_experiment_without_data_is_still_a_usage_error(no_mnist, ran, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "mnist", "--quick", "--out", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    assert "MNIST file" in capsys.readouterr().err
    assert ran == []


def test_a_not_run_note_needs_a_reason(tmp_path):
    with pytest.raises(ValueError, match="reason must be a non-empty sentence"):
        write_not_run(tmp_path, "  ", "cmd")
    (tmp_path / NOT_RUN_FILE).write_text("[1, 2]")  # not one of ours
    assert read_not_run(tmp_path) is None


def _section(path: Path, heading: str) -> str:
    """The text of the report section whose ``##`` heading starts with ``heading``."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


@pytest.mark.parametrize("quick", [True, False])
def test_the_reports_first_lines_say_whether_it_is_a_smoke_test(quick, ran, no_mnist, tmp_path):
    out = tmp_path / "results"
    argv = ["reproduce", "all", "--no-progress", "--out", str(out), "--skip", "mnist"]
    assert main(argv + (["--quick"] if quick else [])) == 0
    title, _, headline = (out / "report.md").read_text(encoding="utf-8").splitlines()[:3]
    if quick:
        assert title.endswith("— SMOKE TEST (--quick)")
        ran_here = len(ALL) - 1  # all but mnist
        assert headline.startswith(
            f"**SMOKE TEST: all {ran_here} experiments that ran (of {len(ALL)}) used"
        )
    else:
        assert "smoke" not in (title + headline).lower()
        ran_here = len(ALL) - 1
        assert (
            headline == f"**{ran_here} of {len(ALL)} experiments ran, all at the paper's scale.**"
        )


@pytest.mark.parametrize(
    ("name", "files", "expected"),
    [
        (
            "cartpole-readout",
            {"revisits.csv": "seed,trial\n0,46\n0,61\n1,46\n"},
            "This run: 2 seeds, 3 revisits analysed",
        ),
        (
            "piecewise-bandits",
            {"piecewise_summary.csv": "problem,method,runs\n1,a,20\n1,b,30\n2,a,20\n"},
            "This run: 2 problems × 2 methods, 20–30 runs per cell.",
        ),
        (
            "mnist",
            {"mnist_summary.csv": "method,side,seeds\nols,14,1\nbam,14,1\n"},
            "This run: 1 seed for each of 2 methods, 14 × 14-pixel images.",
        ),
        (
            "bandits",
            {
                "uniform/bandits_regret.csv": "method,config,seed,step,arms\n"
                + "".join(f"ucb,c{c},{s},0,50\n" for c in range(3) for s in (7, 8))
            },
            "This run: uniform, 50 arms: 3 arm configurations × 2 seeds = 6 runs per method.",
        ),
    ],
)
def test_captions_count_what_the_folder_holds(name, files, expected, tmp_path):
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    caption = experiments.describe(name, tmp_path)
    entry = experiments.get_entry(name)
    assert caption.startswith(entry.caption) and expected in caption
    assert experiments.describe(name, tmp_path / "empty") == entry.caption  # nothing found


def test_skipping_everything_reports_that_nothing_ran(ran, tmp_path):
    out = tmp_path / "results"
    assert _all(out, "--skip", ",".join(ALL)) == 0
    assert ran == []
    headline = (out / "report.md").read_text(encoding="utf-8").splitlines()[2]
    assert headline == f"**No experiment ran here (0 of {len(ALL)}): every claim is not run.**"


def test_all_leaves_experiments_run_by_name_only_and_says_so(ran, no_mnist, tmp_path, monkeypatch):
    assert IN_ALL == list(ALL)  # every experiment runs in `all` today; one marked by name only:
    name = "recurring-worlds"
    entry = dataclasses.replace(experiments.get_entry(name), in_all=False)
    monkeypatch.setitem(experiments.EXPERIMENTS, name, entry)
    by_name = [name]
    out = tmp_path / "results"
    assert _all(out) == 0
    assert not set(by_name) & set(ran)
    for name in by_name:
        reason = read_not_run(out / name)
        assert reason is not None and f"bam-rl reproduce {name}" in reason
