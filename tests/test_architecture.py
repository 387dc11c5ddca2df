"""The layers of ARCHITECTURE.md, enforced over every import statement of the packages.

Every ``import``/``from … import`` in ``bam_rl``, ``bam_rl.agents`` and ``bam_rl.envs`` counts,
including the deferred ones inside functions: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Source folders and the package names they install as: ``envs/`` and ``agents/`` stay at the
#: top of the repository but install as ``bam_rl.envs`` and ``bam_rl.agents`` (the symlinks
#: ``bam_rl/envs`` and ``bam_rl/agents`` point at them).
FOLDERS = {"bam_rl": "bam_rl", "agents": "bam_rl.agents", "envs": "bam_rl.envs"}
#: The run layer, split by role (issue 54): the run layer proper (run loop, registry, sweeps,
#: claims, report, record, plotting), the paper's and the suite's experiments, the CLI, the
#: benchmarks and the reliability drills. Together they are the one layer that sees everything.
RUN_LAYER = "bam_rl.harness"
EXPERIMENTS, CLI, BENCH, DRILLS = (
    "bam_rl.experiments",
    "bam_rl.cli",
    "bam_rl.bench",
    "bam_rl.drills",
)
RUN_LAYERS = (RUN_LAYER, EXPERIMENTS, CLI, BENCH, DRILLS)
#: Within the run layer, what each package must not import (the arrows point one way: the CLI
#: and the drills sit on top, the run layer proper at the bottom).
RUN_LAYER_NEVER_IMPORTS = {
    RUN_LAYER: (EXPERIMENTS, CLI, BENCH, DRILLS),
    EXPERIMENTS: (CLI, DRILLS),
    BENCH: (CLI, DRILLS),
}
ENVS = "bam_rl.envs"
AGENTS = "bam_rl.agents"
WRAPPERS = "bam_rl.wrappers"
INTEROP = "bam_rl.interop"
#: What the wrappers layer may import: these third-party packages (plus the standard
#: library) and, of ours, only these core modules and the layer itself.
WRAPPERS_MAY_IMPORT = ("gymnasium", "mujoco", "numpy")
WRAPPERS_MAY_USE = ("bam_rl.checks", "bam_rl._io", "bam_rl.schedules")
#: What the interop layer (bridges to other toolkits) may import: these third-party packages
#: (the other toolkit only deferred, inside functions) and, of ours, the agents, the wrappers
#: and the core's checks; never the run layer or the environments.
INTEROP_MAY_IMPORT = ("gymnasium", "numpy", "ns_gym")
INTEROP_MAY_USE = (AGENTS, WRAPPERS, "bam_rl.checks")
#: The pure leaf modules of the core (numpy and the standard library only): the one part of
#: ours the environments may import.
LEAVES = ("bam_rl.checks", "bam_rl._io")
#: Third-party packages the math core must not import (it needs numpy and scipy only).
NOT_IN_CORE = (
    "gymnasium",
    "mujoco",
    "pandas",
    "matplotlib",
    "joblib",
    "tqdm",
    "ray",
    "torch",
    "stable_baselines3",
    "pyarrow",
)


def _module_name(folder: str, path: Path) -> str:
    parts = [FOLDERS[folder], *path.relative_to(ROOT / folder).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(folder: str) -> list[Path]:
    """The ``.py`` files of a source folder (not through the install-name symlinks)."""
    return sorted(
        path
        for path in (ROOT / folder).rglob("*.py")
        if not any(
            (ROOT / folder / part).is_symlink()
            for part in path.relative_to(ROOT / folder).parts[:1]
        )
    )


def _modules() -> dict[str, Path]:
    return {_module_name(folder, path): path for folder in FOLDERS for path in _sources(folder)}


MODULES = _modules()


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> set[str]:
    """Every module ``module`` imports; ``from pkg import sub`` counts as ``pkg.sub`` when
    ``sub`` is a module of ours."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, path.name == "__init__.py")
            submodules = {f"{target}.{alias.name}" for alias in node.names}
            ours = submodules & MODULES.keys()
            found.update(ours)
            if len(ours) < len(node.names):
                found.add(target)
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _core_modules() -> list[str]:
    return [
        m
        for m in MODULES
        if m not in ("bam_rl", "bam_rl.__main__")
        and not any(_within(m, layer) for layer in (*RUN_LAYERS, ENVS, AGENTS, WRAPPERS, INTEROP))
    ]


