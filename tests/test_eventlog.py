"""events.jsonl (incidents.eventlog): bounded, redacted lines, read safely, each key once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from incidents import eventlog, mirror
from incidents.errors import UnsafeFile
from incidents.layout import Root
from tests.mirror.rows import make_bundle

TS = "2026-02-17T03:00:00+00:00"


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def test_a_line_is_redacted_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / eventlog.EVENTS
    token = "ghp_" + "R4nd0mF4k3T0k3nV4lu3F0rT3st1ng00001"
    eventlog.append(path, [
        eventlog.event("s1.0", TS, "inc", "infra_error", {"reason": f"export T={token}"}),
        eventlog.event("s1.1", TS, "inc", "ai_attempt", {"notes": "x" * (3 * eventlog.LINE_MAX)}),
    ])  # fmt: skip
    assert token not in path.read_text()
    raw = path.read_bytes().splitlines()
    assert all(len(line) < eventlog.LINE_MAX for line in raw)
    big = lines(path)[1]["payload"]
    assert isinstance(big, dict) and big["truncated"] is True and big["bytes"] > 3 * 65536
    assert str(big["head"]).startswith('{"notes": "xxx')


def test_a_full_file_takes_one_cap_note_then_nothing(tmp_path: Path) -> None:
    path = tmp_path / eventlog.EVENTS
    path.write_bytes(b"\n" * (eventlog.FILE_MAX - eventlog.LINE_MAX - 100))
    for n in range(3):
        eventlog.append(path, [eventlog.event(f"s{n}.0", TS, "inc", "retrying", {"n": n})])
    assert [d["event"] for d in lines(path)] == ["events_capped"]
    assert os.path.getsize(path) <= eventlog.FILE_MAX


def test_links_are_refused_both_ways(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    link = tmp_path / "folder" / eventlog.EVENTS
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(UnsafeFile):
        eventlog.append(link, [eventlog.event("k", TS, "inc", "retrying", {})])
    with pytest.raises(UnsafeFile):
        eventlog.read(link)
    assert outside.read_text() == "secret\n"
    hard = tmp_path / "folder2" / eventlog.EVENTS
    hard.parent.mkdir()
    os.link(outside, hard)
    with pytest.raises(UnsafeFile):
        eventlog.append(hard, [eventlog.event("k", TS, "inc", "retrying", {})])


def test_a_torn_line_is_skipped_and_the_next_line_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / eventlog.EVENTS
    eventlog.append(path, [eventlog.event("s1.0", TS, "inc", "retrying", {})])
    with open(path, "ab") as f:
        f.write(b'{"key": "s2.0", "ts": "')  # a process killed in the middle of its write
    docs, end, bad = eventlog.read(path)
    assert [d["key"] for d in docs] == ["s1.0"] and bad == 0
    eventlog.append(path, [eventlog.event("s2.0", TS, "inc", "retrying", {})])
    docs, end, bad = eventlog.read(path)
    assert [d["key"] for d in docs] == ["s1.0", "s2.0"] and bad == 1
    assert end == os.path.getsize(path)


def test_the_mirror_reads_each_key_once_and_only_known_lines(tmp_path: Path) -> None:
    """A step redone after a crash writes its keys again; a hostile line (an unknown
    event type, a payload that is not an object, another incident's id) adds nothing
    of its own."""
    root = Root(tmp_path / "reports").ensure()
    folder = make_bundle(root, "inbox", "inc_k")
    path = folder / eventlog.EVENTS
    first = eventlog.event("s1.0", TS, "inc_k", "retrying", {"try": 1})
    eventlog.append(path, [first])
    conn = mirror.connect(root.db_path)
    try:
        mirror.reindex(root)
        eventlog.append(path, [
            {**first, "payload": {"try": 2}},  # the redo: same key
            eventlog.event("x.0", TS, "inc_k", "no_such_type", {}),
            {**eventlog.event("x.1", TS, "inc_k", "retrying", {}), "payload": [1]},
            eventlog.event("x.2", TS, "other_incident", "flaky", {}),
        ])  # fmt: skip
        with mirror.write(conn):
            mirror.ingest_incident(conn, root, "inc_k")
        rows = conn.execute("SELECT incident_id, event_type, payload_json FROM events").fetchall()
    finally:
        conn.close()
    assert sorted(rows) == [("inc_k", "flaky", "{}"), ("inc_k", "retrying", '{"try":1}')]
