"""Fixtures of the mirror's tests: real databases, never mocked. `fresh_db` and `root` run
each test that takes them twice: on a SQLite file in tmp_path and on a database of its own
on a real PostgreSQL server (tests/pg.py), the root bound to it (`mirror.target.bind`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents import mirror
from incidents.layout import Root
from incidents.mirror import target

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def bound(request: pytest.FixtureRequest, backend: str, folder: Path) -> None:
    """Bind `folder` (a root) to a new PostgreSQL database when `backend` says so."""
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        target.bind(folder, url, "test-host")
        request.addfinalizer(lambda: target.unbind(folder))


@pytest.fixture
def fresh_db(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> Iterator[sqlite3.Connection]:
    bound(request, backend, tmp_path)
    conn = mirror.connect(tmp_path / "state" / "mirror.sqlite3")
    yield conn
    conn.close()


@pytest.fixture
def root(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> Root:
    bound(request, backend, tmp_path / "reports")
    return Root(tmp_path / "reports").ensure()
