"""Fetch a pinned archive: local mirror folder first, then each URL (TLS verified), to a `.part`
file that is checked and renamed only when complete; interrupted HTTP transfers resume."""

from __future__ import annotations

import logging
import os
import shutil
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

from dpbandits.data import DataError
from dpbandits.data.files import CHUNK
from dpbandits.data.registry import ArchiveSpec
from dpbandits.data.verify import VerificationError, check_archive, release_words

log = logging.getLogger(__name__)
USER_AGENT = "dpbandits-data/1 (+research reproduction)"


class DownloadError(DataError):
    """No source delivered the archive; the message says where to place it by hand."""


def placement_message(spec: ArchiveSpec, dest: Path, mirror: str | None, tried: list[str]) -> str:
    """The one line shown when an archive cannot be fetched."""
    if mirror:
        where = f"{dest} (or into the mirror folder {mirror}, the config's data: mirror:)"
    else:
        where = f"{dest} (or into a folder named by the config's data: mirror: option)"
    sha = spec.sha256 or "not pinned (computed and printed at verification)"
    size = f", {spec.bytes} bytes" if spec.bytes else ""
    url = spec.urls[0] if spec.urls else "none configured"
    reasons = "; ".join(tried) if tried else "no source configured"
    return (f"cannot fetch {spec.file} ({reasons}). Place {spec.file} at {where} and re-run: "
            f"URL {url}, sha256 {sha}{size}")


def _short(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason).replace("\n", " ")
    return str(exc).replace("\n", " ") or type(exc).__name__


def _advice(source: str, is_url: bool, spec: ArchiveSpec) -> str:
    """What to do about a source whose bytes fail verification."""
    if is_url:
        return f"this URL does not serve {release_words(spec)}"
    return f"replace {source} with {release_words(spec)}"


def _fetch_url(url: str, part: Path, timeout: float, context: ssl.SSLContext) -> None:
    """Stream `url` into `part`, resuming from its current size over HTTP(S) when possible."""
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    resumable = url.startswith(("http://", "https://"))
    if offset and resumable:
        request.add_header("Range", f"bytes={offset}-")
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        append = offset > 0 and resumable and getattr(response, "status", 200) == 206
        if offset and not append:
            log.info("%s: server ignored the range request; starting over", url)
        with open(part, "ab" if append else "wb") as out:
            shutil.copyfileobj(response, out, CHUNK)
            out.flush()
            os.fsync(out.fileno())


def fetch_archive(
    spec: ArchiveSpec,
    dest: str | Path,
    *,
    mirror: str | None = None,
    timeout: float = 30.0,
) -> Path:
    """Put a verified copy of `spec.file` at `dest`, or raise DownloadError with one line.

    Sources in order: `<mirror>/<file>`, then `spec.urls`. A source whose bytes fail the
    size/sha256 check is discarded and the next one is tried. A partial HTTP transfer is kept
    as `<dest>.part` for resumption; every other failure leaves nothing behind.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    context = ssl.create_default_context()
    tried: list[str] = []
    sources: list[str] = []
    if mirror:
        sources.append(str(Path(mirror) / spec.file))
    sources.extend(spec.urls)
    for source in sources:
        start = time.perf_counter()
        is_url = "://" in source
        try:
            if is_url:
                log.info("downloading %s", source)
                _fetch_url(source, part, timeout, context)
            else:
                if not Path(source).is_file():
                    tried.append(f"{source}: not in the mirror folder")
                    continue
                log.info("copying %s", source)
                shutil.copyfile(source, part)
            check_archive(part, spec, name=source, advice=_advice(source, is_url, spec))
        except VerificationError as exc:
            tried.append(str(exc))
            part.unlink(missing_ok=True)
            continue
        except (urllib.error.URLError, OSError, ValueError) as exc:
            tried.append(f"{source}: {_short(exc)}")
            keep = is_url and source.startswith("http") and part.exists() and \
                part.stat().st_size > 0 and not isinstance(exc, urllib.error.HTTPError)
            if not keep:
                part.unlink(missing_ok=True)
            continue
        os.replace(part, dest)
        log.info("%s: %d bytes in %.1fs from %s", spec.file, dest.stat().st_size,
                 time.perf_counter() - start, source)
        return dest
    raise DownloadError(placement_message(spec, dest, mirror, tried))
