"""``bam-rl report`` on untrusted folders (issue 28, item 7; issue 26's corrupt summary).

Every reproducer failed on main before: corrupt summaries ended in a traceback, ``report.md``
carried raw ``<script>``, a symlinked figure to ``/etc/passwd`` was embedded, a FIFO hung the
report, a ``report.md`` symlink had its target overwritten, a DIR that is a file said "does not
exist", and a folder given at the wrong level gave an empty report with exit 0.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest

from bam_rl.cli import main
from bam_rl.experiments.report import build_report


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A results folder with a real (quick) tracking experiment."""
    out = tmp_path_factory.mktemp("good")
    argv = ["reproduce", "tracking", "--quick", "--seeds", "2", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    return out


@pytest.fixture
def results(good, tmp_path) -> Path:
    out = tmp_path / "results"
    shutil.copytree(good, out, symlinks=True)
    (out / "bandits").mkdir()
    return out


CORRUPT = {
    "empty": b"",
    "binary": bytes(range(256)) * 4,
    "missing column": b"arms,setting\n10,uniform\n",
    "non-numeric": b"method,arms,setting,median_regret\nucb,ten,uniform,lots\n",
}


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_one_line_for_a_corrupt_summary_and_a_report_of_the_rest(results, kind, capsys):
    (results / "bandits" / "bandits_summary.csv").write_bytes(CORRUPT[kind])
    assert main(["report", str(results)]) == 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bam-rl report: bandits: unreadable")
    assert "Traceback" not in err
    markdown = (results / "report.md").read_text()
    assert "unreadable" in markdown
    assert "tracking/tracking.png" in markdown or "tracking.png" in markdown  # the good one


def test_a_bad_timing_file_is_not_recorded(results, capsys):
    (results / "tracking" / "timing.json").write_text('{"seconds": "soon", "command": 3}')
    assert main(["report", str(results)]) == 0
    assert "not recorded" in (results / "report.md").read_text()
    assert "Traceback" not in capsys.readouterr().err


def test_markdown_is_escaped(results):
    summary = results / "tracking" / "tracking_summary.csv"
    text = summary.read_text()
    first = text.splitlines()[1].split(",")[0]
    summary.write_text(text.replace(first, "<script>alert(1)</script>", 1))
    (results / "tracking" / "timing.json").write_text(
        '{"seconds": 1.0, "command": "bam-rl <img src=x onerror=alert(1)> `x` | y"}'
    )
    build_report(results, lambda line: None)
    markdown = (results / "report.md").read_text()
    assert "<script>" not in markdown and "<img" not in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown
    assert "<script>" not in (results / "report.html").read_text().split("<body>")[1]


def test_symlinks_out_and_fifos_are_never_read(results, capsys):
    (results / "tracking" / "passwd.png").symlink_to("/etc/passwd")
    assert main(["report", str(results)]) == 0
    assert "passwd" in capsys.readouterr().err  # tracking skipped, named
    html = (results / "report.html").read_text()
    passwd = Path("/etc/passwd").read_bytes()
    assert base64.b64encode(passwd).decode()[:40] not in html and "root:x:0" not in html
    (results / "tracking" / "passwd.png").unlink()
    os.mkfifo(results / "tracking" / "stuck.png")
    assert main(["report", str(results)]) == 0  # returns: the FIFO is never opened
    assert "not a regular file" in capsys.readouterr().err


def test_a_report_symlink_is_replaced_not_written_through(results, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (results / "report.md").symlink_to(target)
    build_report(results, lambda line: None)
    assert target.read_text() == "keep me"
    assert not (results / "report.md").is_symlink()


def test_a_file_or_a_folder_without_experiments_is_a_usage_error(results, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for directory, message in (
        (afile, "is a file"),
        (results / "tracking", "give its parent"),
        (tmp_path / "empty", "holds no experiment folder"),
    ):
        directory.mkdir(exist_ok=True) if directory.name == "empty" else None
        with pytest.raises(SystemExit) as exit_info:
            main(["report", str(directory)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    with pytest.raises(ValueError, match="holds no experiment folder"):
        build_report(tmp_path / "empty")


def test_a_bam_rl_run_folder_is_named_as_such_with_what_to_do(tmp_path, capsys):
    """Issue 49: ``report`` on a ``bam-rl run --out`` folder said it "holds no experiment
    folder"; it now says what the folder is and how to summarise or plot it."""
    runs = tmp_path / "runs"
    argv = ["run", "--env", "bam_rl/SwitchingBandit-v0", "--agent", "ucb", "--steps", "20"]
    assert main([*argv, "--backend", "serial", "--no-progress", "--out", str(runs)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(runs)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "is a `bam-rl run` folder (1 run file(s))" in err
    assert "bam-rl reproduce" in err and "pd.read_parquet" in err and "docs/sweeps.md" in err
    assert "Traceback" not in err
