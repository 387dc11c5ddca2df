"""One results report for the whole paper (``bam-rl report DIR``).

:func:`build_report` reads whatever experiment folders exist in a results directory (the
layout ``bam-rl reproduce … --out DIR`` writes: ``DIR/tracking``, ``DIR/cartpole-episodic``,
…) and writes two files next to them:

* ``report.html`` — self-contained (figures embedded as base64 PNGs, inline CSS);
* ``report.md`` — its Markdown twin, linking the figures by relative path.

Both hold the table "paper's claim → measured number → holds?" (one row per claim of §4; each
experiment module contributes ``claims(folder)``, and the claims of experiments not run say
"not run"), every experiment's figures with captions, the wall time and exact command of each
experiment (``DIR/<name>/timing.json``, written by ``bam-rl reproduce``), the package versions
and the machine.

One module over the house's ~600 lines on purpose: it is one page, HTML and Markdown written
from the same rows, with the checks of the folders it reads.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import platform
import stat
import subprocess
import sys
import urllib.parse
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bam_rl._io import atomic_path

__all__ = [
    "PACKAGES",
    "build_report",
    "claim",
    "collect",
    "environment",
    "not_run",
    "read_not_run",
    "read_timing",
    "write_not_run",
    "write_timing",
]

#: Packages whose versions the report states (missing ones are said to be absent).
PACKAGES = (
    "bam-rl",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "gymnasium",
    "mujoco",
    "torch",
    "stable-baselines3",
    "joblib",
    "ray",
)
#: Verdicts of the claim table.
VERDICTS = ("yes", "partly", "no", "not run")
TIMING_FILE = "timing.json"
#: Written by ``bam-rl reproduce all`` into the folder of an experiment it did not run.
NOT_RUN_FILE = "not_run.json"
#: Larger PNG files are not embedded (the paper's figures are ~100–300 kB).
MAX_FIGURE_BYTES = 32 * 2**20
#: Tables an experiment may write beside its summary, shown under its figures when present:
#: experiment -> ((file, title), ...) (issue 52: the recurring worlds' recovery measures).
EXTRA_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "recurring-worlds": (
        (
            "recovery.csv",
            "Revisits (beyond the paper, issue 52): (seed, revisit) pairs whose first trial "
            "reaches 0.7 × GT MPC, the median first trial, the L2M recovery time (trials until "
            "the previous visit's last-trial level), identification accuracy and believed worlds",
        ),
        (
            "unannounced.csv",
            "Unannounced in-trial and stationary settings (issue 52): mean return, its paired "
            "difference from recursive Bayes (± s.e.), identification and believed worlds",
        ),
    ),
}
#: Most rows of an extra table shown.
MAX_TABLE_ROWS = 200


# ---------------------------------------------------------------------------- claims
def claim(
    experiment: str,
    section: str,
    text: str,
    measured: str | None = None,
    holds: bool | str | None = None,
) -> dict[str, str]:
    """One row of the claim table.

    Args:
        experiment: The experiment's CLI name (``"tracking"``, ``"cartpole-episodic"``, …).
        section: The paper's section (``"§4.1"``).
        text: The paper's claim, in a sentence.
        measured: What this code measured (``None``: not run).
        holds: ``True``/``False``, ``"partly"``, or ``None`` (not run).
    """
    if measured is None or holds is None:
        verdict = "not run"
        measured = measured if measured is not None else "not run"
    elif isinstance(holds, str):
        if holds not in VERDICTS:
            raise ValueError(f"holds must be a bool, None or one of {VERDICTS}, got {holds!r}")
        verdict = holds
    else:
        verdict = "yes" if holds else "no"
    return {
        "experiment": experiment,
        "section": section,
        "claim": text,
        "measured": measured,
        "holds": verdict,
    }


def not_run(
    experiment: str, section: str, texts: Sequence[str], reason: str = "not run"
) -> list[dict[str, str]]:
    """The rows of claims whose experiment has no results."""
    return [claim(experiment, section, text, reason, None) for text in texts]


# ---------------------------------------------------------------------------- timing
def write_timing(
    folder: str | os.PathLike[str], seconds: float, command: str, **extra: Any
) -> Path:
    """Writes ``folder/timing.json``: the wall time and the exact command of a run."""
    record = {
        "seconds": round(float(seconds), 3),
        "command": command,
        "finished": _now(),
        **extra,
    }
    return _write_record(Path(folder) / TIMING_FILE, record)


def _now() -> str:
    """The time now (UTC, to the second) as the records write it."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _write_record(path: Path, record: dict[str, Any]) -> Path:
    """Writes ``record`` as indented JSON to ``path`` (atomically; its folder created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(record, indent=2) + "\n")
    return path


def write_not_run(folder: str | os.PathLike[str], reason: str, command: str) -> Path:
    """Writes ``folder/not_run.json``: why ``bam-rl reproduce all`` did not run this
    experiment (``reason``, e.g. ``"no data (pass --data …)"``) and the command that skipped it.

    The report shows the experiment as "not run: <reason>" as long as the folder holds
    nothing else (results written later, or earlier, take precedence).

    Raises:
        ValueError: If ``reason`` is empty.
    """
    if not reason.strip():
        raise ValueError("reason must be a non-empty sentence, got an empty string")
    record = {"reason": reason, "command": command, "written": _now()}
    return _write_record(Path(folder) / NOT_RUN_FILE, record)


def read_not_run(folder: str | os.PathLike[str]) -> str | None:
    """The reason in ``folder/not_run.json`` (see :func:`write_not_run`), or ``None`` if the
    file is absent, unreadable or not one of ours."""
    path = Path(folder) / NOT_RUN_FILE
    if path.is_symlink() or not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    reason = value.get("reason") if isinstance(value, dict) else None
    return " ".join(reason.split())[:300] if isinstance(reason, str) and reason.strip() else None


def read_timing(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``folder/timing.json`` as a dict, or ``None`` if absent or unreadable."""
    path = Path(folder) / TIMING_FILE
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    seconds, command = value.get("seconds"), value.get("command", "")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 <= seconds < float("inf")
        or not isinstance(command, str)
        or not isinstance(value.get("quick", False), bool)
    ):
        return None  # a timing file that is not one of ours is "not recorded"
    return value


