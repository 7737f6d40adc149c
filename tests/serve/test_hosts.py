"""On a root's own SQLite mirror every row is this host's, and names it, as a fleet's rows
do (tests/fleet/test_serve.py: serve on a shared PostgreSQL mirror)."""

from __future__ import annotations

from incidents.layout import Root
from tests.helpers import Cli, capture
from tests.serve.server import Server


def test_every_row_names_this_host_and_the_host_filter_keeps_to_it(
    server: Server, cli: Cli, root: Root
) -> None:
    incident_id = capture(cli, message="download timed out")
    doc = server.until("/api/incidents", lambda d: d["total"] == 1)
    me = doc["host"]
    assert me and [r["host"] for r in doc["incidents"]] == [me]
    assert server.call("GET", f"/api/incidents?host={me}").json()["total"] == 1
    assert server.call("GET", "/api/incidents?all_hosts=false").json()["total"] == 1
    assert server.call("GET", "/api/incidents?host=some-other-host").json()["total"] == 0
    assert server.call("GET", "/api/incidents?all_hosts=maybe").status == 400
    assert server.call("GET", f"/api/incidents/{incident_id}").json()["host"] == me
