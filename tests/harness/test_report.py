"""The results report (``bam-rl report``): built from --quick results plus minimal folders of the
experiments too slow for a smoke test; every figure it references exists, the claim table has
one row per claim of §4, and the HTML parses (and, marked slow, renders in headless Chromium)."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bam_rl.experiments import REPRODUCTIONS, get_claims, get_entry
from bam_rl.experiments import bandits as bandits_module
from bam_rl.experiments import cartpole as cartpole_module
from bam_rl.experiments import cartpole_readout as cartpole_readout_module
from bam_rl.experiments import mnist as mnist_module
from bam_rl.experiments import piecewise as piecewise_module
from bam_rl.experiments import recurring as recurring_module
from bam_rl.experiments import tracking as tracking_module

#: Claims of §4 per experiment: the report must have exactly these rows.
CLAIM_COUNTS = {
    "tracking": len(tracking_module.CLAIMS),
    # the paper's claims, then segment BAM's (beyond the paper)
    "cartpole-episodic": len(cartpole_module.CLAIMS["episodic"])
    + len(cartpole_module.SEGMENT_CLAIMS["episodic"]),
    "cartpole-continual": len(cartpole_module.CLAIMS["continual"])
    + len(cartpole_module.SEGMENT_CLAIMS["continual"]),
    "bandits": len(bandits_module.CLAIMS),
    "mnist": len(mnist_module.CLAIMS),
    "cartpole-readout": len(cartpole_readout_module.CLAIMS),
    "piecewise-bandits": len(piecewise_module.CLAIMS),
    # run by name only (not by `reproduce all`): its one not-run row
    "recurring-worlds": len(recurring_module.claims(None)),
}


def _fake_cartpole(folder: Path, setting: str) -> None:
    """A cart-pole folder from synthetic per-trial rewards (no MuJoCo run), through the
    experiment's own summary and figure code."""
    gravities = cartpole_module.QUICK_SCHEDULES[setting]
    starts = cartpole_module.episode_starts(gravities)
    rng = np.random.default_rng(0)
    rows = []
    for method in cartpole_module.SETTINGS[setting]["methods"]:
        for seed in range(2):
            for trial, gravity in enumerate(gravities):
                if method == "gt" and trial not in starts:
                    continue
                row = {
                    "method": method,
                    "seed_index": seed,
                    "trial": trial,
                    "reward": float(np.clip(rng.normal(0.3 * trial / 5, 0.1), -1, 1)),
                    "gravity": gravity,
                    "steps": 200,
                }
                if setting == "continual":
                    selections = {"bam": trial + 1, "bam_bocd": 2, "bocd": 0}
                    row["n_selections"] = selections.get(method, 2)
                rows.append(row)
    trials = pd.DataFrame(rows)
    folder.mkdir(parents=True)
    trials.to_csv(folder / "trials.csv", index=False)
    cartpole_module.summarize(trials, setting).to_csv(folder / "summary.csv", index=False)
    cartpole_module.plot_cartpole(trials, setting, folder / f"cartpole_{setting}.png")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from bam_rl.cli import main

    out = tmp_path_factory.mktemp("results")
    assert (
        main(
            ["reproduce", "tracking", "--quick", "--seeds", "2", "--out", str(out), "--no-progress"]
        )
        == 0
    )
    assert (
        main(
            ["reproduce", "bandits", "--quick", "--seeds", "1", "--out", str(out), "--no-progress"]
        )
        == 0
    )
    _fake_cartpole(out / "cartpole-episodic", "episodic")
    _fake_cartpole(out / "cartpole-continual", "continual")
    # mnist: a minimal summary (no figure), as if only the numbers were kept
    (out / "mnist").mkdir()
    pd.DataFrame(
        {
            "method": ["ols", "bam_paper", "bam"],
            "side": 14,
            "accuracy_mean": [60.0, 36.0, 80.0],
            "accuracy_sd": [3.0, 1.0, 1.5],
            "seeds": 2,
        }
    ).to_csv(out / "mnist" / "mnist_summary.csv", index=False)
    assert main(["report", str(out)]) == 0
    return out


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in {"meta", "img", "br", "hr", "link"}:
            self.stack.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in {"td", "th"}:
            self._cell = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> in {self.stack}"
        self.stack.pop()
        if tag in {"td", "th"} and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_report_has_every_figure_claim_and_command(results):
    html_text = (results / "report.html").read_text(encoding="utf-8")
    markdown = (results / "report.md").read_text(encoding="utf-8")
    parser = _Collector()
    parser.feed(html_text)
    parser.close()
    assert parser.stack == [], "unclosed tags"

    # every figure of the run folders, embedded in the HTML and linked (existing) in the MD
    pngs = sorted(p for p in results.rglob("*.png") if "runs" not in p.parts)
    assert len(pngs) == 1 + 2 + 2  # tracking, bandits x 2 settings, cart-pole x 2
    assert len(parser.images) == len(pngs)
    for source in parser.images:
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert sorted(links) == sorted(p.relative_to(results).as_posix() for p in pngs)
    assert all((results / link).is_file() for link in links)

    # the claim table: one row per claim of §4, in both files
    claims_table = parser.tables[0]
    assert claims_table[0] == ["§", "experiment", "paper's claim", "measured", "holds?"]
    body = claims_table[1:]
    assert len(body) == sum(CLAIM_COUNTS.values())
    for name, count in CLAIM_COUNTS.items():
        assert sum(row[1] == name for row in body) == count
        assert markdown.count(f"| {name} |") >= count
    assert {row[4] for row in body} <= {"yes", "no", "partly", "not run"}
    # the quick runs were measured (a claim about 50 arms has no 50-arm run to measure)
    tracking_rows = [row for row in body if row[1] == "tracking"]
    assert all(row[4] != "not run" for row in tracking_rows)

    # wall time and exact command of each experiment run through the CLI
    timing = json.loads((results / "tracking" / "timing.json").read_text())
    assert timing["seconds"] > 0
    assert timing["command"].startswith("bam-rl reproduce tracking --quick --seeds 2 --out ")
    assert timing["command"] in html_text and timing["command"] in markdown
    for package in ("numpy", "scipy", "gymnasium", "mujoco"):
        assert package in html_text and package in markdown
    assert "CPU count" in html_text


