"""Fixtures of the policy tests."""

from __future__ import annotations

import pytest

from dpbandits.privacy import accountant


@pytest.fixture
def isolated_cache(tmp_path_factory, monkeypatch):
    """The accountant's disk cache in this session's temporary folder, its memo empty."""
    monkeypatch.setenv("DPBANDITS_CACHE", str(tmp_path_factory.getbasetemp() / "acc-cache"))
    accountant.clear_memo()
    yield
    accountant.clear_memo()