def test_the_module_list_is_complete():
    assert "bam_rl.readout" in MODULES and "bam_rl.harness.runner" in MODULES
    assert "bam_rl.agents.base" in MODULES and "bam_rl.envs.gravity_cartpole" in MODULES
    assert "bam_rl.schedules" in _core_modules() and "bam_rl.wrappers.nonstationary" in MODULES
    assert "bam_rl.interop.nsgym" in MODULES and "bam_rl.interop.nsgym" not in _core_modules()
    assert len(_core_modules()) >= 10
    assert (ROOT / "bam_rl" / "envs").resolve() == ROOT / "envs"
    assert (ROOT / "bam_rl" / "agents").resolve() == ROOT / "agents"


@pytest.mark.parametrize("module", _core_modules())
def test_core_modules_need_only_numpy_scipy_and_each_other(module):
    bad = sorted(
        name
        for name in imports_of(module)
        if _top(name) in NOT_IN_CORE
        or any(_within(name, layer) for layer in (*RUN_LAYERS, ENVS, AGENTS, WRAPPERS, INTEROP))
        or name == "bam_rl"
    )
    assert not bad, f"{module} (math core) imports {bad}"


_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}


def _outside_allowlist(module: str, layer: str, may_import, may_use) -> list[str]:
    """What ``module`` imports beyond the standard library, the packages ``may_import``, its
    own ``layer`` and the modules of ours it ``may_use`` (sorted)."""
    return sorted(
        name
        for name in imports_of(module)
        if not (
            _top(name) in _STDLIB
            or _top(name) in may_import
            or _within(name, layer)
            or any(_within(name, ok) for ok in may_use)
        )
    )


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, WRAPPERS)])
def test_wrappers_import_gymnasium_mujoco_numpy_and_three_core_modules(module):
    bad = _outside_allowlist(module, WRAPPERS, WRAPPERS_MAY_IMPORT, WRAPPERS_MAY_USE)
    assert not bad, f"{module} (wrappers) imports {bad}"


def test_the_wrappers_check_can_fail(tmp_path, monkeypatch):
    fake = tmp_path / "bam_rl" / "wrappers" / "leaky.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("import scipy\nfrom bam_rl.harness import runner\n")
    monkeypatch.setitem(MODULES, "bam_rl.wrappers.leaky", fake)
    with pytest.raises(AssertionError, match="scipy"):
        test_wrappers_import_gymnasium_mujoco_numpy_and_three_core_modules("bam_rl.wrappers.leaky")


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, INTEROP)])
def test_interop_imports_agents_wrappers_and_its_toolkits_only(module):
    bad = _outside_allowlist(module, INTEROP, INTEROP_MAY_IMPORT, INTEROP_MAY_USE)
    assert not bad, f"{module} (interop) imports {bad}"


def test_interop_imports_its_toolkits_only_inside_functions():
    """``import bam_rl.interop`` must work without ns-gym: ``ns_gym`` appears in no
    module-level import statement of the layer."""
    offenders = []
    for module in (m for m in MODULES if _within(m, INTEROP)):
        tree = ast.parse(MODULES[module].read_text())
        for node in tree.body:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{module}: {n}" for n in names if _top(n) == "ns_gym"]
    assert not offenders


