"""The `paper` target: the PDF builds where LaTeX exists (one clear message where it does not);
every published number and claim appears in reproduction.md with a verdict."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from dpbandits.pdf import LatexError, ToolchainMissing, build_pdf, find_toolchain

from conftest import REPO, run_snakemake

HAS_TEX = shutil.which("pdflatex") is not None
NO_TEX = "no LaTeX toolchain (pdflatex) on PATH; install texlive-latex-base, " \
         "texlive-latex-recommended and latexmk to run this test"
VERDICT = re.compile(r"\*\*(reproduced|differs|not run)\*\*")
SETTING_KEYS = {"source", "summary", "note", "notes", "text", "description", "instance",
                "x_axis", "y_axis", "column", "horizon", "approximate", "experiment", "metric",
                "reference", "where", "pick", "agreement", "K", "d", "T", "trials", "seeds",
                "delta", "epsilon_user", "values", "claims"}


def test_missing_toolchain_is_one_clear_message(tmp_path):
    with pytest.raises(ToolchainMissing) as info:
        find_toolchain(path=str(tmp_path))
    message = str(info.value)
    assert "\n" not in message
    assert "apt-get install" in message and "latexmk" in message and "paper" in message
    with pytest.raises(ToolchainMissing):
        build_pdf(REPO / "paper" / "main.tex", tmp_path, tmp_path / "main.pdf",
                  path=str(tmp_path))


@pytest.mark.skipif(not HAS_TEX, reason=NO_TEX)
def test_latex_errors_are_reported_in_one_line(tmp_path):
    main = tmp_path / "main.tex"
    main.write_text("\\documentclass{article}\\begin{document}\\undefinedmacro\\end{document}\n")
    with pytest.raises(LatexError, match="Undefined control sequence") as info:
        build_pdf(main, tmp_path, tmp_path / "out.pdf")
    assert "\n" not in str(info.value)


@pytest.mark.skipif(not HAS_TEX, reason=NO_TEX)
@pytest.mark.slow
def test_paper_target_builds_the_pdf(smoke_run: Path):
    proc = run_snakemake(smoke_run, "paper", "--cores", "1", "--configfile",
                         str(smoke_run / "smoke.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    pdf = smoke_run / "paper" / "main.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 20_000
    log = (smoke_run / "paper" / "build" / "main.log").read_text(errors="replace")
    assert "Undefined control sequence" not in log and "Missing character" not in log
    figures = re.findall(r"<(figures/[^>]+\.pdf)", log)  # graphics LaTeX loaded
    assert len(figures) >= len(list((smoke_run / "paper" / "figures").glob("*.pdf"))) > 0


def published_entries() -> list[tuple[str, str, dict]]:
    out = []
    for path in sorted((REPO / "paper" / "published").glob("*.yaml")):
        for key, entry in (yaml.safe_load(path.read_text()) or {}).items():
            out.append((path.stem, key, entry))
    return out


def other_numbers(node, path=()):
    """Numbers outside values/claims (walked independently of dpbandits.report)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if (not path and k in SETTING_KEYS) or k in {"source", "summary", "note", "notes",
                                                         "text", "description"}:
                continue
            yield from other_numbers(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from other_numbers(v, (*path, str(i)))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path, node
    elif isinstance(node, str) and re.search(r"\d", node) and len(node) <= 40:
        yield path, node


def md_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("| ")]


def test_every_published_number_and_claim_has_a_verdict(smoke_run: Path):
    md = (smoke_run / "paper" / "reproduction.md").read_text()
    rows = md_rows(md)
    missing = []
    for family, key, entry in published_entries():
        for label, cells in (entry.get("values") or {}).items():
            cells = cells if isinstance(cells, dict) else {None: cells}
            for grid, value in cells.items():
                cell = "—" if grid is None else f"{entry['column']}={float(grid):g}"
                hits = [r for r in rows if r.startswith(f"| {label} | {cell} | {value:.4g} |")
                        and VERDICT.search(r)]
                if len(hits) != 1:
                    missing.append(f"{family}:{key} {label} {cell} = {value}")
        for claim in entry.get("claims") or []:
            text = " ".join(str(claim.get("text", claim.get("id"))).split())
            if not [r for r in rows if r.startswith(f"| {text.replace('|', chr(92) + '|')} |")
                    and VERDICT.search(r)]:
                missing.append(f"{family}:{key} claim {text!r}")
        for path, value in other_numbers(entry):
            text = " › ".join(path)
            if not [r for r in rows if r.startswith(f"| {text} | {value:g} |"
                                                    if not isinstance(value, str)
                                                    else f"| {text} | {value} |")
                    and VERDICT.search(r)]:
                missing.append(f"{family}:{key} {text} = {value}")
    assert missing == []