# ---------------------------------------------------------------------- environment
def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _git_commit() -> str:
    root = Path(__file__).resolve().parents[2]

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", *arguments], cwd=root, text=True, capture_output=True, timeout=10, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return f"{commit} (with uncommitted changes)" if dirty else commit


def environment() -> dict[str, dict[str, str]]:
    """Package versions and the machine: ``{"packages": {...}, "machine": {...}}``."""
    machine = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "CPU count": str(os.cpu_count()),
        "commit": _git_commit(),
    }
    if hasattr(os, "getloadavg"):
        machine["load average (1, 5, 15 min)"] = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    for variable in ("MUJOCO_GL", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if variable in os.environ:
            machine[variable] = os.environ[variable]
    return {"packages": {name: _version(name) for name in PACKAGES}, "machine": machine}


# --------------------------------------------------------------------------- collect
def _figures(folder: Path) -> list[Path]:
    """The PNG figures of an experiment folder: regular files only (no symlinks, FIFOs or
    devices), outside its ``runs/`` folder."""
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(
        p
        for p in folder.rglob("*.png")
        if "runs" not in p.relative_to(folder).parts
        and not p.is_symlink()
        and stat.S_ISREG(p.lstat().st_mode)
        and p.lstat().st_size <= MAX_FIGURE_BYTES
    )


def _unsafe_entry(folder: Path) -> str | None:
    """Why an experiment folder cannot be read safely: a symlink (the folder or an entry of
    it) or a file that is not a regular file (a FIFO would block the reader), else ``None``.
    The run files under ``runs/`` are never read by the report and are not scanned."""
    if folder.is_symlink():
        return f"{folder} is a symlink"
    for entry in folder.iterdir():
        if entry.name == "runs" and entry.is_dir() and not entry.is_symlink():
            continue
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode):
            return f"{entry} is a symlink"
        if stat.S_ISDIR(mode):
            reason = _unsafe_entry(entry)
            if reason:
                return reason
        elif not stat.S_ISREG(mode):
            return f"{entry} is not a regular file"
    return None


