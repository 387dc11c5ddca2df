"""The README's Python examples run as written, and its set-up commands are the CI's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"README.md[python block {index}]", "exec"), {})
    assert capsys.readouterr().out.strip()  # every example prints its result


def test_readme_example_outputs():
    """The numbers quoted in the comments are what the code prints."""
    namespace: dict = {}
    exec(compile(BLOCKS[0], "README.md[0]", "exec"), namespace)
    assert list(namespace["result"].weights) == [1.0, 0.0, 1.0, 0.0, 1.0]


def test_two_setup_commands_and_the_ci_test_command():
    text = README.read_text()
    commands = re.findall(r"```bash\n(python3 -m venv[^\n]*)\n```", text)
    assert len(commands) == 2
    assert commands[0].endswith("bam-rl demo")
    assert "pytest" in commands[1] and '".[dev]"' in commands[1]
    assert "torch" not in commands[1]  # no GPU build of torch for the tests
    assert "download.pytorch.org/whl/cpu" in text  # the extras' line: CPU torch first
    marker = text.index("<!-- test-command")
    assert text.index(commands[1]) > marker  # .ci/run executes the line after the marker


def test_the_readme_stays_short_and_its_links_resolve():
    """At most ~150 lines (the rest lives in docs/), and every relative link names a file."""
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (README.parent / target).exists(), target
