"""The reproduction report as Markdown, HTML and JSON (paper/reproduction.{md,html,json})."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from dpbandits.atomic import write_text_atomic
from dpbandits.paper.claims import ClaimResult
from dpbandits.paper.compare import NumberResult
from dpbandits.paper.reproduction import PublishedClaimResult, Reproduction
from dpbandits.paper.verdict import (
    DIFFERS,
    DIVERGED_FACTOR,
    INCONCLUSIVE,
    INCONSISTENT,
    REPRODUCED,
    plain,
)

PAPERS = {
    "glm": "Shuffle and Joint Differential Privacy for Generalized Linear Contextual Bandits "
           "(Sarmasarkar)",
    "linear": "Differentially Private Stochastic Linear Bandits: (Almost) for Free "
              "(Hanna, Girgis, Fragouli, Diggavi)",
    "ts": "AdaPrivate-TS: Private Thompson Sampling for Contextual Bandits with Privacy "
          "Amplification (Riyazat, Ukwatta)",
}


def _num(x: float | None, digits: int = 4) -> str:
    return plain(x, digits)


def _ours(r: NumberResult) -> str:
    if r.mean is None:
        return "—"
    se = f" ± {_num(r.se)}" if r.se is not None else ""
    tail = f"n = {r.n}"
    if r.diverged:
        tail += (f"; median {_num(r.median)}, {r.diverged} of {r.n} runs diverged (regret above "
                 f"{DIVERGED_FACTOR:g} × the median)")
    return f"{_num(r.mean)}{se} ({tail})"


def _verdict(status: str, reason: str, trials_needed: int | None = None,
             explanation: str = "") -> str:
    """"**status**: reason" (without repeating a status the reason starts with), the trials
    that would decide an inconclusive verdict, and the explanation docs/ give for a difference."""
    if reason.startswith(status):
        text = f"**{status}**{reason[len(status):]}"
    else:
        text = f"**{status}**" + (f": {reason}" if reason else "")
    if status == INCONCLUSIVE and trials_needed:
        text += f"; decisive at about {trials_needed} trials at the observed spread"
    if explanation and status in (DIFFERS, INCONSISTENT, INCONCLUSIVE):
        text += f". Why: {explanation}"
    return text


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _sections(rep: Reproduction) -> list[dict[str, Any]]:
    """Display structure shared by the Markdown and HTML renderings."""
    papers = list(PAPERS) + sorted({e["paper"] for e in rep.entries.values()} - set(PAPERS))
    out = []
    for paper in papers:
        blocks = []
        for ref, info in rep.entries.items():
            if info["paper"] != paper:
                continue
            numbers = [r for r in rep.numbers if f"{r.family}:{r.entry}" == ref]
            claims = [r for r in rep.published_claims if f"{r.family}:{r.entry}" == ref]
            exp = info["experiment"]
            meta = rep.experiments.get(exp or "", {})
            where = f"experiment `{exp}`" if exp else "no experiment configured"
            if meta.get("T"):
                where += f" (T = {meta['T']}, {meta['trials']} trials)"
            horizon = f"; published T = {info['horizon']}" if info.get("horizon") else ""
            if meta.get("T") and info.get("horizon") and int(meta["T"]) != int(info["horizon"]):
                scale = "smoke scale" if int(meta["T"]) < int(info["horizon"]) else "another scale"
                horizon += f" — {scale}, not comparable: no difference to a published value"
            blocks.append({"title": f"{ref} — {info['source']}", "where": where + horizon,
                           "metric": info["metric"] if numbers else "", "numbers": numbers,
                           "claims": claims, "extras": rep.extras.get(ref, [])})
        own = [c for c in rep.claims if c.paper == paper and not c.covers]
        covering = [c for c in rep.claims if c.paper == paper and c.covers]
        if blocks or own or covering:
            out.append({"paper": paper, "title": PAPERS.get(paper, paper), "blocks": blocks,
                        "claims": own, "covering": covering})
    return out


def number_rows(numbers: list[NumberResult]) -> list[list[str]]:
    """Table rows of published numbers (NUMBER_HEADER)."""
    return [[r.label, r.grid.replace("=", " = ") or "—", _num(r.published), _ours(r), r.rule,
             _verdict(r.status, r.reason, r.trials_needed, r.explanation)] for r in numbers]


NUMBER_HEADER = ["algorithm", "setting", "published", "ours (mean ± s.e.)",
                 "equivalence margin", "verdict"]
PCLAIM_HEADER = ["claim", "published", "ours", "checked by", "verdict"]
CLAIM_HEADER = ["claim", "source", "experiment", "test", "measured", "verdict"]


def pclaim_rows(claims: list[PublishedClaimResult]) -> list[list[str]]:
    """Table rows of published claims and items (PCLAIM_HEADER)."""
    return [[r.text, r.published or "—", r.measured or "—", r.via or "—",
             _verdict(r.status, r.reason)] for r in claims]


def claim_rows(claims: list[ClaimResult]) -> list[list[str]]:
    """Table rows of tested claims (CLAIM_HEADER)."""
    return [[_claim_text(c), c.source, c.experiment, c.test or "—", c.measured or "—",
             _verdict(c.status, c.reason, c.trials_needed, c.explanation)] for c in claims]


def _claim_text(c: ClaimResult) -> str:
    text = f"{c.text} (`{c.id}`)"
    if c.reading:
        text += f"; our reading: {c.reading}"
    if not c.counted:
        text += f"; not counted: {c.not_counted}"
    return text


def scale_warning(rep: Reproduction) -> str | None:
    """One line naming the experiments run at another horizon than the papers', or None."""
    names = sorted({r.experiment for r in rep.verdict_rows()
                    if r.status == "not comparable" and "T = " in r.reason and r.experiment})
    if not names:
        return None
    return (f"Not comparable with the papers: {', '.join(names)} ran at another horizon (e.g. "
            "the smoke configuration): their rows show our values next to the published ones "
            "without a difference, as not comparable")