def _extra_tables(name: str, folder: Path) -> list[tuple[str, list[str], list[list[str]]]]:
    """The :data:`EXTRA_TABLES` of experiment ``name`` found in ``folder``, as (title, header,
    rows of text; numbers to 3 significant digits)."""
    import pandas as pd

    tables = []
    for file, title in EXTRA_TABLES.get(name, ()):
        path = folder / file
        if not path.is_file() or path.is_symlink():
            continue
        frame = pd.read_csv(path).head(MAX_TABLE_ROWS)
        rows = [
            [f"{v:.3g}" if isinstance(v, float) else str(v) for v in row]
            for row in frame.itertuples(index=False)
        ]
        tables.append((title, [str(c) for c in frame.columns], rows))
    return tables


def _results(folder: Path) -> list[Path]:
    """The entries of an experiment folder other than the not-run note and the temporary
    files of an atomic write."""
    return [
        entry
        for entry in folder.iterdir()
        if entry.name != NOT_RUN_FILE
        and not (entry.name.startswith(".") and entry.name.endswith(".tmp"))
    ]


def _run_files(directory: Path) -> list[Path]:
    """The run files of a ``bam-rl run --out`` folder in ``directory`` (a ``.parquet`` or
    ``.csv`` file beside its record ``<file>.json``); ``[]`` for any other folder."""
    return sorted(
        path
        for path in directory.iterdir()
        if path.suffix in (".parquet", ".csv")
        and not path.name.startswith(".")
        and path.with_name(path.name + ".json").is_file()
    )


