"""`incidents serve` on one host of a fleet sharing a real PostgreSQL mirror: it lists
every host's incidents with the host named, shows one another host holds, and a decision
made through its API is routed to that host and applied there on its next pass."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from incidents import fleet
from incidents.mirror import target
from tests.fleet.hosts import Host, make_hosts
from tests.fleet.test_shared import capture, run
from tests.review.chromium import Browser
from tests.serve.server import Server, Stream
from tests.serve.test_browser import present, wait_for


def two_hosts(tmp_path: Path, pg_url: str) -> tuple[Host, Host, str, str]:
    """Hosts a and b; b holds an escalated incident, a an open one (both in the mirror)."""
    a, b = make_hosts(tmp_path, pg_url, ("a", "b"))
    held = capture(b)
    run(b, "drive", held)  # escalated on host b (its one fixer attempt failed)
    assert (b.root.bucket("escalated") / held).is_dir()
    mine = capture(a)
    run(a, "status")
    return a, b, held, mine


def _validator(server: Server) -> Callable[[str, object], None]:
    """Validates an answer against the schema the server's OpenAPI document gives for it."""
    import jsonschema

    doc = server.call("GET", "/api/openapi.json").json()

    def check(name: str, answer: object) -> None:
        jsonschema.Draft202012Validator({**doc, "$ref": f"#/components/schemas/{name}"}).validate(
            answer
        )

    return check


def test_serve_on_one_host_lists_shows_and_routes_another_hosts_incident(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, held, mine = two_hosts(tmp_path, pg_url)
    server = Server(a.root.path, env=a.env)
    try:
        listed = server.until("/api/incidents?all=true", lambda d: d["total"] == 2)
        assert listed["host"] == "a"
        assert {r["incident_id"]: r["host"] for r in listed["incidents"]} == {held: "b", mine: "a"}
        only_b = server.call("GET", "/api/incidents?status=escalated&host=b").json()
        assert [(r["incident_id"], r["host"]) for r in only_b["incidents"]] == [(held, "b")]
        here = server.call("GET", "/api/incidents?all=true&all_hosts=false").json()
        assert [r["incident_id"] for r in here["incidents"]] == [mine]
        assert server.call("GET", "/api/incidents?host=-x").status == 400

        detail = server.call("GET", f"/api/incidents/{held}")
        assert detail.status == 200, detail.body
        doc = detail.json()
        assert doc["host"] == "b" and doc["bucket"] == "escalated"
        assert "on host b" in doc["elsewhere"] and doc["row"]["incident_id"] == held
        assert server.call("GET", f"/api/incidents/{mine}").json()["host"] == "a"
        assert server.call("GET", "/api/incidents/nobody_has_it").status == 404

        check = _validator(server)
        check("IncidentList", listed)
        check("IncidentDetail", doc)

        body = {"guidance": "close the parenthesis", "requeue": True}
        sent = server.act(f"/api/escalations/{held}/resolve", body)
        assert sent.status == 202, sent.body
        assert sent.json() == {"incident_id": held, "routed_to": "b",
                               "decision": fleet.RESOLVE}  # fmt: skip
        check("Routed", sent.json())
        with Stream(server) as stream:  # host b's events reach host a's stream
            fresh = capture(b)
            run(b, "status")
            seen = stream.until("incident.captured")
            assert seen[-1].data["incident_id"] == fresh
        closing = {"bucket": "resolved", "reason": "a duplicate"}
        archived = server.act(f"/api/incidents/{fresh}/archive", closing)
        assert archived.status == 202 and archived.json()["routed_to"] == "b", archived.body
    finally:
        _out, err = server.stop()
    assert "failed" not in err, err
    assert (b.root.bucket("escalated") / held).is_dir()  # nothing moves before b's pass

    # host b's next pass (what its watcher runs at every rescan), in this process as b
    monkeypatch.setenv("INCIDENTS_CONFIG", b.env["INCIDENTS_CONFIG"])
    target.bind(b.root.path, pg_url, "b")
    try:
        done = fleet.fleet_pass(b.root)
    finally:
        target.unbind(b.root.path)
    assert (b.root.inbox / held).is_dir()  # requeued: back in b's inbox
    applied = [(i, o.split()[0]) for _id, i, o in done.applied]
    assert applied == [(held, "requeue"), (fresh, "resolved")], done.applied
    assert (b.root.bucket("resolved") / fresh).is_dir()


@pytest.mark.slow  # a browser
def test_the_dashboard_names_the_hosts_and_says_where_a_decision_went(
    tmp_path: Path, pg_url: str, browser: Browser
) -> None:
    a, b, held, mine = two_hosts(tmp_path, pg_url)
    server = Server(a.root.path, env=a.env)
    try:
        browser.goto(f"http://{server.host}/#key={server.token}")
        wait_for(lambda: present(browser, f'.card[data-id="{held}"]'), "host b's escalation")
        wait_for(lambda: present(browser, f'#inbox tr[data-id="{mine}"]'), "host a's incident")
        assert browser.js("document.getElementById('inbox-host').hidden") is False
        cell = f"document.querySelector('#inbox tr[data-id=\"{mine}\"] td.host').textContent"
        assert browser.js(cell) == "a"
        card = f"document.querySelector('.card[data-id=\"{held}\"]')"
        assert "host b" in browser.js(f"{card}.querySelector('.meta').textContent")
        browser.js(f"{card}.querySelector('details').open = true")  # its bundle is on b
        shown = f"{card}.querySelector('details').textContent"
        wait_for(lambda: "the bundle is on host b" in browser.js(shown), "where the bundle is")
        browser.js(f"{card}.querySelector('.act-requeue').click()")
        wait_for(lambda: browser.js("!document.getElementById('confirm').hidden"), "the dialog")
        said = browser.js("document.getElementById('confirm-text').textContent")
        assert "Host b holds it" in said and "applied on its next pass" in said
        browser.js("document.getElementById('confirm-input').value = 'close the parenthesis'")
        browser.js("document.getElementById('confirm-ok').click()")
        toast = "document.getElementById('toast').textContent"
        wait_for(lambda: "sent to host b" in browser.js(toast), "the toast")
        assert browser.js(toast).endswith("sent to host b, applied on its next pass")
    finally:
        server.stop()
    assert (b.root.bucket("escalated") / held).is_dir()  # until b's next pass
