"""The docs site's Python examples run as written (the README's are in test_readme.py)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCKS = [
    (str(page.relative_to(DOCS)), index, block)
    for page in sorted(DOCS.rglob("*.md"))
    for index, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
]


def test_the_docs_have_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize(
    ("page", "index", "block"), BLOCKS, ids=[f"{p}[{i}]" for p, i, _ in BLOCKS]
)
def test_python_example_runs(page, index, block, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files (a figure)
    if "stable_baselines3" in block:
        pytest.importorskip("stable_baselines3")
    if "ns_gym" in block:
        pytest.importorskip("ns_gym")  # the NS-Gym bridge's page (the extra `nsgym`)
    exec(compile(block, f"docs/{page}[python block {index}]", "exec"), {})
    assert capsys.readouterr().out.strip()  # every example prints its result


def test_every_page_is_in_the_navigation():
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert {page for page in pages if page not in nav} == set()


# --- the API reference ----------------------------------------------------------------------

ROOT = DOCS.parent
_spec = importlib.util.spec_from_file_location(
    "check_docs_site", ROOT / "scripts/development/check_docs_site.py"
)
check_docs_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_docs_site)


def test_every_public_agent_has_a_runnable_example_on_the_agents_page():
    """Each class of ``bam_rl.agents.__all__`` (and the klUCB family) is built in an example."""
    import bam_rl.agents
    from bam_rl.agents import klucb, passive

    code = "\n".join(block for page, _, block in BLOCKS if page == "api/agents.md")
    protocol_only = {"Agent", "BaseAgent", "BanditAgent"}
    names = set(bam_rl.agents.__all__) - protocol_only
    names |= {n for n in klucb.__all__ + passive.__all__ if n[0].isupper() and n != "VARIANTS"}
    assert {name for name in names if not re.search(rf"\b{name}(\.\w+)?\(", code)} == set()


def test_the_info_table_names_every_info_key_an_agent_reads():
    """The agents page's table lists each ``info`` key read in agents/ (and no other)."""
    reads = set()
    for path in (ROOT / "agents").glob("*.py"):
        text = path.read_text()
        # info["key"], info.get("key"), (info or {}).get("key"), self._last_info.get("key")
        reads |= set(re.findall(r"info(?: or \{\}\))?(?:\[|\.get\()[\"']([a-z_]+)[\"']", text))
        # for key in ("n_trials", "n"): if key in info
        for keys in re.findall(r"for key in \(([^)]*)\):\s+if key in info", text):
            reads |= set(re.findall(r"[\"']([a-z_]+)[\"']", keys))
    page = (DOCS / "api/agents.md").read_text()
    table = page[page.index("## Which `info` keys") :].split("\n## ")[0]
    listed = set(re.findall(r"^\|[^|]*\| `([a-z_]+)`", table, re.M))
    listed |= set(re.findall(r"\(else `([a-z_]+)`\)", table))
    assert reads >= {"gravity", "context_changed", "n_trials"}
    assert listed == reads