def test_nothing_below_the_run_layer_imports_interop():
    reaching = sorted(
        m
        for m in MODULES
        if not (any(_within(m, layer) for layer in RUN_LAYERS) or _within(m, INTEROP))
        and any(_within(name, INTEROP) for name in imports_of(m))
    )
    assert not reaching, reaching


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, AGENTS)])
def test_agents_never_import_the_run_layer_or_envs(module):
    bad = sorted(
        name
        for name in imports_of(module)
        if any(_within(name, layer) for layer in (*RUN_LAYERS, ENVS)) or name == "bam_rl"
    )
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, ENVS)])
def test_envs_import_only_the_leaf_modules_of_ours(module):
    bad = sorted(
        name
        for name in imports_of(module)
        if _top(name) == "bam_rl" and not _within(name, ENVS) and name not in LEAVES
    )
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", LEAVES)
def test_the_leaf_modules_import_only_numpy_and_the_standard_library(module):
    bad = sorted(n for n in imports_of(module) if _top(n) not in _STDLIB and _top(n) != "numpy")
    assert not bad, f"{module} (a leaf the environments use) imports {bad}"


def test_the_envs_check_can_fail(tmp_path, monkeypatch):
    """An environment may use ``bam_rl.checks`` but not the rest of the core."""
    fake = tmp_path / "envs" / "leaky.py"
    fake.parent.mkdir()
    fake.write_text("from bam_rl.checks import check_memory\nfrom bam_rl import families\n")
    monkeypatch.setitem(MODULES, "bam_rl.envs.leaky", fake)
    with pytest.raises(AssertionError, match=r"\['bam_rl.families'\]"):
        test_envs_import_only_the_leaf_modules_of_ours("bam_rl.envs.leaky")


def test_only_the_package_init_reaches_envs():
    reaching = sorted(
        m
        for m in MODULES
        if not any(_within(m, layer) for layer in (*RUN_LAYERS, ENVS))
        and any(_within(name, ENVS) for name in imports_of(m))
    )
    assert reaching == ["bam_rl"]


def test_nothing_imports_the_folders_by_their_source_names():
    """``agents`` and ``envs`` are folder names, not install names: PyPI has other projects of
    those names, so no module, test or script imports them."""
    paths = [*MODULES.values(), *ROOT.glob("tests/**/*.py"), *ROOT.glob("scripts/**/*.py")]
    offenders = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if _top(n) in ("agents", "envs")]
    assert not offenders


def test_no_import_cycles_between_our_modules():
    graph = {m: {n for n in imports_of(m) if n in MODULES and n != m} for m in MODULES}
    # a package's __init__ runs before any of its submodules; edges into an __init__ from
    # below it are the package importing itself, not a cycle of modules
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not _within(module, t)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert not cycles, f"import cycles: {cycles}"


def test_no_module_getattr_facades():
    offenders = sorted(
        m
        for m, path in MODULES.items()
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for node in ast.parse(path.read_text()).body
        )
    )
    assert not offenders


def test_the_checker_sees_a_violation(tmp_path, monkeypatch):
    """The checks above can fail: a core module importing pandas is caught."""
    fake = tmp_path / "bam_rl" / "leaky.py"
    fake.parent.mkdir()
    fake.write_text(
        "import numpy\n\ndef f():\n    import pandas\n    from bam_rl.harness import rollout\n"
    )
    monkeypatch.setitem(MODULES, "bam_rl.leaky", fake)
    assert {"pandas", "bam_rl.harness"} <= imports_of("bam_rl.leaky")
    with pytest.raises(AssertionError, match="pandas"):
        test_core_modules_need_only_numpy_scipy_and_each_other("bam_rl.leaky")


