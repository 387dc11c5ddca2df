"""Smoke tests of ``bam-rl bench`` (the table and the JSON rows; no timing is asserted)."""

from __future__ import annotations

import json
import math

import pytest

from bam_rl import bench
from bam_rl.cli import main


def test_format_table_reports_missing_peers_and_bars():
    rows = [
        bench.make_row("fast thing", 0.5, 2.0, 1.0, True, "g"),
        bench.make_row("peer missing (NOT INSTALLED)", 0.5, group="g"),
        bench.make_row("ratio bar", 2.0, 1.0, "≥ 1.7×", False, "g"),
    ]
    assert rows[0]["ratio"] == pytest.approx(4.0) and rows[0]["bar"] == "≤ 1 s"
    assert math.isnan(rows[1]["ratio"]) and rows[1]["met"] is None
    table = bench.format_table(rows).splitlines()
    assert table[0].split()[:6] == ["workload", "ours", "peer", "ratio", "bar", "met"]
    assert " yes " in table[2]
    assert " NO " in table[4]
    assert "—" in table[3]


def test_bench_cli_quick_writes_json(tmp_path, capsys):
    path = tmp_path / "rows.json"
    assert main(["bench", "--quick", "--only", "envs", "bocd", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "workload" in printed and "GravityCartPole" in printed
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert payload["quick"] is True and payload["cores"] >= 1
    rows = payload["rows"]
    assert {row["group"] for row in rows} == {"envs", "bocd"}
    for row in rows:
        assert set(row) == {"group", "workload", "ours", "peer", "ratio", "bar", "met", "load"}
        assert "FAILED" not in row["workload"]
    # the posterior checks hold even at smoke size (they are not timings)
    checks = [row for row in rows if "vs unpruned" in row["workload"]]
    assert checks and all(row["met"] for row in checks)


def test_a_failing_group_becomes_a_row(monkeypatch):
    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setitem(bench.GROUPS, "envs", broken)
    parser = bench.argparse.ArgumentParser()
    bench.add_arguments(parser)
    rows = bench.run(["envs"], parser.parse_args(["--quick"]))
    assert len(rows) == 1 and "FAILED" in rows[0]["workload"] and "boom" in rows[0]["workload"]


def test_mppi_table_is_parsed_into_rows():
    stdout = (
        "workload    ours wall (cpu)    peer wall (cpu)   ratio\n"
        "MPPI control step 32x50 (float32)    24.467ms ( 4.592)    66.855ms (10.928)    2.73\n"
        "GroundTruthMPPI control step 32x50    197.819ms (29.150)\n"
        "NumPy floor of one control step (best of 300): 32,000 normals 0.375 ms + triangular "
        "solve 0.265 ms + 50 x (product, float32 cos, batched product) 0.975 ms = 1.615 ms\n"
        "BAM greedy readout, 90 trials    8.586 s  (30 selected; 31 greedy rounds)\n"
        "  of which 2326 x 2 Cholesky factorisations at 118 us = 0.548 s\n"
    )
    rows = bench.parse_mppi(stdout)
    assert [row["ours"] for row in rows] == pytest.approx([0.024467, 0.197819, 0.001615, 8.586])
    assert "best of 300" in rows[2]["workload"]
    assert rows[0]["peer"] == pytest.approx(0.066855) and math.isnan(rows[1]["peer"])
    assert "pytorch_mppi" in rows[0]["workload"] and "4.592" in rows[0]["workload"]


def test_markdown_table_replaces_only_the_block_between_the_markers(tmp_path):
    rows = [
        bench.make_row("fast | thing", 0.5, 2.0, 1.0, True, "g"),
        bench.make_row("missed bar", 2.0, 1.0, "≥ 1.7×", False, "g"),
    ]
    info = {**bench.machine(), "load_at_end": 0.5, "quick": True}
    table = bench.markdown_table(rows, info)
    lines = table.splitlines()
    assert "bam-rl bench --quick" in lines[0]
    assert lines[2].startswith("| group | workload |") and len(lines) == 6
    assert "fast \\| thing" in lines[4] and "4.00×" in lines[4] and "| yes |" in lines[4]
    assert "**no**" in lines[5]
    page = tmp_path / "performance.md"
    page.write_text(
        f"# Performance\n\nintro\n\n{bench.MARKDOWN_START}\nold table\n{bench.MARKDOWN_END}\n"
        "\nanalysis\n",
        encoding="utf-8",
    )
    bench.write_markdown(page, table)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\nintro\n\n") and text.endswith("\nanalysis\n")
    assert "old table" not in text and table in text
    bench.write_markdown(page, table)  # idempotent
    assert page.read_text(encoding="utf-8") == text
    fresh = tmp_path / "table.md"  # no markers: the whole file
    bench.write_markdown(fresh, table)
    assert fresh.read_text(encoding="utf-8") == table
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_table_fits_100_columns_and_keeps_the_whole_bar():
    long_label = "greedy BLR 200x4, m=90 x 200 rows (MPPI model, same readout: True) " * 4
    rows = [
        bench.make_row(long_label, 0.116, 0.3, "ours ≤ 1 s, ratio ≥ 3", False, "fast"),
        bench.make_row("short", 0.5, 2.0, 1.0, True, "g"),
    ]
    lines = bench.format_table(rows).splitlines()
    assert max(len(line) for line in lines) <= bench.TABLE_WIDTH
    assert "ours ≤ 1 s, ratio ≥ 3" in lines[2] and " NO " in lines[2]
    assert lines[3].startswith("  ")  # the label continues, indented
    words = " ".join(line[: lines[1].index(" ")].strip() for line in lines[2:-1])
    assert words.split() == long_label.split()  # nothing of the label is lost
    assert lines[-1].startswith("short") and " yes " in lines[-1]
