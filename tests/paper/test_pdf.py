"""The `paper` target: the PDF builds where LaTeX exists (one clear message where it does not)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from dpbandits.paper.pdf import LatexError, ToolchainMissing, build_pdf, find_toolchain

from conftest import REPO, SMOKE_PAPER, run_snakemake

HAS_TEX = shutil.which("pdflatex") is not None
NO_TEX = "no LaTeX toolchain (pdflatex) on PATH; install texlive-latex-base, " \
         "texlive-latex-recommended and latexmk to run this test"


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
    pdf = smoke_run / SMOKE_PAPER / "main.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 20_000
    log = (smoke_run / SMOKE_PAPER / "build" / "main.log").read_text(errors="replace")
    assert "Undefined control sequence" not in log and "Missing character" not in log
    figures = re.findall(r"<(figures/[^>]+\.pdf)", log)  # graphics LaTeX loaded
    assert len(figures) >= len(list((smoke_run / SMOKE_PAPER / "figures").glob("*.pdf"))) > 0
