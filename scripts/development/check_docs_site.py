"""docs/development.md: Check a built docs site for markup that did not render.

    python scripts/development/check_docs_site.py SITE_DIR

Run after ``mkdocs build --strict --site-dir SITE_DIR``. Exits 1, listing ``file: snippet``
for each problem, when an HTML page has

- a raw Sphinx role (``:class:`BaseAgent``` rendered as ``:class:<code>BaseAgent</code>``): the
  griffe extension ``docs/_ext/sphinx_roles.py`` turns them into links;
- raw TeX math (``$\\theta_t$``, ``$$...$$``) outside the spans ``pymdownx.arithmatex`` marks
  for MathJax — typically ``$x = $``, which arithmatex does not take as math because the closing
  ``$`` follows a space (write ``$x =$``). Math is recognised by TeX between the dollars (a
  backslash command, ``^``, ``_``, braces) or a single letter (``$t$``); a ``$`` in code, or
  money such as "$5 and $10", is not reported;
- an ``id`` used twice on one page, or one API object documented twice on a page (the same
  name and the same first paragraph under two modules, e.g. a class and its re-export).

Text inside ``<pre>``, ``<code>``, ``<script>``, ``<style>`` and arithmatex elements is not
searched for roles or math. Only the standard library is used.
"""

from __future__ import annotations

import html
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROLES = "class|func|meth|attr|mod|data|obj|exc|const|ref|term|any"
RAW_ROLE = re.compile(rf":(?:py:)?(?:{ROLES}):(?:\x00|`)")
"""A role name followed by code (``\\x00`` marks where a ``<code>`` element was) or a backtick."""

TEX = r"\\[A-Za-z]+|[\^_{}]"
RAW_DISPLAY = re.compile(r"\$\$.+?\$\$", re.S)
RAW_INLINE = re.compile(rf"\$(?!\s)[^$\n]*?(?:{TEX})[^$\n]*?\$|\$[A-Za-z]\$")

_SKIPPED = re.compile(
    r"<(pre|script|style)\b[^>]*>.*?</\1>"
    r"|<(span|div)\b[^>]*class=\"[^\"]*\barithmatex\b[^\"]*\"[^>]*>.*?</\2>",
    re.S | re.I,
)
_CODE = re.compile(r"<code\b[^>]*>.*?</code>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_ID = re.compile(r"\sid=\"([^\"]+)\"")
_HEADING = re.compile(
    r"<h[1-6] id=\"(?P<id>[^\"]+)\" class=\"doc doc-heading\">(?P<head>.*?)</h[1-6]>"
    r"(?P<after>.*?)(?=<h[1-6] |\Z)",
    re.S,
)


def _text(fragment: str) -> str:
    """``fragment`` without tags, unescaped, whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())


def _snippet(text: str, start: int, end: int) -> str:
    return " ".join(text[max(0, start - 40) : end + 40].replace("\x00", "<code>").split())


def check_page(page: str) -> list[str]:
    """The problems found in one HTML page's source (see the module docstring)."""
    problems: list[str] = []
    prose = _CODE.sub("\x00", _SKIPPED.sub(" ", page))
    for match in RAW_ROLE.finditer(prose):
        problems.append(f"raw Sphinx role: {_snippet(prose, match.start(), match.end())}")
    text = html.unescape(_TAG.sub(" ", prose))
    for pattern in (RAW_DISPLAY, RAW_INLINE):
        for match in pattern.finditer(text):
            problems.append(f"raw math: {_snippet(text, match.start(), match.end())}")
        text = pattern.sub(" ", text)
    for anchor, count in Counter(_ID.findall(page)).items():
        if count > 1:
            problems.append(f"id used {count} times: {anchor}")
    problems.extend(_duplicate_objects(page))
    return problems


def _duplicate_objects(page: str) -> list[str]:
    """API objects rendered twice under different paths on one page (a re-export)."""
    headings = list(_HEADING.finditer(page))
    modules = {h["id"] for h in headings if "doc-module" in page[: h.start()][-200:]}
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for heading in headings:
        anchor = heading["id"]
        parent, _, name = anchor.rpartition(".")
        if parent not in modules:  # only objects directly under a documented module
            continue
        paragraph = re.search(r"<p>(.*?)</p>", heading["after"], re.S)
        summary = _text(paragraph[1]) if paragraph else ""
        seen[(name, summary)].append(anchor)
    return [
        f"documented {len(anchors)} times: {', '.join(anchors)}"
        for anchors in seen.values()
        if len(anchors) > 1
    ]


def check_site(site: Path) -> list[str]:
    """``file: problem`` lines for every HTML page under ``site``."""
    found = []
    for path in sorted(site.rglob("*.html")):
        for problem in check_page(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(site)}: {problem}")
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    site = Path(args[0])
    problems = check_site(site)
    for line in problems:
        print(line)
    pages = sum(1 for _ in site.rglob("*.html"))
    print(f"{len(problems)} problem(s) in {pages} HTML page(s) under {site}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
