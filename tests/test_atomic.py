"""All-or-nothing writes and the clean-up of temporaries that killed writers left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpbandits.atomic import (
    atomic_output,
    remove_stale_temporaries,
    temporary_path,
    write_text_atomic,
)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_success_renames_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.txt"
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.txt"]


def test_failure_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"), atomic_output(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_folder_output_replaces_the_old_folder(tmp_path: Path) -> None:
    target = tmp_path / "tree"
    (target / "stale").mkdir(parents=True)
    with atomic_output(target) as tmp:
        tmp.mkdir()
        (tmp / "fresh.txt").write_text("1")
    assert sorted(p.name for p in target.iterdir()) == ["fresh.txt"]


def test_next_write_removes_a_dead_writers_temporary_only(tmp_path: Path) -> None:
    target = tmp_path / "shard.h5"
    dead_file = temporary_path(target, pid=_dead_pid())
    dead_file.write_text("partial")
    dead_folder = temporary_path(target, pid=_dead_pid())
    dead_folder.mkdir()
    (dead_folder / "part").write_text("x")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as alive:
        live = temporary_path(target, pid=alive.pid)
        live.write_text("being written")
        other_host = temporary_path(target, pid=_dead_pid(), host="elsewhere")
        other_host.write_text("another machine's")
        other_target = temporary_path(tmp_path / "other.h5", pid=_dead_pid())
        other_target.write_text("another file's")

        write_text_atomic(target, "done")
        alive.kill()

    assert target.read_text() == "done"
    assert not dead_file.exists() and not dead_folder.exists()
    assert live.exists() and other_host.exists() and other_target.exists()


def test_remove_stale_temporaries_reports_what_it_removed(tmp_path: Path) -> None:
    target = tmp_path / "summary.csv"
    stale = temporary_path(target, pid=_dead_pid())
    stale.write_text("x")
    assert remove_stale_temporaries(target) == [stale]
    assert remove_stale_temporaries(target) == []
