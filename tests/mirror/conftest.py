"""Fixtures of the mirror's tests: real database files in tmp_path, never mocked."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents import mirror
from incidents.layout import Root


@pytest.fixture
def fresh_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = mirror.connect(tmp_path / "state" / "mirror.sqlite3")
    yield conn
    conn.close()


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path / "reports").ensure()