def collect(
    directory: str | os.PathLike[str], report_problem: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Everything the report shows, read from ``directory``: per experiment (every name of
    :data:`~bam_rl.experiments.REPRODUCTIONS`) whether it ran, its figures, timing and
    claims; the claim table; the environment.

    An experiment folder that cannot be read (a corrupt or foreign summary file, a symlink, a
    FIFO) is reported in one line through ``report_problem`` (default: a warning) and shown
    as unreadable; the other experiments are reported as usual.

    Raises:
        ValueError: If ``directory`` holds no experiment folder at all.
    """
    from bam_rl.experiments import REPRODUCTIONS, describe, get_claims, get_entry

    directory = Path(directory)
    report = report_problem or (lambda line: warnings.warn(line, stacklevel=3))
    present = [name for name in REPRODUCTIONS if (directory / name).is_dir()]
    if not present:
        runs = _run_files(directory)
        if runs:
            raise ValueError(
                f"{str(directory)!r} is a `bam-rl run` folder ({len(runs)} run file(s)), not "
                "the output of `bam-rl reproduce EXPERIMENT --out DIR`, which report reads. "
                "For its summary table, run the same `bam-rl run` command again (it loads "
                "the finished runs and computes nothing); to plot it, load the files with "
                "pandas, e.g. pd.concat(map(pd.read_parquet, sorted(Path(DIR).glob("
                "'*.parquet')))) (docs/sweeps.md, 'Load and plot your runs')"
            )
        inside = sorted(p.name for p in directory.iterdir() if p.name in REPRODUCTIONS)
        hint = (
            " (it looks like one experiment's folder: give its parent)"
            if (directory / TIMING_FILE).exists() or directory.name in REPRODUCTIONS
            else ""
        )
        raise ValueError(
            f"{str(directory)!r} holds no experiment folder ({', '.join(REPRODUCTIONS)})"
            f"{hint}{'; found files named ' + ', '.join(inside) if inside else ''}"
        )
    experiments = []
    rows: list[dict[str, str]] = []
    for name in REPRODUCTIONS:
        folder = directory / name
        entry = get_entry(name)
        ran = name in present and any(_results(folder))
        reason = read_not_run(folder) if name in present and not ran else None
        problem = _unsafe_entry(folder) if ran else None
        claims: list[dict[str, str]] = []
        figures = _figures(folder) if ran else []
        captions: dict[Path, str] = {}
        tables: list[tuple[str, list[str], list[list[str]]]] = []
        if problem is None:
            try:
                claims = get_claims(name)(folder if ran else None)
                captions = {figure: describe(name, figure.parent) for figure in figures}
                tables = _extra_tables(name, folder) if ran else []
            except Exception as error:  # untrusted files: any failure is this folder's
                problem = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        if problem is not None:
            report(f"{name}: unreadable, skipped ({problem})")
            claims = [
                {**row, "measured": f"unreadable: {problem}", "holds": "not run"}
                for row in get_claims(name)(None)
            ]
            ran = False
        elif reason is not None:
            claims = [{**row, "measured": f"not run: {reason}"} for row in claims]
        rows.extend(claims)
        experiments.append(
            {
                "name": name,
                "title": entry.title,
                "section": entry.section,
                "caption": entry.caption,
                "captions": captions,
                "ran": ran,
                "reason": reason,
                "problem": problem,
                "folder": folder,
                "figures": figures if ran else [],
                "timing": read_timing(folder) if ran else None,
                "claims": claims,
                "tables": tables if ran else [],
            }
        )
    return {
        "directory": directory,
        "experiments": experiments,
        "claims": rows,
        "environment": environment(),
        "generated": _now(),
    }


def _seconds(timing: dict[str, Any] | None) -> str:
    if not timing or "seconds" not in timing:
        return "not recorded"
    seconds = float(timing["seconds"])
    return f"{seconds:,.1f} s" + (f" ({seconds / 60:.1f} min)" if seconds >= 120 else "")


def _scale(experiment: dict[str, Any]) -> str:
    if not experiment["ran"]:
        return "—"
    timing = experiment["timing"] or {}
    if "quick" not in timing:
        return "unknown"
    return "quick (smoke test)" if timing["quick"] else "paper"


#: Columns of the experiments table of both reports.
_EXPERIMENT_COLUMNS = ["experiment", "§", "scale", "wall time", "command"]


def _experiment_rows(experiments: Sequence[dict[str, Any]]) -> list[list[str]]:
    """One row per experiment: name, section, scale, wall time and command."""
    return [
        [
            e["name"],
            e["section"],
            _scale(e),
            _seconds(e["timing"]) if e["ran"] else "not run",
            (e["timing"] or {}).get("command", "—"),
        ]
        for e in experiments
    ]


def _count(rows: Sequence[dict[str, str]]) -> str:
    counts = {verdict: sum(row["holds"] == verdict for row in rows) for verdict in VERDICTS}
    return ", ".join(f"{count} {verdict}" for verdict, count in counts.items() if count)


#: How the tally names the scale of the runs a verdict comes from (:func:`_scale`).
_SCALE_WORDS = {
    "paper": "at the paper's scale",
    "quick (smoke test)": "on smoke tests only (not evidence)",
    "unknown": "at an unrecorded scale",
}


def _of_the_paper(row: dict[str, str]) -> bool:
    """Whether a claim row is one of the paper's claims (not beyond it, not an analysis)."""
    return row["section"].startswith("§") and "analysis" not in row["section"]


def _tally(rows: Sequence[dict[str, str]], scales: dict[str, str]) -> str:
    """The verdicts of the paper's claims, then (apart) those of the other rows, each split
    by the scale of the runs they come from (``scales``: experiment -> :func:`_scale`)."""

    def tally(group: Sequence[dict[str, str]]) -> str:
        parts = []
        for scale, words in _SCALE_WORDS.items():
            measured = [
                row
                for row in group
                if row["holds"] != "not run" and scales.get(row["experiment"]) == scale
            ]
            if measured:
                parts.append(f"{words}: {_count(measured)}")
        missing = sum(row["holds"] == "not run" for row in group)
        if missing:
            parts.append(f"not run: {missing}")
        return "; ".join(parts) or "none"

    paper = [row for row in rows if _of_the_paper(row)]
    other = [row for row in rows if not _of_the_paper(row)]
    text = f"The paper's claims ({len(paper)}) — {tally(paper)}"
    if other:
        text += f". Analyses and rows beyond the paper ({len(other)}) — {tally(other)}"
    return text


def _smoke_tests(experiments: Sequence[dict[str, Any]]) -> list[str]:
    """The experiments of the report that ran as smoke tests (``--quick``)."""
    return [e["name"] for e in experiments if _scale(e) == "quick (smoke test)"]


def headline(data: dict[str, Any]) -> str:
    """The report's first line: whether any part of it is a smoke test, and which.

    Args:
        data: What :func:`collect` returned.
    """
    experiments = data["experiments"]
    ran = [e["name"] for e in experiments if e["ran"]]
    smoke = _smoke_tests(experiments)
    if not ran:
        return f"No experiment ran here (0 of {len(experiments)}): every claim is not run."
    if smoke and smoke == ran:
        return (
            f"SMOKE TEST: all {len(ran)} experiments that ran (of {len(experiments)}) used "
            "--quick, short runs that check the code runs. The verdicts below are not the "
            "paper's numbers; rerun without --quick to test the claims."
        )
    if smoke:
        return (
            f"PARTLY A SMOKE TEST: {', '.join(smoke)} ran with --quick (short runs that check "
            "the code runs; their verdicts are not evidence); "
            f"{', '.join(name for name in ran if name not in smoke)} did not."
        )
    unknown = [e["name"] for e in experiments if _scale(e) == "unknown"]
    text = f"{len(ran)} of {len(experiments)} experiments ran"
    if unknown:
        return f"{text}; the scale of {', '.join(unknown)} is not recorded (no {TIMING_FILE})."
    return f"{text}, all at the paper's scale."


def _scales(data: dict[str, Any]) -> dict[str, str]:
    """Experiment -> the scale of its runs (:func:`_scale`)."""
    return {e["name"]: _scale(e) for e in data["experiments"]}


def _title(data: dict[str, Any]) -> str:
    """The report's title; it says when the report is (partly) a smoke test."""
    title = "BAM (Bayes with Adaptive Memory): results report"
    smoke = _smoke_tests(data["experiments"])
    if not smoke:
        return title
    ran = [e["name"] for e in data["experiments"] if e["ran"]]
    return title + (" — SMOKE TEST (--quick)" if smoke == ran else " — partly a smoke test")


def _caption(experiment: dict[str, Any], figure: Path) -> str:
    """The caption of one of an experiment's figures: what it shows and the runs behind it."""
    return str(experiment["captions"].get(figure) or experiment["caption"])


def _heading(experiment: dict[str, Any]) -> str:
    """``"Experiment 1: … (§4.1)"``; the title alone when it names no section of the paper."""
    section = experiment["section"]
    return f"{experiment['title']} ({section})" if section.startswith("§") else experiment["title"]


def _not_run(experiment: dict[str, Any]) -> tuple[str, str]:
    """Why an experiment has no results, and the command that runs it."""
    reason = experiment.get("reason") or f"no folder {experiment['name']}/ in the results"
    return reason, f"bam-rl reproduce {experiment['name']}"


# ------------------------------------------------------------------------------ HTML
_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #444; padding-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #bbb; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: .35em .6em; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
td.yes { background: #e3f4e1; } td.no { background: #fbe3e1; }
td.partly { background: #fdf3d9; } td.not-run { background: #eee; color: #666; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; margin-top: .4em; }
code, pre { background: #f6f6f6; font-size: 0.9em; } pre { padding: .6em; overflow-x: auto; }
.muted { color: #666; }
p.smoke { background: #fbe3e1; border: 1px solid #b00020; color: #b00020; padding: .5em; }
"""


def _html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    classes: Sequence[str | None] | None = None,
) -> str:
    lines = [
        "<table>",
        "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead>",
        "<tbody>",
    ]
    for index, row in enumerate(rows):
        cells = []
        for column, value in enumerate(row):
            css = classes[index] if classes is not None and column == len(row) - 1 else None
            attribute = f' class="{css}"' if css else ""
            cells.append(f"<td{attribute}>{html.escape(str(value))}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def _claim_rows(rows: Sequence[dict[str, str]], smoke: Sequence[str] = ()) -> list[list[str]]:
    """The claim table's cells; a measurement of a smoke test (``smoke``: those experiments)
    says so."""
    return [
        [
            row["section"],
            row["experiment"],
            row["claim"],
            f"smoke test: {row['measured']}"
            if row["experiment"] in smoke and row["holds"] != "not run"
            else row["measured"],
            row["holds"],
        ]
        for row in rows
    ]


def render_html(data: dict[str, Any]) -> str:
    """The self-contained HTML report of :func:`collect`'s ``data``."""
    directory: Path = data["directory"]
    title = _title(data)
    smoke = _smoke_tests(data["experiments"])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="{"smoke" if smoke else "scale"}"><strong>{html.escape(headline(data))}'
        "</strong></p>",
        f'<p class="muted">Generated {html.escape(data["generated"])} from '
        f"<code>{html.escape(str(directory.resolve()))}</code> by "
        f"<code>bam-rl report</code>; commit "
        f"{html.escape(data['environment']['machine']['commit'])}.</p>",
        "<h2>The paper's claims (§4), measured</h2>",
        f"<p>{html.escape(_tally(data['claims'], _scales(data)))}.</p>",
    ]
    rows = data["claims"]
    parts.append(
        _html_table(
            ["§", "experiment", "paper's claim", "measured", "holds?"],
            _claim_rows(rows, smoke),
            [r["holds"].replace(" ", "-") for r in rows],
        )
    )
    parts.append("<h2>Experiments</h2>")
    parts.append(
        _html_table(
            _EXPERIMENT_COLUMNS,
            _experiment_rows(data["experiments"]),
        )
    )
    for experiment in data["experiments"]:
        parts.append(f'<h2 id="{experiment["name"]}">{html.escape(_heading(experiment))}</h2>')
        if experiment["problem"]:
            parts.append(
                f'<p class="muted">Unreadable, skipped: {html.escape(experiment["problem"])}</p>'
            )
            continue
        if not experiment["ran"]:
            reason, command = _not_run(experiment)
            parts.append(
                f'<p class="muted">Not run: {html.escape(reason)}. Run '
                f"<code>{html.escape(command)}</code>.</p>"
            )
            continue
        timing = experiment["timing"] or {}
        parts.append(
            f"<p>Wall time: {html.escape(_seconds(timing or None))}. Command: "
            f"<code>{html.escape(timing.get('command', 'not recorded'))}</code></p>"
        )
        for figure in experiment["figures"]:
            encoded = base64.b64encode(figure.read_bytes()).decode("ascii")
            relative = figure.relative_to(directory).as_posix()
            parts.append(
                f'<figure><img src="data:image/png;base64,{encoded}" '
                f'alt="{html.escape(relative)}">'
                f"<figcaption><code>{html.escape(relative)}</code>: "
                f"{html.escape(_caption(experiment, figure))}</figcaption></figure>"
            )
        for title, header, rows in experiment.get("tables", ()):
            parts.append(f"<p>{html.escape(title)}</p>")
            parts.append(_html_table(header, rows))
        parts.append(
            _html_table(
                ["§", "experiment", "paper's claim", "measured", "holds?"],
                _claim_rows(experiment["claims"], smoke),
                [r["holds"].replace(" ", "-") for r in experiment["claims"]],
            )
        )
    env = data["environment"]
    parts.append("<h2>Software and machine</h2>")
    parts.append(_html_table(["package", "version"], list(env["packages"].items())))
    parts.append(_html_table(["machine", "value"], list(env["machine"].items())))
    parts.append(
        "<p>Regenerate this report with <code>bam-rl report "
        f"{html.escape(str(directory))}</code>; <code>bam-rl reproduce all</code> "
        "writes it at the end.</p>"
    )
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


# -------------------------------------------------------------------------- Markdown
_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]|#!"})


def _md_cell(value: Any) -> str:
    """Text from the results as Markdown text: HTML escaped (a renderer passes raw HTML
    through), Markdown's punctuation backslash-escaped, one line."""
    text = html.escape(str(value), quote=False).translate(_MD_SPECIAL)
    return " ".join(text.splitlines())


def _md_link(relative: str) -> str:
    return urllib.parse.quote(relative)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(data: dict[str, Any]) -> str:
    """The Markdown twin of :func:`render_html` (figures linked by relative path)."""
    directory: Path = data["directory"]
    lines = [
        f"# {_title(data)}",
        "",
        f"**{_md_cell(headline(data))}**",
        "",
        f"Generated {data['generated']} from `{directory.resolve()}` by `bam-rl report`; "
        f"commit {data['environment']['machine']['commit']}.",
        "",
        "## The paper's claims (§4), measured",
        "",
        f"{_md_cell(_tally(data['claims'], _scales(data)))}.",
        "",
        _md_table(
            ["§", "experiment", "paper's claim", "measured", "holds?"],
            _claim_rows(data["claims"], _smoke_tests(data["experiments"])),
        ),
        "",
        "## Experiments",
        "",
        _md_table(
            _EXPERIMENT_COLUMNS,
            _experiment_rows(data["experiments"]),
        ),
        "",
    ]
    for experiment in data["experiments"]:
        lines += [f"## {_heading(experiment)}", ""]
        if experiment["problem"]:
            lines += [f"Unreadable, skipped: {_md_cell(experiment['problem'])}", ""]
            continue
        if not experiment["ran"]:
            reason, command = _not_run(experiment)
            lines += [f"Not run: {_md_cell(reason)}. Run `{command}`.", ""]
            continue
        timing = experiment["timing"] or {}
        lines += [
            f"Wall time: {_seconds(timing or None)}. Command: "
            f"{_md_cell(timing.get('command', 'not recorded'))}",
            "",
        ]
        for figure in experiment["figures"]:
            relative = figure.relative_to(directory).as_posix()
            lines += [
                f"![{_md_cell(relative)}]({_md_link(relative)})",
                "",
                f"*{_md_cell(relative)}: {_md_cell(_caption(experiment, figure))}*",
                "",
            ]
        for title, header, rows in experiment.get("tables", ()):
            lines += [f"{_md_cell(title)}:", "", _md_table(header, rows), ""]
    env = data["environment"]
    lines += [
        "## Software and machine",
        "",
        _md_table(["package", "version"], list(env["packages"].items())),
        "",
        _md_table(["machine", "value"], list(env["machine"].items())),
        "",
        f"Regenerate with `bam-rl report {directory}`; `bam-rl reproduce all` writes it "
        "at the end.",
        "",
    ]
    return "\n".join(lines)


def build_report(
    directory: str | os.PathLike[str], report_problem: Callable[[str], None] | None = None
) -> tuple[Path, Path]:
    """Writes ``directory/report.html`` and ``directory/report.md`` from the experiment
    folders in ``directory``; returns both paths.

    Each file is written atomically (a temporary file renamed over it), so an existing
    ``report.md`` that is a symlink is replaced, never written through.

    Args:
        directory: The results directory (``bam-rl reproduce … --out DIR``).
        report_problem: Called with one line per unreadable experiment folder (default: a
            warning); see :func:`collect`.

    Raises:
        FileNotFoundError: If ``directory`` does not exist.
        NotADirectoryError: If it is a file.
        ValueError: If it holds no experiment folder.
    """
    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"results directory {str(directory)!r} does not exist")
    if not directory.is_dir():
        raise NotADirectoryError(f"results directory {str(directory)!r} is a file, not a folder")
    data = collect(directory, report_problem)
    html_path, md_path = directory / "report.html", directory / "report.md"
    for path, text in ((html_path, render_html(data)), (md_path, render_markdown(data))):
        with atomic_path(path) as temporary:
            temporary.write_text(text, encoding="utf-8")
    return html_path, md_path


if __name__ == "__main__":  # pragma: no cover
    print(*build_report(sys.argv[1] if len(sys.argv) > 1 else "results"), sep="\n")
