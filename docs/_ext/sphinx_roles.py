"""A griffe extension: Sphinx cross-reference roles in docstrings become API links.

The docstrings are Google style, rendered by mkdocstrings, but many name other objects with
Sphinx roles (``:class:`BaseAgent```, ``:meth:`~bam_rl.bocd.ChangepointDetector.update```),
which Markdown would print raw. Once the package is loaded, this rewrites each role in every
docstring of the package into an optional autorefs reference to the object's full path:

- a link (``<a ...><code>BaseAgent</code></a>``) when the target is rendered somewhere on the site,
- plain inline code (with the full path as a tooltip) when it is not, so ``mkdocs build --strict``
  never warns about it.

Targets are resolved like Sphinx does: in the scope of the documented object (its members, its
module's imports, its parents), then as a full dotted path, then as a unique suffix of a path in
the package. A ``~`` prefix shows only the last component; ``!`` never links; ``title <target>``
sets the text; ``:func:``/``:meth:`` show trailing ``()`` as Sphinx does. The Python sources are
not edited. Wired up in ``mkdocs.yml`` (``plugins: mkdocstrings: handlers: python: options:
extensions``); checked by ``scripts/development/check_docs_site.py`` and ``tests/test_docs.py``.

It also turns reST *simple tables* (columns under ``====  ====`` borders, as in the docstrings of
``bam_rl.schedules`` and ``bam_rl.agents.rewards``) into Markdown tables
(:func:`simple_tables_to_markdown`), which Markdown would otherwise print as one paragraph.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?P<role>class|func|meth|attr|mod|data|obj|exc|const|ref|term|any):"
    r"`(?P<body>[^`]+)`"
)
"""A Sphinx role, e.g. ``:class:`~bam_rl.agents.BaseAgent```, optionally ``:py:``-prefixed."""

CALLABLE_ROLES = {"func", "meth"}

BORDER = re.compile(r"^[ \t]*=+(?: {2,}=+)+[ \t]*$")
"""A border line of a reST simple table: two or more runs of ``=`` two spaces apart."""


def _cells(line: str, starts: list[int]) -> list[str]:
    """The cells of a table line: its text under each column (the last one to the end)."""
    bounds = [*starts[1:], max(len(line), starts[-1])]
    return [line[a:b].strip() for a, b in zip(starts, bounds, strict=True)]


def _rows(block: list[str], starts: list[int]) -> list[list[str]]:
    """The rows of a block of table lines; a line whose first cell is empty continues the row
    above."""
    merged: list[list[str]] = []
    for line in block:
        row = _cells(line, starts)
        if merged and not row[0]:
            merged[-1] = [f"{a} {b}".strip() for a, b in zip(merged[-1], row, strict=True)]
        else:
            merged.append(row)
    return merged


def _markdown_row(row: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"


def simple_tables_to_markdown(text: str) -> str:
    """``text`` with each reST simple table (a border, header rows, the same border, body rows,
    the same border; no blank line inside) written as a Markdown table. A body row whose first
    column is empty continues the row above. Anything else is left as it is."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        border = lines[i]
        ends = [j for j in range(i + 1, len(lines)) if lines[j] == border][:2]
        if not BORDER.match(border) or len(ends) < 2:
            out.append(border)
            i += 1
            continue
        middle, last = ends
        if middle == i + 1 or any(not line.strip() for line in lines[i + 1 : last]):
            out.append(border)
            i += 1
            continue
        starts = [m.start() for m in re.finditer(r"=+", border)]
        header_rows = _rows(lines[i + 1 : middle], starts)
        header = [" ".join(column).strip() for column in zip(*header_rows, strict=True)]
        indent = border[: len(border) - len(border.lstrip())]
        table = [_markdown_row(header), "|" + " --- |" * len(starts)]
        table += [_markdown_row(row) for row in _rows(lines[middle + 1 : last], starts)]
        out.extend(indent + line for line in table)
        i = last + 1
    return "\n".join(out)


