"""Several roots, each standing for a host, sharing one real PostgreSQL mirror: every row
names its host, a host's reindex touches its own rows only, `status --all-hosts` lists
them all, and bad URLs or an unreachable server are one clear line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from incidents import mirror
from incidents.layout import Root
from incidents.mirror import target
from tests.helpers import Cli
from tests.mirror.rows import make_bundle


@pytest.fixture
def hosts(tmp_path: Path, pg_url: str) -> Iterator[list[Root]]:
    """Three roots, bound to one PostgreSQL database as hosts a, b and c."""
    roots = []
    for name in ("a", "b", "c"):
        root = Root(tmp_path / f"host-{name}").ensure()
        target.bind(root.path, pg_url, name)
        roots.append(root)
    yield roots
    for root in roots:
        target.unbind(root.path)


def _fill(root: Root, prefix: str, n: int) -> list[str]:
    ids = [f"{prefix}_{i}" for i in range(n)]
    for i, incident_id in enumerate(ids):
        make_bundle(root, "inbox", incident_id, created_at=f"2026-02-17T03:00:0{i}+00:00")
    return ids


def _ids(rows: list[mirror.IncidentRow]) -> set[str]:
    return {r.incident_id for r in rows}


def test_each_host_sees_its_own_rows_and_all_hosts_see_every_row(hosts: list[Root]) -> None:
    a, b, c = hosts
    mine = {"a": _fill(a, "ia", 3), "b": _fill(b, "ib", 2), "c": []}
    for root in hosts:
        mirror.reindex(root)
    conn = mirror.connect(a.db_path)
    try:
        assert _ids(mirror.list_incidents(conn)) == set(mine["a"])
        hosted: dict[str, str] = {}
        listed = mirror.list_incidents(conn, all_hosts=True, hosts=hosted)
        assert set(hosted.items()) == {(i, h) for h, ids in mine.items() for i in ids}
        assert _ids(listed) == set(hosted)
        roots = dict(conn.execute("SELECT incident_id, root FROM incidents").fetchall())
        assert roots["ia_0"] == str(a.path) and roots["ib_0"] == str(b.path)
        assert {h.host for h in mirror.hosts(conn)} == {"a", "b", "c"}
    finally:
        conn.close()
    conn = mirror.connect(c.db_path)
    try:
        assert mirror.list_incidents(conn) == []
    finally:
        conn.close()


def test_a_reindex_rebuilds_its_own_host_and_leaves_the_others(hosts: list[Root]) -> None:
    a, b, _c = hosts
    _fill(a, "ia", 2)
    _fill(b, "ib", 2)
    mirror.reindex(a)
    mirror.reindex(b)
    (b.inbox / "ib_1" / "incident.json").unlink()  # b's folder changes; a reindexes
    for name in ("status.txt", "log_tail.txt"):
        (b.inbox / "ib_1" / name).unlink()
    (b.inbox / "ib_1").rmdir()
    result = mirror.reindex(a)
    assert result.counts["inbox"] == 2
    conn = mirror.connect(a.db_path)
    try:
        everyone = _ids(mirror.list_incidents(conn, all_hosts=True))
        assert everyone == {"ia_0", "ia_1", "ib_0", "ib_1"}  # b's rows are b's to rebuild
    finally:
        conn.close()
    mirror.reindex(b)
    conn = mirror.connect(a.db_path)
    try:
        everyone = _ids(mirror.list_incidents(conn, all_hosts=True))
        assert everyone == {"ia_0", "ia_1", "ib_0"}
    finally:
        conn.close()


def test_status_all_hosts_names_each_host(
    hosts: list[Root], pg_url: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, _c = hosts
    _fill(a, "ia", 1)
    _fill(b, "ib", 1)
    monkeypatch.setenv(target.ENV_URL, pg_url)
    for name, root in (("a", a), ("b", b)):
        monkeypatch.setenv(target.ENV_HOST, name)
        assert cli("reindex", "--root", str(root.path)).code == 0
    monkeypatch.setenv(target.ENV_HOST, "a")
    mine = cli("status", "--root", str(a.path))
    assert mine.code == 0 and "ia_0" in mine.out and "ib_0" not in mine.out
    every = cli("status", "--all-hosts", "--root", str(a.path))
    assert every.code == 0, every.err
    lines = every.out.splitlines()
    assert lines[0].split()[:2] == ["ID", "HOST"]
    assert {tuple(line.split()[:2]) for line in lines[1:]} == {("ia_0", "a"), ("ib_0", "b")}
    doc = cli("status", "--all-hosts", "--json", "--root", str(a.path)).json()
    assert {(i["incident_id"], i["host"]) for i in doc["incidents"]} == {
        ("ia_0", "a"),
        ("ib_0", "b"),
    }


def test_reindex_host_writes_the_rows_as_that_host(
    hosts: list[Root], pg_url: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = hosts[0]
    _fill(a, "ia", 2)
    monkeypatch.setenv(target.ENV_URL, pg_url)
    done = cli("reindex", "--host", "renamed", "--root", str(a.path))
    assert done.code == 0, done.err
    assert "host renamed" in done.out
    conn = mirror.connect(a.db_path)
    try:
        rows = conn.execute("SELECT DISTINCT host FROM incidents").fetchall()
        assert rows == [("renamed",)]
    finally:
        conn.close()
    bad = cli("reindex", "--host", "../x", "--root", str(a.path))
    assert bad.code == 2 and "--host" in bad.err and "Traceback" not in bad.err


def test_reindex_host_on_sqlite_is_refused(cli: Cli, tmp_path: Path) -> None:
    done = cli("reindex", "--host", "a", "--root", str(tmp_path / "r"))
    assert done.code == 2
    assert "shared PostgreSQL mirror" in done.err and len(done.err.strip().splitlines()) == 1
    assert not (tmp_path / "r" / ".state" / "mirror.sqlite3").exists()


@pytest.mark.parametrize("url", ["mysql://db/x", "postgresql://a b/x"])
def test_a_bad_url_is_one_line_and_changes_nothing(
    url: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(target.ENV_URL, url)
    done = cli("reindex", "--root", str(tmp_path / "r"))
    assert done.code == 2
    assert done.err.startswith("incidents: bad mirror url") and len(done.err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_an_unreachable_server_at_reindex_is_one_line(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "incidents.toml").write_text(
        f'[mirror]\nurl = "postgresql:///x?host={tmp_path}/nowhere"\ntimeout_s = 1.0\n'
    )
    done = cli(
        "reindex", "--config", str(tmp_path / "incidents.toml"), "--root", str(tmp_path / "r")
    )
    assert done.code != 0
    assert "cannot be reached" in done.err and len(done.err.strip().splitlines()) == 1
    assert "Traceback" not in done.err
    assert not (tmp_path / "r" / ".state" / "mirror.sqlite3").exists()


def _runs(root: Root) -> list[tuple[object, ...]]:
    conn = mirror.connect(root.db_path)
    try:
        return sorted(conn.execute("SELECT run_id, created_at, source FROM runs").fetchall())
    finally:
        conn.close()


def test_a_run_that_spans_hosts_survives_one_hosts_reindex(hosts: list[Root]) -> None:
    """A pipeline run whose steps failed on two hosts (one `--run-id`): a's reindex, once a
    holds none of its incidents, leaves the run b's incident belongs to, as it was."""
    a, b, _c = hosts
    make_bundle(a, "inbox", "ia_0", run_id="pipeline-42", step="lint",
                created_at="2026-02-17T03:00:00+00:00")  # fmt: skip
    make_bundle(b, "inbox", "ib_0", run_id="pipeline-42", step="test",
                created_at="2026-02-17T03:00:05+00:00")  # fmt: skip
    mirror.reindex(a)
    mirror.reindex(b)
    assert _runs(a) == [("pipeline-42", "2026-02-17T03:00:00+00:00", "lint")]
    for name in ("incident.json", "status.txt", "log_tail.txt"):
        (a.inbox / "ia_0" / name).unlink()
    (a.inbox / "ia_0").rmdir()
    mirror.reindex(a)
    live = _runs(a)
    assert live == [("pipeline-42", "2026-02-17T03:00:05+00:00", "test")]  # b's, from b's row
    mirror.reindex(b)
    assert _runs(b) == live  # what b's rebuild derives: the same


