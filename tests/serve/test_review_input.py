"""Input found by review to crash the server (500) where it should be refused as bad input
(400, the CLI's words): digits that are not ASCII, ages past the calendar, and URLs no
route or method answers (JSON, not plain text)."""

from __future__ import annotations

import pytest

from incidents.layout import Root
from tests.helpers import Cli
from tests.serve.server import Server

# "²" is a digit to str.isdigit() but not to int(); "%C2%B2" is it in a URL
NOT_ASCII = [
    "/api/incidents?limit=%C2%B2",
    "/api/incidents?offset=%C2%B2",
    "/api/events?last_event_id=abc-%C2%B2",
    "/api/incidents?since=99999999999d",
    "/api/incidents?since=999999999d",
]


@pytest.mark.parametrize("path", NOT_ASCII)
def test_odd_numbers_are_bad_input_not_a_crash(server: Server, path: str) -> None:
    r = server.call("GET", path)
    assert r.status == 400, r.body
    assert r.json()["kind"] == "UsageError" and r.json()["exit_code"] == 2


def test_an_escalation_id_of_odd_digits_is_bad_input(server: Server, root: Root) -> None:
    r = server.act("/api/escalations/%C2%B2/resolve", {"guidance": "x"})
    assert r.status == 400, r.body
    assert r.json()["kind"] == "InvalidId"


def test_status_since_past_the_calendar_is_a_usage_error(cli: Cli) -> None:
    r = cli("status", "--since", "99999999999d")
    assert r.code == 2, r.out + r.err
    assert "--since" in r.err and "internal error" not in r.err


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/incidents/..%2F..%2Fetc%2Fpasswd", 404),  # %2F splits the path
        ("GET", "/api/nothing", 404),
        ("DELETE", "/api/health", 405),
        ("PUT", "/api/pause", 405),
        ("GET", "/api/pause", 405),
    ],
)
def test_no_route_or_method_is_a_json_error(
    server: Server, method: str, path: str, status: int
) -> None:
    r = server.call(method, path)
    assert r.status == status
    assert r.headers["content-type"] == "application/json", r.body
    doc = r.json()
    assert doc["kind"] in ("NotFound", "MethodNotAllowed") and doc["error"]
    if status == 405:
        assert "allow" in r.headers


def test_a_run_id_with_a_slash_has_its_escalations(server: Server, cli: Cli) -> None:
    """Run ids are free text (`capture --run-id build/42`): the endpoint takes a run id
    sent with its slash escaped (%2F), which arrives unescaped."""
    from tests.helpers import capture

    capture(cli, "--run-id", "ci/build/42", message="nightly export failed")
    server.until("/api/incidents", lambda d: d["total"] == 1)
    r = server.call("GET", "/api/jobs/ci%2Fbuild%2F42/escalations")
    assert r.status == 200, r.body
    assert r.json() == {"run_id": "ci/build/42", "escalations": []}
    assert server.call("GET", "/api/jobs/ci%2Fbuild%2F43/escalations").status == 404
    doc = server.call("GET", "/api/openapi.json").json()
    assert "/api/jobs/{run_id}/escalations" in doc["paths"]