def _objects(obj: griffe.Object) -> list[griffe.Object]:
    """``obj`` and every object defined (not imported) under it."""
    found = [obj]
    for member in obj.members.values():
        if member.is_alias:
            continue
        found.extend(_objects(member))  # type: ignore[arg-type]
    return found


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in a package's docstrings into optional autorefs links."""

    def __init__(self) -> None:
        super().__init__()
        self.rewritten = 0
        self.unresolved: list[str] = []

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        objects = _objects(pkg)
        by_name: dict[str, list[str]] = defaultdict(list)
        for obj in objects:
            by_name[obj.name].append(obj.path)
        for obj in objects:
            if obj.docstring is not None and ROLE.search(obj.docstring.value):
                obj.docstring.value = self.rewrite(obj.docstring.value, obj, loader, by_name)
            if obj.docstring is not None and "==" in obj.docstring.value:
                obj.docstring.value = simple_tables_to_markdown(obj.docstring.value)

    # --- rewriting ------------------------------------------------------------------------

    def rewrite(
        self,
        text: str,
        obj: griffe.Object,
        loader: griffe.GriffeLoader,
        by_name: dict[str, list[str]],
    ) -> str:
        """``text`` with each role outside fenced code blocks replaced (a role may wrap lines)."""
        chunks = re.split(
            r"(^[ \t]*(?:```|~~~).*?^[ \t]*(?:```|~~~)[ \t]*$)", text, flags=re.M | re.S
        )
        return "".join(
            chunk if index % 2 else ROLE.sub(lambda m: self.replace(m, obj, loader, by_name), chunk)
            for index, chunk in enumerate(chunks)
        )

    def replace(
        self,
        match: re.Match[str],
        obj: griffe.Object,
        loader: griffe.GriffeLoader,
        by_name: dict[str, list[str]],
    ) -> str:
        role, body = match["role"], " ".join(match["body"].split())
        title: str | None = None
        explicit = re.fullmatch(r"(?P<title>.*?)\s*<(?P<target>[^<>]+)>", body)
        if explicit:
            title, body = explicit["title"], explicit["target"].strip()
        link = True
        if body.startswith("!"):
            link, body = False, body[1:]
        short = body.startswith("~")
        target = body.lstrip("~").removesuffix("()").replace(" ", "")
        if title is None:
            title = target.rsplit(".", 1)[-1] if short else target
            if role in CALLABLE_ROLES:
                title += "()"
        self.rewritten += 1
        code = f"<code>{html.escape(title)}</code>"
        path = self.resolve(target, obj, loader, by_name) if link and role != "ref" else None
        if path is None:
            if link and role != "ref":
                self.unresolved.append(f"{obj.path}: {match[0]}")
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    @staticmethod
    def resolve(
        target: str,
        obj: griffe.Object,
        loader: griffe.GriffeLoader,
        by_name: dict[str, list[str]],
    ) -> str | None:
        """The full path of ``target`` as seen from ``obj``, or None."""
        target = target.lstrip(".")
        if not re.fullmatch(r"[A-Za-z_][\w.]*", target):
            return None
        head, _, rest = target.partition(".")
        path: str | None = None
        try:
            path = obj.resolve(head)
        except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
            path = None
        if path is not None:
            path = f"{path}.{rest}" if rest else path
        elif target in loader.modules_collection:
            path = target
        else:
            name = target.rsplit(".", 1)[-1]
            matches = [p for p in by_name.get(name, []) if p == target or p.endswith("." + target)]
            if len(matches) != 1:
                return None
            path = matches[0]
        try:  # prefer where the object is defined (its anchor on the API pages)
            found = loader.modules_collection[path]
            return found.canonical_path if found.is_alias else found.path
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return path  # external (e.g. numpy): autorefs shows it as code unless inventoried