def test_reindex_host_renames_a_root_whose_incidents_were_worked(
    hosts: list[Root], pg_url: str, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renamed host of the README: its rows move to the new name, workstreams and
    escalations included (a worked incident's workstream made the rebuild fail on its key)."""
    a = hosts[0]
    make_bundle(a, "inbox", "ia_0", state={"current_state": "S_PLANNED"})
    make_bundle(a, "inbox", "ia_1")
    mirror.reindex(a)
    target.unbind(a.path)
    monkeypatch.setenv(target.ENV_URL, pg_url)
    done = cli("reindex", "--host", "renamed", "--root", str(a.path))
    assert done.code == 0, done.err
    target.bind(a.path, pg_url, "renamed")
    conn = mirror.connect(a.db_path)
    try:
        for table in ("incidents", "workstreams"):
            hosts_of = conn.execute(f"SELECT DISTINCT host FROM {table}").fetchall()
            assert hosts_of == [("renamed",)], table
    finally:
        conn.close()


def test_status_all_hosts_on_sqlite_names_this_host_for_rows_older_than_hosts(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows a mirror held before rows named their host (migration 5 gave them '') are this
    host's: a SQLite mirror is one root's, so `--all-hosts` names this host, not a blank."""
    import sqlite3

    root = Root(tmp_path / "reports").ensure()
    make_bundle(root, "inbox", "old_0", created_at="2026-02-17T03:00:00+00:00")
    monkeypatch.setenv(target.ENV_HOST, "hx")
    assert cli("reindex", "--root", str(root.path)).code == 0
    with sqlite3.connect(root.db_path) as conn:  # as an older version left it
        conn.execute("UPDATE incidents SET host = ''")
    every = cli("status", "--all-hosts", "--root", str(root.path))
    assert every.code == 0, every.err
    assert [line.split()[:2] for line in every.out.splitlines()[1:]] == [["old_0", "hx"]]
    doc = cli("status", "--all-hosts", "--json", "--root", str(root.path)).json()
    assert [(i["incident_id"], i["host"]) for i in doc["incidents"]] == [("old_0", "hx")]
