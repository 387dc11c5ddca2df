"""The run layer's old import paths, kept for one release (deprecated in 0.2).

The experiments, the CLI, the benchmarks and the drills were subpackages of
``bam_rl.harness``; they are now packages of their own (``bam_rl.experiments``, ``bam_rl.cli``,
``bam_rl.bench``, ``bam_rl.drills``), and the report of a reproduce folder and the replays of
``bam-rl record``, which read the experiments' tables, are ``bam_rl.experiments.report``,
``.record`` and ``.record_recurring``. An import of an old path, ``bam_rl.harness.cli`` or any
module under it, gives the module at the new path itself (one module object, so a patch
through either name is seen through both) and a :class:`DeprecationWarning` naming the new
path. ``python -m bam_rl.harness.bench`` runs too. :func:`install` puts the finder on
``sys.meta_path`` once; ``bam_rl/harness/__init__.py`` calls it, and every old path is below
``bam_rl.harness``, so the finder is in place before any old path is looked up.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import CodeType, ModuleType

__all__ = ["MOVED", "install", "new_name"]

#: Old package → new package.
MOVED = {
    "bam_rl.harness.experiments": "bam_rl.experiments",
    "bam_rl.harness.cli": "bam_rl.cli",
    "bam_rl.harness.bench": "bam_rl.bench",
    "bam_rl.harness.drills": "bam_rl.drills",
    "bam_rl.harness.report": "bam_rl.experiments.report",
    "bam_rl.harness.record": "bam_rl.experiments.record",
    "bam_rl.harness.record_recurring": "bam_rl.experiments.record_recurring",
}


def new_name(fullname: str) -> str | None:
    """The new module name of an old path, or ``None`` when ``fullname`` did not move."""
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Hands out the module at the new path under the old name (and its code to ``-m``)."""

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{self.old} moved to {self.new}; the old path is deprecated and goes in the next "
            "release",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        self._spec = module.__spec__  # the import system sets the alias spec: put it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported at its new path; it keeps its own spec."""
        module.__spec__ = self._spec

    def _real(self) -> importlib.machinery.ModuleSpec:
        spec = importlib.util.find_spec(self.new)
        if spec is None or spec.loader is None:  # pragma: no cover - the table names real modules
            raise ImportError(f"{self.new} (the new path of {self.old}) was not found")
        return spec

    def get_code(self, fullname: str) -> CodeType | None:
        """The new module's code, for ``python -m OLD`` (runpy runs it as ``__main__``)."""
        loader = self._real().loader
        return loader.get_code(self.new)  # type: ignore[union-attr]

    def is_package(self, fullname: str) -> bool:
        return self._real().submodule_search_locations is not None


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        if real is None:
            return None
        spec = importlib.machinery.ModuleSpec(
            fullname,
            _AliasLoader(fullname, new),
            is_package=real.submodule_search_locations is not None,
        )
        spec.origin = real.origin
        return spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
