"""The reproduction report as Markdown, HTML and JSON, and as written by a real Snakemake run."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from dpbandits.config import load_config
from dpbandits.paper.render import render_html, render_markdown, summary_line_of, write_report

from conftest import REPO, SMOKE_PAPER, run_snakemake
from paper_helpers import build_toy


def test_renderings_carry_every_row(tmp_path):
    rep = build_toy(tmp_path)
    md, page = render_markdown(rep), render_html(rep)
    assert rep.summary_line() in md
    for r in rep.numbers:
        assert r.label.replace("|", "\\|") in md and f"**{r.status}**" in md
    assert md.count("| ") > len(rep.numbers)
    assert page.count("<tr>") == md.count("\n| ")
    assert '<strong class="reproduced">' in page and "base_below_priv" in md


def test_the_report_opens_with_a_summary_per_paper_and_explains_every_difference(tmp_path):
    rep = build_toy(tmp_path)
    md = render_markdown(rep)
    counts = rep.counts("glm")
    assert f"tests: {rep.summary_line('glm')}." in md and counts["differs"] == 1
    assert "Differs: Priv ε=4, S = 3 (tab)." in md
    differ_rows = [line for line in md.splitlines() if "**differs**" in line]
    assert differ_rows and all("Why: known deviation" in line for line in differ_rows)
    assert md.index("Settings in the rows") < md.index("## ")
    write_report(rep, tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary_line"] == rep.summary_line() == summary_line_of(tmp_path / "r.json")
    assert all(v is None or math.isfinite(v) for r in data["numbers"] for v in (r["mean"],))


def test_a_report_at_another_horizon_says_not_comparable_not_not_run(tmp_path):
    rep = build_toy(tmp_path, horizon=300, published_horizon=5000)
    md, page = render_markdown(rep), render_html(rep)
    assert rep.summary_line().startswith("0 reproduced, 0 differ, 0 inconclusive, ")
    assert f"{rep.counts()['not comparable']} not comparable" in rep.summary_line()
    assert "> **Not comparable with the papers: toy ran at another horizon" in md
    rows = [line for line in md.splitlines() if line.startswith("| Base | S = 2 | 100 |")]
    assert rows == [f"| Base | S = 2 | 100 | {rows[0].split(' | ')[3]} | ±10 % | **not "
                    "comparable** (smoke scale): T = 300 here, published T = 5000 |"]
    assert "**not run**: not comparable" not in md and "from published" not in md
    assert "smoke scale, not comparable: no difference to a published value" in md
    assert "class='warning'" in page and '<strong class="not-comparable">' in page


def test_summary_line_of_a_missing_report(tmp_path):
    assert summary_line_of(tmp_path / "none.json") is None


# --------------------------------------------------------------------------- real Snakemake run


def test_smoke_run_writes_the_report(smoke_run: Path):
    paper = smoke_run / SMOKE_PAPER
    data = json.loads((paper / "reproduction.json").read_text())
    md = (paper / "reproduction.md").read_text()
    page = (paper / "reproduction.html").read_text()
    assert data["summary_line"] in md and data["summary_line"] in page
    # smoke scale: nothing is compared with the paper's numbers, and the report says why
    assert data["summary"]["reproduced"] == data["summary"]["differs"] == 0
    smoke = [r for r in data["numbers"] if r["mean"] is not None]
    assert smoke and all("smoke scale" in r["reason"] for r in smoke)
    assert {r["status"] for r in smoke} == {"not comparable"}
    assert "**not comparable** (smoke scale): T = " in md and "Not comparable with the papers" in md
    assert not [line for line in md.splitlines() if "**not run**" in line and "T = " in line]
    logs = sorted((smoke_run / ".snakemake" / "log").glob("*.snakemake.log"))
    assert any(f"dpbandits reproduction: {data['summary_line']}" in log.read_text()
               for log in logs)


@pytest.mark.slow
def test_snakemake_report_captions(smoke_run: Path):
    out = smoke_run / "report.html"
    proc = run_snakemake(smoke_run, "--configfile", str(smoke_run / "smoke.yaml"),
                         "--report", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = out.read_text()
    assert "Reproduction report: every published number" in page
    config = load_config(smoke_run / "smoke.yaml")
    synthetic = [n for n, e in config["experiments"].items() if e["group"] == "synthetic"]
    registered = set(re.findall(r'"filename": "([^"]+)"', page))
    assert "reproduction.html" in registered
    for name in synthetic:
        assert [f for f in registered if re.fullmatch(rf"{name}(_\w+)?\.(png|csv)", f)], name
    assert page.count("for experiment <tt") >= len(synthetic)


def test_every_output_kind_of_the_paper_config_has_a_caption():
    config = load_config(REPO / "config" / "config.yaml")
    kinds = {spec["kind"] for exp in config["experiments"].values() for spec in exp["outputs"]}
    captions = REPO / "workflow" / "report"
    assert sorted(k for k in kinds if not (captions / f"{k}.rst").is_file()) == []
    assert (captions / "output.rst").is_file() and (captions / "workflow.rst").is_file()
