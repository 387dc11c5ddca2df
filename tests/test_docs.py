"""The docs site's Python examples run as written (the README's are in test_readme.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCKS = [
    (page.name, index, block)
    for page in sorted(DOCS.glob("*.md"))
    for index, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
]


def test_the_docs_have_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize(
    ("page", "index", "block"), BLOCKS, ids=[f"{p}[{i}]" for p, i, _ in BLOCKS]
)
def test_python_example_runs(page, index, block, capsys):
    exec(compile(block, f"docs/{page}[python block {index}]", "exec"), {})
    assert capsys.readouterr().out.strip()  # every example prints its result


def test_every_page_is_in_the_navigation():
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert {page for page in pages if page not in nav} == set()
