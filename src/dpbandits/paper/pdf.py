"""Build paper/main.pdf with latexmk (else pdflatex), or say in one line how to get a toolchain."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from dpbandits.errors import DPBanditsError

INSTALL_HINT = (
    "no LaTeX toolchain found (need latexmk or pdflatex on PATH); install one, e.g. "
    "`sudo apt-get install --no-install-recommends texlive-latex-base "
    "texlive-latex-recommended latexmk` (Debian/Ubuntu) or `brew install --cask mactex-no-gui` "
    "(macOS), then rerun `snakemake --cores N paper`"
)
TIMEOUT = 300


class ToolchainMissing(DPBanditsError):
    """Neither latexmk nor pdflatex is installed."""


class LatexError(DPBanditsError):
    """LaTeX stopped with an error."""


def find_toolchain(path: str | None = None) -> tuple[str, str]:
    """("latexmk" | "pdflatex", executable) from PATH (or the given search path)."""
    latexmk = shutil.which("latexmk", path=path)
    pdflatex = shutil.which("pdflatex", path=path)
    if latexmk and pdflatex:
        return "latexmk", latexmk
    if pdflatex:
        return "pdflatex", pdflatex
    raise ToolchainMissing(INSTALL_HINT)


def _first_error(log_text: str) -> str:
    """The first LaTeX error of a .log file, as one line."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("!") or re.match(r"^.+:\d+: ", line):
            context = " ".join(x.strip() for x in lines[i:i + 3] if x.strip())
            return context[:400]
    return "see the LaTeX log"


def build_pdf(main_tex: Path, paper_dir: Path, out_pdf: Path, path: str | None = None) -> str:
    """Compile `main_tex` with the paper folder as working directory (where numbers.tex,
    generated/, figures/ and tables/ live); write `out_pdf`; return the tool used."""
    tool, exe = find_toolchain(path)
    paper_dir = paper_dir.resolve()
    build = paper_dir / "build"
    build.mkdir(parents=True, exist_ok=True)
    main_tex = main_tex.resolve()
    env = {**os.environ, "max_print_line": "10000", "error_line": "254",
           "half_error_line": "238"}  # unwrapped log lines
    if path is not None:
        env["PATH"] = path
    if tool == "latexmk":
        commands = [[exe, "-pdf", "-interaction=nonstopmode", "-halt-on-error",
                     "-file-line-error", f"-outdir={build}", "-jobname=main", str(main_tex)]]
    else:
        once = [exe, "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
                f"-output-directory={build}", "-jobname=main", str(main_tex)]
        commands = [once, once]
    for command in commands:
        proc = subprocess.run(command, cwd=paper_dir, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        if proc.returncode != 0:
            log = build / "main.log"
            text = log.read_text(errors="replace") if log.is_file() else proc.stdout
            raise LatexError(f"{tool} failed on {main_tex.name}: {_first_error(text)} "
                             f"(full log: {log})")
    out_pdf = Path(out_pdf)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(build / "main.pdf", out_pdf)
    return tool
