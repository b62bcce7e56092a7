"""Paper scale: whether a run is comparable with the papers, and the mark its outputs carry.

An experiment runs at paper scale when its horizon T equals that of the same experiment in the
paper-scale configuration (`config/config.yaml`, of which `config/smoke.yaml` is an overlay),
the rule the reproduction report applies to published horizons (dpbandits.paper.compare,
`horizon_reason`). At any other horizon every figure and table of the experiment is marked
(`scale_note`): `dpbandits.outputs.make_outputs` sets the mark for the duration of one
experiment (`marked`), `plots.save_figure` draws it on every figure and `paper.tables.write_table`
puts it in front of every caption.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from dpbandits.config import REPO_ROOT, read_yaml, resolve_overlays

PAPER_CONFIG = REPO_ROOT / "config" / "config.yaml"

_MARK: ContextVar[str | None] = ContextVar("dpbandits_scale_mark", default=None)


@lru_cache(maxsize=4)
def _read_paper_config(path: str) -> dict[str, Any]:
    return resolve_overlays(read_yaml(Path(path)) or {}, Path(path))


def paper_config(path: str | Path | None = None) -> dict[str, Any]:
    """The paper-scale configuration (overlays resolved, not validated; read once per path)."""
    return _read_paper_config(str(Path(path or PAPER_CONFIG).resolve()))


def horizon_of(exp: dict[str, Any]) -> int | None:
    """Largest horizon T of an experiment entry (its instance, or its instance grid)."""
    values = [exp.get("instance", {}).get("horizon"),
              *(exp.get("instance_grid") or {}).get("horizon", [])]
    values = [int(v) for v in values if v is not None]
    return max(values) if values else None


def paper_horizon(experiment: str, path: str | Path | None = None) -> int | None:
    """T of `experiment` in the paper-scale configuration; None when it has no such entry."""
    exp = paper_config(path).get("experiments", {}).get(experiment)
    return horizon_of(exp) if isinstance(exp, dict) else None


def scale_note(experiment: str, horizon: int | None, path: str | Path | None = None) \
        -> str | None:
    """None at paper scale (or without a paper-scale entry); else why the run is not comparable,
    e.g. "smoke scale, not comparable: T = 300, paper T = 5000"."""
    paper = paper_horizon(experiment, path)
    if paper is None or horizon is None or int(horizon) == paper:
        return None
    kind = "smoke scale, not comparable" if int(horizon) < paper else "not comparable"
    return f"{kind}: T = {int(horizon)}, paper T = {paper}"


@contextmanager
def marked(note: str | None) -> Iterator[None]:
    """Within the block, figures and tables carry `note` (None: no mark)."""
    token = _MARK.set(note)
    try:
        yield
    finally:
        _MARK.reset(token)


def current_mark() -> str | None:
    """The mark of the outputs being written now (None at paper scale)."""
    return _MARK.get()
