"""The committed table of pinned archives (`datasets.tsv`) and config overrides of its rows."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from dpbandits.data import DEFAULT_ROOT
from dpbandits.errors import ConfigError

UNKNOWN = "unknown"
SHA256_RE = re.compile(r"[0-9a-f]{64}")
DATA_KEYS = {"root", "mirror", "timeout", "files", "svd"}
FILE_KEYS = {"urls", "sha256", "bytes"}
SVD_KEYS = {"center", "seed", "shrinkage", "refit", "refit_min", "fold_in"}
CENTERINGS = ("biases", "global", "user", "none")
FOLD_INS = ("projection", "none")
SVD_DEFAULTS = {"center": "biases", "seed": 0, "shrinkage": 5.0, "refit": 0.1,
                "refit_min": 1000, "fold_in": "projection"}
"""Defaults of data/svd (docs/realdata.md, "Feature model" and "Online features")."""


@dataclass(frozen=True)
class ArchiveSpec:
    """One pinned archive: where to get it and what it must hash to (None = not pinned)."""

    dataset: str
    file: str
    bytes: int | None
    sha256: str | None
    md5: str | None
    urls: tuple[str, ...]

    @property
    def stem(self) -> str:
        """Folder name of the extracted archive."""
        return self.file.removesuffix(".zip").removesuffix(".tar.gz").removesuffix(".tgz")


def _field(value: str) -> str | None:
    return None if value == UNKNOWN else value


@lru_cache(maxsize=1)
def archives() -> dict[str, ArchiveSpec]:
    """Every archive of the committed table, by file name (table order)."""
    text = resources.files("dpbandits.data").joinpath("datasets.tsv").read_text("utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    header, body = rows[0], rows[1:]
    out = {}
    for row in body:
        rec = dict(zip(header, row, strict=True))
        size = _field(rec["bytes"])
        out[rec["file"]] = ArchiveSpec(
            dataset=rec["dataset"],
            file=rec["file"],
            bytes=None if size is None else int(size),
            sha256=_field(rec["sha256"]),
            md5=_field(rec["md5"]),
            urls=tuple(rec["urls"].split()),
        )
    return out


def pinned_sha256(file: str) -> str | None:
    """The committed table's sha256 of `file` (None when not pinned or not in the table)."""
    spec = archives().get(file)
    return None if spec is None else spec.sha256


def datasets() -> dict[str, list[str]]:
    """Dataset name → its archive file names."""
    out: dict[str, list[str]] = {}
    for spec in archives().values():
        out.setdefault(spec.dataset, []).append(spec.file)
    return out


def stems(dataset: str) -> dict[str, str]:
    """Archive file name → extraction folder name, for the archives of `dataset`."""
    return {f: archives()[f].stem for f in datasets()[dataset]}