def test_the_reward_table_lists_every_registered_reward():
    """``docs/any_env.md``'s registry table has one row per key of ``REWARDS`` (read in a fresh
    process: the page's own example registers a reward in this one)."""
    registered = subprocess.run(
        [sys.executable, "-c", "from bam_rl.agents.rewards import REWARDS; print(*REWARDS)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.split()
    page = (DOCS / "any_env.md").read_text()
    table = page[page.index("## The registry") :].split("\n## ")[0]
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M)
    assert len(registered) >= 10
    assert sorted(listed) == sorted(registered)


FIXTURE_PAGE = """<html><body>
<div class="doc doc-object doc-module">
<h2 id="pkg.a" class="doc doc-heading"><code>pkg.a</code></h2>
<div class="doc doc-object doc-class">
<h3 id="pkg.a.Thing" class="doc doc-heading"><code>Thing</code></h3>
<div class="doc doc-contents"><p>A thing.</p>
<p>See :class:<code>Other</code> and :meth:`go`; fine: <code>:class:`X`</code>.</p>
<p>Math $\\theta_t$ raw, $t$ raw, <span class="arithmatex">\\(\\theta_t\\)</span> rendered.</p>
<p>It costs $5 and $10; <code>$HOME</code> and <code>$\\alpha$</code> are code.</p>
<pre><code>$ echo $PATH   # :class:`Y` in a code block</code></pre>
</div></div></div>
<div class="doc doc-object doc-module">
<h2 id="pkg.b" class="doc doc-heading"><code>pkg.b</code></h2>
<div class="doc doc-object doc-class">
<h3 id="pkg.b.Thing" class="doc doc-heading"><code>Thing</code></h3>
<div class="doc doc-contents"><p>A thing.</p></div></div></div>
<p id="dup">x</p><p id="dup">y</p>
</body></html>"""


def test_the_site_checker_finds_raw_roles_raw_math_and_duplicates(tmp_path):
    problems = check_docs_site.check_page(FIXTURE_PAGE)
    kinds = [problem.split(":")[0] for problem in problems]
    assert kinds.count("raw Sphinx role") == 2  # not the one in <code>, nor the one in <pre>
    assert kinds.count("raw math") == 2  # not the money, the code spans or the arithmatex span
    assert "id used 2 times: dup" in problems
    assert "documented 2 times: pkg.a.Thing, pkg.b.Thing" in problems
    assert len(problems) == 6, problems

    clean = re.sub(r"<p>See .*?</p>|<p>Math .*?</p>|<p id=\"dup\">y</p>", "", FIXTURE_PAGE)
    clean = clean.replace(
        "<p>A thing.</p></div></div></div>\n<p", "<p>Another.</p></div></div></div>\n<p"
    )
    assert check_docs_site.check_page(clean) == []

    (tmp_path / "api").mkdir()

    def check_site(page: str) -> subprocess.CompletedProcess:
        """The checker script over a site whose one page is ``page``."""
        (tmp_path / "api/index.html").write_text(page)
        return subprocess.run(
            [sys.executable, str(ROOT / "scripts/development/check_docs_site.py"), str(tmp_path)],
            capture_output=True,
            text=True,
            check=False,
        )

    run = check_site(FIXTURE_PAGE)
    assert run.returncode == 1
    assert run.stdout.count("api/index.html: ") == 6
    run = check_site(clean)
    assert run.returncode == 0, run.stdout


def test_sphinx_roles_become_links_or_code():
    """The griffe extension resolves roles in the docstring's scope, then by full path, then by
    a unique suffix; ``~`` shortens the text; unknown targets become plain code."""
    import griffe

    _spec = importlib.util.spec_from_file_location("sphinx_roles", DOCS / "_ext/sphinx_roles.py")
    roles = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(roles)
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    package = loader.load("bam_rl")
    extension = roles.SphinxRoles()
    objects = roles._objects(package)
    by_name: dict = {}
    for obj in objects:
        by_name.setdefault(obj.name, []).append(obj.path)
    tracker = package["agents.tracking"]
    text = extension.rewrite(
        ":class:`BaseAgent`, :meth:`~bam_rl.agents.base.BaseAgent.save`, :class:`Nowhere`,\n"
        ":attr:`a <rng>`, :func:`bam_rl.\n  checks.check_int`\n```\n:class:`Kept`\n```",
        tracker,
        loader,
        by_name,
    )
    assert (
        '<autoref identifier="bam_rl.agents.base.BaseAgent" optional><code>BaseAgent</code>' in text
    )
    assert (
        '<autoref identifier="bam_rl.agents.base.BaseAgent.save" optional><code>save()</code>'
        in text
    )
    assert "<code>Nowhere</code>," in text and 'identifier="Nowhere"' not in text
    assert "<code>a</code>" in text
    assert '"bam_rl.checks.check_int" optional><code>bam_rl.checks.check_int()</code>' in text
    assert "```\n:class:`Kept`\n```" in text  # fenced code is left alone


def test_rest_simple_tables_become_markdown_tables():
    """The griffe extension writes a docstring's reST simple table (``bam_rl.schedules``,
    ``bam_rl.agents.rewards``) as a Markdown table; other text is left alone (issue 49)."""
    _spec = importlib.util.spec_from_file_location("sphinx_roles", DOCS / "_ext/sphinx_roles.py")
    roles = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(roles)
    text = (
        "Intro.\n\n"
        "======  ==========\n"
        "name    what\n"
        "======  ==========\n"
        "``a``   first | one\n"
        "``b``   second,\n"
        "        wrapped\n"
        "======  ==========\n\n"
        "After.\n\nA heading\n=========\n"
    )
    assert roles.simple_tables_to_markdown(text) == (
        "Intro.\n\n"
        "| name | what |\n"
        "| --- | --- |\n"
        "| ``a`` | first \\| one |\n"
        "| ``b`` | second, wrapped |\n\n"
        "After.\n\nA heading\n=========\n"
    )
    unclosed = "======  ====\nx       y\n======  ====\n"  # two borders only: not a table
    assert roles.simple_tables_to_markdown(unclosed) == unclosed