def test_the_readout_package_imports_no_private_names_across_its_files():
    """Issue 25: the readout is one package with one copy of Algorithm 1's rule
    (``bam_rl.readout.rule.accept``); its modules use each other's public names only."""
    offending = []
    for path in sorted((ROOT / "bam_rl" / "readout").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private and (node.level or (node.module or "").startswith("bam_rl")):
                    offending.append(f"{path.name}: {node.module} {private}")
    assert not offending, offending
    # the stop-and-tie rule is written once: the generic and fast loops call `accept`, or
    # the one greedy loop that calls it (`greedy_rounds`)
    for name in ("select.py", "greedy.py", "regression.py"):
        text = (ROOT / "bam_rl" / "readout" / name).read_text(encoding="utf-8")
        assert "accept(" in text or "greedy_rounds(" in text
        assert "if not round_scores[pick] > best" not in text


def test_the_cli_is_one_module_per_command_behind_one_table():
    """Issue 43: ``bam_rl.cli`` is a package; each command is a module owning its parser
    (``add``) and handler (``handle``), listed in ``COMMANDS``; the modules share only the
    public names of ``cli.common`` (no private names across its files)."""
    from bam_rl.cli import COMMANDS

    folder = ROOT / "bam_rl" / "cli"
    files = {path.stem for path in folder.glob("*.py")} - {"__init__", "__main__", "common"}
    assert set(COMMANDS) == files
    for name, module in COMMANDS.items():
        assert module.__name__ == f"bam_rl.cli.{name}"
        assert callable(module.add) and callable(module.handle)
    offending = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(RUN_LAYERS):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    offending.append(f"{path.name}: {node.module} {private}")
    assert not offending, offending


def test_bench_times_and_the_drills_check():
    """Issue 43: the reliability drills are ``bam_rl.drills`` (``bam-rl drill``), not
    benchmark groups; the benchmarks never import the drills."""
    from bam_rl import bench, drills

    assert not set(drills.DRILLS) & set(bench.GROUPS)
    bench_modules = [m for m in MODULES if _within(m, BENCH)]
    assert bench_modules
    for module in bench_modules:
        assert not any(_within(name, DRILLS) for name in imports_of(module))
    drill_files = {p.stem for p in (ROOT / "bam_rl" / "drills").glob("*.py")}
    assert {
        "soak",
        "fuzz",
        "interrupt",
        "address_space",
        "shared_sweeps",
        "bocd_cap",
    } <= drill_files


@pytest.mark.parametrize("package", sorted(RUN_LAYER_NEVER_IMPORTS))
def test_the_run_layer_packages_import_one_way(package):
    """Issue 54: the run layer is split by role, and its packages import one way: the run layer
    proper never reaches the experiments, the CLI, the benchmarks or the drills; the experiments
    and the benchmarks never reach the CLI or the drills."""
    modules = [m for m in MODULES if _within(m, package)]
    assert modules, package
    bad = sorted(
        f"{module}: {name}"
        for module in modules
        for name in imports_of(module)
        if any(_within(name, other) for other in RUN_LAYER_NEVER_IMPORTS[package])
    )
    assert not bad, bad


def test_the_run_layer_packages_are_where_the_layers_say():
    for package in RUN_LAYERS:
        assert (ROOT / Path(*package.split(".")) / "__init__.py").is_file(), package
    for old in ("experiments", "cli", "bench", "drills", "report.py", "record.py"):
        assert not (ROOT / "bam_rl" / "harness" / old).exists(), old  # moved; old paths alias


def test_scripts_are_experiments_not_shims():
    """Issue 54: every script is grouped under the docs page it serves (its folder) and names
    that page in its first docstring line; none is a forwarding shim (under 20 lines)."""
    scripts = sorted((ROOT / "scripts").rglob("*.py"))
    assert scripts
    for path in scripts:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) >= 20, f"{path.relative_to(ROOT)} has {len(lines)} lines"
        assert path.parent != ROOT / "scripts", f"{path.name} is not grouped by its docs page"
        first = (ast.get_docstring(ast.parse("\n".join(lines))) or "").split("\n")[0]
        page = re.search(r"docs/\w+\.md", first)
        assert page and (ROOT / page.group()).is_file(), (path.name, first)
