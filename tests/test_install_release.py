"""Release hygiene (issue 38): the version from the distribution's metadata, ``py.typed`` in the
package data, a citation file naming the paper, and a changelog with an Unreleased section."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bam_rl

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]


def test_version_is_the_installed_distributions():
    assert bam_rl.__version__ == importlib.metadata.version("bam-rl") == VERSION


def test_version_falls_back_when_the_package_is_not_installed():
    code = (
        "import importlib.metadata as m\n"
        "def missing(name):\n"
        "    raise m.PackageNotFoundError(name)\n"
        "m.version = missing\n"
        "import bam_rl\n"
        "print(bam_rl.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0+unknown"


def test_py_typed_is_package_data():
    assert (ROOT / "bam_rl" / "py.typed").is_file()
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["bam_rl"]


def test_citation_file_cites_the_paper_and_the_toolkit():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for key in ("cff-version", "message", "title", "authors", "version", "preferred-citation"):
        assert cff.get(key), key
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == VERSION
    paper = cff["preferred-citation"]
    assert paper["type"] == "conference-paper" and paper["year"] == 2022
    assert paper["title"] == "BAM: Bayes with Adaptive Memory"
    assert [a["family-names"] for a in paper["authors"]] == ["Nassar", "Brennan", "Evans", "Lowrey"]
    assert "ICLR" in paper["conference"]["name"]


def test_changelog_has_an_unreleased_section_above_the_versions():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert headings[0] == "Unreleased"
    assert VERSION in headings
    assert "keepachangelog.com" in text
