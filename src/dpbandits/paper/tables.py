"""Table writers: the same DataFrame as CSV, Markdown and LaTeX."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpbandits.atomic import atomic_output, write_text_atomic
from dpbandits.scale import current_mark


def mean_sd(mean: float, sd: float, digits: int = 1) -> str:
    """"mean ± sd" at a fixed number of decimals."""
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"),
                 ("#", r"\#"), ("±", r"$\pm$"), ("ε", r"$\varepsilon$"), ("κ", r"$\kappa$")):
        text = text.replace(a, b)
    return text


def to_markdown(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (empty cells for missing values)."""
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |"
            for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"


def to_latex(df: pd.DataFrame, caption: str) -> str:
    """A DataFrame as a booktabs LaTeX table with its caption."""
    cols = "l" * len(df.columns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{cols}}}",
             r"\toprule", " & ".join(_latex_escape(str(c)) for c in df.columns) + r" \\",
             r"\midrule"]
    for row in df.itertuples(index=False):
        cells = ["" if pd.isna(v) else _latex_escape(str(v)) for v in row]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex_escape(caption)}}}",
              r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    """Write a DataFrame as CSV without its index, all-or-nothing."""
    with atomic_output(path) as tmp:
        df.to_csv(tmp, index=False)


def write_table(df: pd.DataFrame, stem: Path, caption: str) -> list[Path]:
    """Write `stem.csv`, `stem.md` and `stem.tex`; the caption starts with the scale mark."""
    note = current_mark()
    if note:
        caption = f"{note.upper()}. {caption}"
    paths = [stem.with_suffix(s) for s in (".csv", ".md", ".tex")]
    write_csv(df, paths[0])
    write_text_atomic(paths[1], f"{caption}\n\n" + to_markdown(df))
    write_text_atomic(paths[2], to_latex(df, caption))
    return paths