LEGEND = (
    "Settings in the rows: ε privacy budget (ε₀ for the local model); S the norm bound that sets "
    "κ (Private-GLM); v the exploration scale of the TS methods and α the confidence scale of the "
    "UCB methods (v = 1 and α = 1 are the defaults); q the subsampling rate; B the batch size; k "
    "the group size; \"grid cell = best\" the best cell of a grid-searched method. A method name "
    "followed by settings in brackets is that cell of the method's grid."
)
VERDICTS = (
    "*reproduced*: the 90 % interval of our estimate lies inside the stated equivalence margin "
    "around the published value (or, for an ordering, its one-sided test establishes it at the "
    "stated level) and the standard error is at most a third of the margin; *differs*: the "
    "interval lies outside the margin, or the opposite direction is significant; *inconclusive*: "
    "neither, with the number of trials that would decide it at the observed spread; *paper "
    "inconsistent*: the paper's own numbers contradict the claim (the arithmetic is shown); "
    "*not comparable*: results at another scale or that cannot answer; *not run*: no results. "
    "The headline counts each test once; published claims decided by a test point to it; "
    "arithmetic checks and claims with no published counterpart are shown but not counted. "
    "Rules: docs/reproduction.md."
)


def paper_summary(rep: Reproduction, paper: str) -> list[str]:
    """Two or three sentences on one paper: counts by verdict, what differs and what is
    inconsistent, and the trials the inconclusive rows need."""
    rows = rep.verdict_rows(paper)
    if not rows:
        return []
    counts = rep.counts(paper)
    out = [f"{len(rows)} tests: {rep.summary_line(paper)}."]
    for status, word in ((DIFFERS, "Differs"), (INCONSISTENT, "Paper inconsistent")):
        names = [_row_name(r) for r in rows if r.status == status]
        if names:
            out.append(f"{word}: {', '.join(names)}.")
    needed = [r.trials_needed for r in rows
              if r.status == INCONCLUSIVE and getattr(r, "trials_needed", None)]
    if counts[INCONCLUSIVE]:
        decidable = (f"{len(needed)} of them would be decided by more trials (up to "
                     f"{max(needed)})" if needed else "none of them by more trials alone")
        out.append(f"{counts[INCONCLUSIVE]} inconclusive: {decidable}.")
    if counts[REPRODUCED] == 0 and len(out) == 1:
        out.append("Nothing reproduced at this scale.")
    return out


def _row_name(row: Any) -> str:
    if isinstance(row, NumberResult):
        grid = f", {row.grid.replace('=', ' = ')}" if row.grid else ""
        return f"{row.label}{grid} ({row.entry})"
    if isinstance(row, ClaimResult):
        return f"`{row.id}`"
    return f"\"{row.text}\""


