"""`GET /api/events` against a real server: real captures and a real watcher produce the
mirror's events in commit order, with seed 003's names; a reconnect with Last-Event-ID
resumes without a gap or a repeat; a rebuilt mirror says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from incidents.layout import Root
from tests.helpers import BROKEN, FAST, TIERS_OFF, Cli, capture, use_config
from tests.serve.server import Server, Stream

WATCH_S = 120


def watch_until_idle() -> None:
    """The real watcher, as a process: drives everything to a close or to waiting."""
    done = subprocess.run(
        [sys.executable, "-m", "incidents", "watch", "--until-idle"],
        capture_output=True, text=True, timeout=WATCH_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def ids_increase(events: list[str]) -> bool:
    numbers = [int(e.rpartition("-")[2]) for e in events]
    return numbers == sorted(set(numbers))


def test_a_capture_and_the_watcher_stream_in_order(server: Server, cli: Cli, fast: Path) -> None:
    with Stream(server) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        incident_id = capture(cli, ws=fast, target="bad.py", content=BROKEN)
        [first] = stream.take(1)
        assert (first.event, first.data["incident_id"]) == ("incident.captured", incident_id)
        watch_until_idle()
        got = stream.until("incident.escalation")
    assert [e.event for e in got] == [
        "incident.state_transition",  # S_INIT: PLAN
        "incident.plan_generated",
        "incident.state_transition",  # RUN_PIPELINE: the baseline check
        "incident.error_report_generated",
        "incident.state_transition",  # QUARANTINE: no fixer tier
        "incident.archived",
        "incident.escalation",
    ]
    assert {e.data["incident_id"] for e in got} == {incident_id}
    assert [e.data["payload"]["action"] for e in got if e.data["type"] == "state_transition"] == [
        "PLAN", "RUN_PIPELINE", "QUARANTINE",
    ]  # fmt: skip
    assert ids_increase([first.id] + [e.id for e in got])
    assert all(e.id == e.data["id"] for e in got)
    import jsonschema

    doc = server.call("GET", "/api/openapi.json").json()
    for e in [first, *got]:  # each event's data is the document's Event
        jsonschema.Draft202012Validator({**doc, "$ref": "#/components/schemas/Event"}).validate(
            e.data
        )


def test_seed_003_names(
    server: Server, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_config(
        tmp_path,
        monkeypatch,
        FAST + TIERS_OFF.replace('aider]\nmode = "off"', 'aider]\nmode = "handoff"'),
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    with Stream(server) as stream:
        capture(cli, ws=ws, target="bad.py", content=BROKEN)
        watch_until_idle()
        waiting = stream.until("agent.waiting_for_input")
        assert waiting[-1].data["type"] == "waiting_for_input"
        assert waiting[-1].data["payload"]["agent"] == "aider"
        assert server.act("/api/pause", {"reason": "provider outage"}).status == 200
        [paused] = stream.take(1)
        assert paused.event == "agent.build_paused" and paused.data["incident_id"] is None
        assert paused.data["payload"] == {"reason": "provider outage", "by": "human"}
        assert server.act("/api/resume").status == 200
        assert stream.take(1)[0].event == "incident.resumed"
        # a transient failure whose check still fails is retried after a backoff
        (ws / "fetch.py").write_text("import sys\nsys.exit(1)\n")
        flaky = capture(cli, "--verify", "python fetch.py", ws=ws, step="download",
                        message="Network timeout during receipt download: connection timed out")  # fmt: skip
        for _ in range(3):  # plan, baseline check, then the wait
            assert cli("step", flaky).code == 0
        retrying = stream.until("agent.retrying")[-1]
        assert retrying.data["incident_id"] == flaky
        assert retrying.data["payload"]["not_before"] > retrying.data["ts"]
    [row] = server.call("GET", "/api/incidents?step=download").json()["incidents"]
    assert row["incident_id"] == flaky and row["not_before"] is not None


def test_a_reconnect_resumes_after_its_last_id(server: Server, cli: Cli) -> None:
    with Stream(server) as stream:
        capture(cli, message="first")
        [seen] = stream.take(1)
    # while no client listens: a pause (committed at once) and two captures (committed
    # when the server's catch-up folds them in: after the pause)
    assert server.act("/api/pause", {"reason": "while away"}).status == 200
    missed = [capture(cli, message="second"), capture(cli, message="third")]
    with Stream(server, last_event_id=seen.id) as again:
        back = again.take(3)
        assert (back[0].event, back[0].data["incident_id"]) == ("agent.build_paused", None)
        # one catch-up pass commits both, in the order of their names
        assert [(e.event, e.data["incident_id"]) for e in back[1:]] == [
            ("incident.captured", i) for i in sorted(missed)
        ]
        live = capture(cli, message="fourth")
        [now] = again.take(1)
        assert (now.event, now.data["incident_id"]) == ("incident.captured", live)
        assert again.next(timeout=1.5) is None  # nothing twice
    ids = [seen.id] + [e.id for e in back] + [now.id]
    assert (
        ids_increase(ids) and int(ids[-1].rpartition("-")[2]) - int(ids[0].rpartition("-")[2]) == 4
    )
    # a first connection may name its starting point in the query
    with Stream(server, query=f"?last_event_id={seen.id}") as query:
        assert [e.id for e in query.take(4)] == ids[1:]


def test_a_bad_id_is_refused_and_a_rebuild_is_told(server: Server, cli: Cli, root: Root) -> None:
    with Stream(server, last_event_id="nonsense") as bad:
        assert bad.status == 400 and b"Last-Event-ID" in bad.body()
    capture(cli, message="before the rebuild")
    with Stream(server) as live:
        assert cli("reindex").code == 0
        [rebuilt] = live.take(1)
        assert rebuilt.event == "mirror.rebuilt"
        after = capture(cli, message="after the rebuild")
        [captured] = live.take(1)
        assert captured.data["incident_id"] == after
    old = rebuilt.id.replace(rebuilt.id.split("-")[0], "00000000")
    with Stream(server, last_event_id=old) as stale:
        assert stale.take(1)[0].event == "mirror.rebuilt"


def test_events_withdrawn_at_the_top_are_told(server: Server, cli: Cli, root: Root) -> None:
    """An incident set aside takes its events out of the mirror; when they were the last
    ones, clients are told to reload, and the next event still arrives, under a new id
    (an id is never given twice: a client resuming after the withdrawn one misses none)."""
    with Stream(server) as stream:
        gone = capture(cli, message="set aside by hand")
        [first] = stream.take(1)
        (root.path / "error_rejected").mkdir(exist_ok=True)
        (root.inbox / gone).rename(root.path / "error_rejected" / gone)
        [told] = stream.take(1)
        assert told.event == "mirror.rebuilt"
        after = capture(cli, message="the next one")
        [captured] = stream.take(1)
    assert captured.data["incident_id"] == after
    assert int(captured.id.rsplit("-", 1)[1]) > int(first.id.rsplit("-", 1)[1])


def test_a_deleted_mirror_is_rebuilt_under_a_running_server(
    server: Server, cli: Cli, root: Root
) -> None:
    with Stream(server) as stream:
        kept = [capture(cli, message=f"kept {i}") for i in range(3)]
        stream.take(3)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{root.db_path}{suffix}").unlink(missing_ok=True)
        assert stream.until("mirror.rebuilt")
        after = capture(cli, message="after the rebuild")
        *between, captured = stream.until("incident.captured")
        assert captured.data["incident_id"] == after
        assert {e.event for e in between} <= {"mirror.rebuilt"}  # told again, if at all
    listed = server.call("GET", "/api/incidents").json()
    assert sorted(r["incident_id"] for r in listed["incidents"]) == sorted([*kept, after])
