"""Shared fixtures. Every test runs in its own temp dir with its own reports root, and a
guard fails any test that writes into the checkout's real `reports/`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from incidents.cli import main
from incidents.layout import Root
from tests import pg
from tests.helpers import REPO, Cli, Result
from tests.stand_ins import on_path

if TYPE_CHECKING:
    from tests.review.chromium import Browser


def _real_reports_snapshot() -> set[str]:
    base = REPO / "reports"
    return {str(p.relative_to(base)) for p in base.rglob("*")} if base.exists() else set()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    before = _real_reports_snapshot()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INCIDENTS_ROOT", str(tmp_path / "reports"))
    monkeypatch.setenv("INCIDENTS_CRASH_DIR", str(tmp_path / "crash"))
    monkeypatch.delenv("INCIDENTS_CONFIG", raising=False)
    yield
    assert _real_reports_snapshot() == before, "a test wrote into the checkout's reports/"


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder first on PATH for stand-in executables (tests/stand_ins.py)."""
    return on_path(tmp_path, monkeypatch)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path / "reports")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's headless Chromium (installed when missing, as root), or the test skips."""
    from tests.review.chromium import find_or_install

    binary, why = find_or_install()
    if binary is None:
        pytest.skip(f"no headless Chromium: {why}")
    return binary


@pytest.fixture
def browser(chromium: str) -> Iterator[Browser]:
    """One page of that Chromium, driven over the DevTools pipe (tests/review/chromium.py)."""
    from tests.review.chromium import Browser

    b = Browser(chromium)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run `incidents ARGS` in-process; returns exit code, stdout, stderr."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pg.Server]:
    """One real PostgreSQL server per test process (each xdist worker its own), stopped
    and removed after; the tests that use it skip, with the reason, where none can run."""
    server, why = pg.start_server()
    if server is None:
        pytest.skip(why)
    yield server
    pg.stop_server(server)


@pytest.fixture
def pg_url(pg_server: pg.Server) -> str:
    """A new empty database on the session's server (one per test)."""
    return pg_server.create_database()