def render_markdown(rep: Reproduction) -> str:
    """The report as Markdown: headline, per-paper summary and legend, then per paper its
    entries and claims."""
    warning = scale_warning(rep)
    lines = ["# Reproduction report", "", f"**{rep.summary_line()}** (distinct tests).", "",
             *([f"> **{warning}.**", ""] if warning else [])]
    for section in _sections(rep):
        summary = paper_summary(rep, section["paper"])
        if summary:
            lines += [f"- **{section['title']}**: {' '.join(summary)}"]
    lines += ["", VERDICTS, "", LEGEND, ""]
    for section in _sections(rep):
        lines += [f"## {section['title']}", ""]
        for block in section["blocks"]:
            metric = f"; metric: {block['metric']}" if block["metric"] else ""
            lines += [f"### {block['title']}", "", f"Measured by {block['where']}{metric}.", ""]
            if block["numbers"]:
                lines.append(_md_table(NUMBER_HEADER, number_rows(block["numbers"])))
            if block["extras"]:
                extra = "; ".join(
                    f"{e['label']}{' ' + e['grid'] if e['grid'] else ''}"
                    f"{' [' + e['accounting'] + ']' if e['accounting'] else ''}: "
                    f"{_num(e['mean'])} ± {_num(e['se'])}" for e in block["extras"])
                lines += [f"Also measured (no published value): {extra}.", ""]
            if block["claims"]:
                lines.append(_md_table(PCLAIM_HEADER, pclaim_rows(block["claims"])))
        if section["covering"]:
            lines += ["#### Tests behind the published claims above", "",
                      _md_table(CLAIM_HEADER, claim_rows(section["covering"]))]
        if section["claims"]:
            lines += ["### Further claims of the paper text", "",
                      _md_table(CLAIM_HEADER, claim_rows(section["claims"]))]
    trials = trials_rows(rep)
    if trials:
        lines += ["## More trials", "", TRIALS_INTRO, "", _md_table(TRIALS_HEADER, trials)]
    for group in rep.earlier:
        lines += [f"## Earlier code state: {group['title']}", "", _earlier_intro(group), "",
                  _md_table(EARLIER_HEADER, earlier_rows(group))]
    return "\n".join(lines).rstrip() + "\n"


PRACTICAL_TRIALS = 200
"""config/examples/decisive_trials.yaml runs an experiment with at most this many trials."""
TRIALS_INTRO = (
    "Inconclusive rows by experiment: the trials each would need to be decided at the observed "
    f"spread. config/examples/decisive_trials.yaml runs every experiment with up to "
    f"{PRACTICAL_TRIALS} trials at the most its rows need; rows that need more are listed as "
    "beyond it, and rows without a number cannot be decided by more trials alone (no margin, or "
    "an estimate on the boundary)."
)
TRIALS_HEADER = ["experiment", "trials run", "trials in the overlay", "rows it decides",
                 f"beyond {PRACTICAL_TRIALS} trials", "not decidable by trials"]


def trials_rows(rep: Reproduction) -> list[list[str]]:
    """One row per experiment with inconclusive rows (TRIALS_HEADER)."""
    planned = rep.decisive_trials(PRACTICAL_TRIALS)
    rows: dict[str, list[list[str]]] = {}
    for row in rep.verdict_rows():
        if row.status != INCONCLUSIVE or not row.experiment:
            continue
        needed = getattr(row, "trials_needed", None)
        kind = 0 if needed and needed <= PRACTICAL_TRIALS else 1 if needed else 2
        text = _row_name(row) + (f" ({needed})" if needed else "")
        rows.setdefault(row.experiment, [[], [], []])[kind].append(text)
    return [[name, str(rep.experiments.get(name, {}).get("trials") or "—"),
             str(planned.get(name, "—")), *(", ".join(g) or "—" for g in groups)]
            for name, groups in sorted(rows.items())]


EARLIER_HEADER = ["experiment", "instance", "ε", "earlier", "this run", "difference / s.e.",
                  "status"]


def _earlier_intro(group: dict[str, Any]) -> str:
    return (f"{group['algorithm']} at commit {group['commit']} against this run; since then "
            f"{group['change']}. Measured: {group['measured']}.")