def test_the_first_line_says_which_parts_are_smoke_tests(results):
    """tracking and bandits ran with --quick; the synthetic cart-pole and MNIST folders have
    no timing file (scale unknown): the report is partly a smoke test and says so first."""
    markdown = (results / "report.md").read_text(encoding="utf-8")
    first, _, headline = markdown.splitlines()[:3]
    assert first.startswith("# ") and "smoke test" in first.lower()
    assert headline.startswith("**PARTLY A SMOKE TEST: tracking, bandits ran with --quick")
    html_text = (results / "report.html").read_text(encoding="utf-8")
    h1 = re.search(r"<h1>(.*?)</h1>\s*<p[^>]*>(.*?)</p>", html_text, re.S)
    assert h1 is not None and "smoke test" in h1.group(1).lower()
    assert "PARTLY A SMOKE TEST" in h1.group(2)
    # the tally separates the smoke tests' verdicts, and each of their rows says so
    tally = next(line for line in markdown.splitlines() if line.startswith("The paper's claims"))
    assert "on smoke tests only (not evidence):" in tally
    rows = [line for line in markdown.splitlines() if line.startswith("| §4.1 | tracking |")]
    assert rows and all("| smoke test: " in row for row in rows)


def test_captions_count_the_runs_found_and_no_heading_is_empty(results):
    markdown = (results / "report.md").read_text(encoding="utf-8")
    html_text = (results / "report.html").read_text(encoding="utf-8")
    # bandits --quick --seeds 1: 2 arm configurations x 1 seed, per setting (not the paper's 5 x 5)
    assert markdown.count("10 arms: 2 arm configurations × 1 seed = 2 runs per method") == 2
    assert "5 arm configurations" not in markdown and "× 5 seeds" not in markdown
    assert "This run: 2 seeds × 300 steps for each of 5 methods." in markdown  # tracking
    trials = len(cartpole_module.QUICK_SCHEDULES["episodic"])
    assert f"This run: 2 seeds × {trials} trials for each of" in markdown  # the fake cart-pole
    headings = re.findall(r"^#+ (.*)$", markdown, re.M)
    headings += re.findall(r"<h[12][^>]*>(.*?)</h[12]>", html_text)
    assert len(headings) >= 2 * (len(REPRODUCTIONS) + 4)
    for heading in headings:
        assert heading.strip() and "()" not in heading and not heading.endswith("( )")
    for name in REPRODUCTIONS:  # every experiment has its own heading, run or not
        title = get_entry(name).title
        assert sum(html.unescape(h).startswith(title) for h in headings) == 2, name
    captions = re.findall(r"<figcaption><code>[^<]*</code>: (.*?)</figcaption>", html_text)
    captions += re.findall(r"^\*[^*:]+: (.*)\*$", markdown, re.M)
    assert len(captions) == 2 * 5 and all(len(caption) > 40 for caption in captions)


def test_claims_of_experiments_not_run(tmp_path):
    for name in REPRODUCTIONS:
        rows = get_claims(name)(None)
        assert len(rows) == CLAIM_COUNTS[name]
        assert all(row["holds"] == "not run" and row["measured"] == "not run" for row in rows)
    (tmp_path / "tracking").mkdir()
    (tmp_path / "tracking" / "note.txt").write_text("started, nothing written yet")
    from bam_rl.experiments.report import build_report

    html_path, md_path = build_report(tmp_path)
    assert "not run" in md_path.read_text() and html_path.stat().st_size > 1_000


def test_report_command_rejects_missing_directory(tmp_path, capsys):
    from bam_rl.cli import main

    with pytest.raises(SystemExit) as error:
        main(["report", str(tmp_path / "missing")])
    assert error.value.code == 2
    assert "does not exist" in capsys.readouterr().err


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
def test_report_renders_in_headless_chromium(results, tmp_path):
    import matplotlib.image as mpimg

    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary on PATH")
    screenshot = tmp_path / "report.png"
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,3000",
        f"--screenshot={screenshot}",
        (results / "report.html").resolve().as_uri(),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    image = mpimg.imread(screenshot)[..., :3]
    assert image.shape[0] >= 2000 and image.shape[1] >= 1000
    # not blank: text and figures make the page vary, and a good part of it is not white
    assert image.std() > 0.05
    assert (image.mean(axis=2) < 0.9).mean() > 0.02