def check_data_config(data: dict[str, Any] | None) -> dict[str, Any]:
    """Validate the config's `data:` mapping and fill its defaults (one ConfigError if bad)."""
    data = dict(data or {})
    unknown = sorted(set(data) - DATA_KEYS)
    if unknown:
        raise ConfigError(f"unknown key(s) data/{', data/'.join(unknown)}; allowed: "
                          f"{', '.join(sorted(DATA_KEYS))}")
    data.setdefault("root", DEFAULT_ROOT)
    data.setdefault("mirror", None)
    data.setdefault("timeout", 30.0)
    data.setdefault("files", {})
    data.setdefault("svd", {})
    if not isinstance(data["root"], str) or not data["root"]:
        raise ConfigError(f"data/root = {data['root']!r} is not allowed; must be a folder path")
    if data["mirror"] is not None and not isinstance(data["mirror"], str):
        raise ConfigError(f"data/mirror = {data['mirror']!r} is not allowed; must be a folder "
                          "path or null")
    timeout = data["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"data/timeout = {timeout!r} is not allowed; must be seconds > 0")
    for name, over in data["files"].items():
        if name not in archives():
            raise ConfigError(f"data/files/{name} is not a known archive; allowed: "
                              f"{', '.join(archives())}")
        bad = sorted(set(over) - FILE_KEYS)
        if bad:
            raise ConfigError(f"unknown key(s) {', '.join(bad)} in data/files/{name}; allowed: "
                              f"{', '.join(sorted(FILE_KEYS))}")
        if "sha256" in over and not SHA256_RE.fullmatch(str(over["sha256"])):
            raise ConfigError(f"data/files/{name}/sha256 = {over['sha256']!r} is not allowed; "
                              "must be 64 lower-case hex digits")
        if "bytes" in over and (not isinstance(over["bytes"], int) or over["bytes"] < 1):
            raise ConfigError(f"data/files/{name}/bytes = {over['bytes']!r} is not allowed; "
                              "must be an integer >= 1")
        urls = over.get("urls", [])
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise ConfigError(f"data/files/{name}/urls = {urls!r} is not allowed; must be a "
                              "list of URLs")
    data["svd"] = _check_svd(data["svd"])
    return data


def _number(key: str, value: Any, low: float, what: str, integer: bool = False,
            strict: bool = False) -> None:
    """One ConfigError line unless data/svd/<key> is a number (an integer) >= low (> low)."""
    kind = int if integer else int | float
    if isinstance(value, bool) or not isinstance(value, kind) or value < low or (
            strict and value == low):
        raise ConfigError(f"data/svd/{key} = {value!r} is not allowed; must be {what}")


def _check_svd(svd: Any) -> dict[str, Any]:
    """data/svd with its defaults filled (one ConfigError line if bad)."""
    if not isinstance(svd, dict):
        raise ConfigError(f"data/svd = {svd!r} is not allowed; must be a mapping of "
                          f"{', '.join(sorted(SVD_KEYS))}")
    bad = sorted(set(svd) - SVD_KEYS)
    if bad:
        raise ConfigError(f"unknown key(s) {', '.join(bad)} in data/svd; allowed: "
                          f"{', '.join(sorted(SVD_KEYS))}")
    svd = {**SVD_DEFAULTS, **svd}
    if svd["center"] not in CENTERINGS:
        raise ConfigError(f"data/svd/center = {svd['center']!r} is not allowed; allowed: "
                          f"{', '.join(CENTERINGS)}")
    if svd["fold_in"] not in FOLD_INS:
        raise ConfigError(f"data/svd/fold_in = {svd['fold_in']!r} is not allowed; allowed: "
                          f"{', '.join(FOLD_INS)}")
    _number("seed", svd["seed"], 0, "an integer >= 0", integer=True)
    _number("shrinkage", svd["shrinkage"], 0, "a number >= 0 (events)")
    _number("refit", svd["refit"], 0, "a share > 0 (e.g. 0.1: refit when the past has grown "
            "by 10 %)", strict=True)
    _number("refit_min", svd["refit_min"], 1, "an integer >= 1 (events)", integer=True)
    return svd


def archive_spec(file: str, data: dict[str, Any] | None = None) -> ArchiveSpec:
    """The table row of `file` with the config's `data/files/<file>` overrides applied.

    Overriding `urls` replaces the pinned list; overriding `sha256` without `bytes` drops the
    pinned size (a different release has a different size).
    """
    if file not in archives():
        raise ConfigError(f"archive {file!r} is not in the table; allowed: "
                          f"{', '.join(archives())}")
    spec = archives()[file]
    over = check_data_config(data)["files"].get(file, {})
    changes: dict[str, Any] = {}
    if "urls" in over:
        changes["urls"] = tuple(over["urls"])
    if "sha256" in over:
        changes.update(sha256=over["sha256"], bytes=over.get("bytes"), md5=None)
    elif "bytes" in over:
        changes["bytes"] = over["bytes"]
    return replace(spec, **changes)