def earlier_rows(group: dict[str, Any]) -> list[list[str]]:
    """Table rows of one earlier-results group."""
    rows = []
    for r in group["rows"]:
        now = "—" if r["now"] is None else f"{_num(r['now'])} ± {_num(r['now_se'])} (n = {r['n']})"
        z = "—" if r["z"] is None else f"{r['z']:+.1f}"
        rows.append([r["experiment"], r["grid"], str(r["epsilon"]),
                     f"{_num(r['before'])} ± {_num(r['before_se'])}", now, z, r["status"]])
    return rows


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em;width:100%}
th,td{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3}.reproduced{color:#1a7f37}.differs{color:#b3261e}
.not-run{color:#6b6b6b}.not-comparable{color:#9a6700}.inconclusive{color:#9a6700}
.paper-inconsistent{color:#8250df}.summary{font-size:1.2em;font-weight:bold}
.warning{border:2px solid #b3261e;background:#fdecea;padding:0.5em;font-weight:bold}
code{background:#f5f5f5;padding:0 3px}
"""


def _html_table(header: list[str], rows: list[list[str]], statuses: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row, status in zip(rows, statuses, strict=True):
        cells = [html.escape(str(c)) for c in row[:-1]]
        verdict = str(row[-1]).replace("**", "")
        word, _, reason = verdict.partition(": ")
        cls = status.replace(" ", "-")
        cells.append(f'<strong class="{cls}">{html.escape(word)}</strong>'
                     + (f": {html.escape(reason)}" if reason else ""))
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_html(rep: Reproduction) -> str:
    """A self-contained HTML page with the same content as the Markdown report."""
    warning = scale_warning(rep)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>Reproduction report: {html.escape(rep.summary_line())}</title>",
        f"<style>{_STYLE}</style></head><body><h1>Reproduction report</h1>",
        f"<p class='summary'>{html.escape(rep.summary_line())} (distinct tests)</p>",
        *([f"<p class='warning'>{html.escape(warning)}.</p>"] if warning else []),
        "<ul>" + "".join(
            f"<li><strong>{html.escape(sec['title'])}</strong>: "
            f"{html.escape(' '.join(paper_summary(rep, sec['paper'])).replace('`', ''))}</li>"
            for sec in _sections(rep) if paper_summary(rep, sec["paper"])) + "</ul>",
        f"<p>{html.escape(VERDICTS.replace('*', ''))}</p><p>{html.escape(LEGEND)}</p>",
    ]
    for section in _sections(rep):
        parts.append(f"<h2>{html.escape(section['title'])}</h2>")
        for block in section["blocks"]:
            metric = f"; metric: {block['metric']}" if block["metric"] else ""
            parts.append(f"<h3>{html.escape(block['title'])}</h3><p>Measured by "
                         f"{html.escape(block['where'].replace('`', '') + metric)}.</p>")
            if block["numbers"]:
                parts.append(_html_table(NUMBER_HEADER, number_rows(block["numbers"]),
                                         [r.status for r in block["numbers"]]))
            if block["extras"]:
                items = "".join(
                    f"<li>{html.escape(e['label'])} {html.escape(e['grid'])}: "
                    f"{_num(e['mean'])} ± {_num(e['se'])}</li>" for e in block["extras"])
                parts.append(f"<p>Also measured (no published value):</p><ul>{items}</ul>")
            if block["claims"]:
                parts.append(_html_table(PCLAIM_HEADER, pclaim_rows(block["claims"]),
                                         [r.status for r in block["claims"]]))
        for key, title in (("covering", "Tests behind the published claims above"),
                           ("claims", "Further claims of the paper text")):
            if section[key]:
                parts.append(f"<h3>{title}</h3>")
                parts.append(_html_table(CLAIM_HEADER, claim_rows(section[key]),
                                         [r.status for r in section[key]]))
    for group in rep.earlier:
        parts.append(f"<h2>Earlier code state: {html.escape(group['title'])}</h2>"
                     f"<p>{html.escape(_earlier_intro(group))}</p>")
        head = "".join(f"<th>{html.escape(h)}</th>" for h in EARLIER_HEADER)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                       for row in earlier_rows(group))
        parts.append(f"<table><tr>{head}</tr>{body}</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(rep: Reproduction, md: str | Path, html_path: str | Path,
                 json_path: str | Path) -> None:
    """Write the Markdown, HTML and JSON renderings (each atomically)."""
    for path, text in ((md, render_markdown(rep)), (html_path, render_html(rep)),
                       (json_path, json.dumps(_finite(rep.as_dict()), indent=1,
                                              default=_json_default))):
        write_text_atomic(path, text)


def _finite(value: Any) -> Any:
    """NaN/inf → None, recursively (strict JSON)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(float(value)):
        return None
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer | np.floating):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def summary_line_of(json_path: str | Path) -> str | None:
    """The summary line of a written report, or None when there is none."""
    path = Path(json_path)
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get("summary_line")
