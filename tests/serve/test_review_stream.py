"""The event stream found by review to lose events: the ids of an incident set aside (its
events deleted from the mirror) were given again to the next events, so a client resuming
after one of them never got those."""

from __future__ import annotations

import json

from incidents.layout import Root
from tests.helpers import Cli, capture
from tests.serve.server import Server, Stream


def _n(event_id: str) -> int:
    return int(event_id.rsplit("-", 1)[1])


def test_a_resume_after_a_set_aside_incident_misses_nothing(
    server: Server, root: Root, cli: Cli
) -> None:
    doomed = capture(cli, message="a bundle that will be set aside")
    seen = server.until(f"/api/incidents/{doomed}", lambda d: bool(d.get("events")))
    held = seen["events"][-1]["id"]  # a client saw up to the doomed incident's last event
    server.until("/api/health", lambda d: _n(d["last_event_id"]) >= _n(held))

    # the bundle is damaged: the watcher sets it aside and the mirror forgets its events
    path = root.inbox / doomed / "incident.json"
    doc = json.loads(path.read_text())
    doc["workdir"] = "not/absolute"
    path.write_text(json.dumps(doc))
    r = cli("watch", "--until-idle")
    assert r.code == 0, r.out + r.err
    assert (root.path / "error_rejected" / doomed).is_dir()
    server.until("/api/health", lambda d: d["counts"]["inbox"] == 0)

    later = [capture(cli, message=f"later failure {i}") for i in range(3)]
    wanted: list[str] = []
    for incident_id in later:
        found = server.until(f"/api/incidents/{incident_id}", lambda d: bool(d.get("events")))
        wanted += [e["id"] for e in found["events"]]
    last = max(wanted, key=_n)
    server.until("/api/health", lambda d: _n(d["last_event_id"]) >= _n(last))

    with Stream(server, last_event_id=held) as stream:
        got: list[str] = []
        while last not in got:
            event = stream.next(timeout=5)
            assert event is not None, f"resumed after {held}: got {got}, wanted {wanted}"
            got.append(event.id)
    assert set(wanted) <= set(got), f"resumed after {held}: got {got}, wanted {wanted}"
