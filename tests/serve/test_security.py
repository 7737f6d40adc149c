"""The server's guards, against a real uvicorn: the bearer token (401), a foreign Origin or
Host (403), the body cap (413), the loopback bind, and no token in logs or pages."""

from __future__ import annotations

import http.client
import stat

import pytest

from incidents.layout import Root
from incidents.serve.guard import BODY_MAX
from tests.helpers import Cli, capture
from tests.serve.server import Server, running

ACTIONS = [
    ("/api/pause", {"reason": "x"}),
    ("/api/resume", {}),
    ("/api/incidents/incident_x/archive", {"bucket": "resolved", "reason": "x"}),
    ("/api/escalations/incident_x/resolve", {"guidance": "x"}),
]


@pytest.mark.parametrize(("path", "body"), ACTIONS)
def test_every_action_needs_the_token(server: Server, root: Root, path: str, body: object) -> None:
    missing = server.call("POST", path, body)
    assert missing.status == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "a bearer token is required" in missing.json()["error"]
    wrong = server.call("POST", path, body, token="not-the-token")
    assert wrong.status == 401 and "wrong" in wrong.json()["error"]
    basic = server.call("POST", path, body, headers={"Authorization": f"Basic {server.token}"})
    assert basic.status == 401
    assert not (root.state / "paused.json").exists()  # nothing was done


def test_a_foreign_origin_is_refused_even_with_the_token(server: Server, root: Root) -> None:
    evil = {"Origin": "http://evil.example"}
    r = server.call("POST", "/api/pause", {"reason": "x"}, token=server.token, headers=evil)
    assert r.status == 403 and "origin" in r.json()["error"]
    assert not (root.state / "paused.json").exists()
    assert server.call("GET", "/api/incidents", headers=evil).status == 403
    assert server.call("GET", "/api/incidents", headers={"Origin": "null"}).status == 403
    same = {"Origin": f"http://{server.host}"}
    assert server.call("POST", "/api/resume", {}, token=server.token, headers=same).status == 200


def test_a_foreign_host_is_refused(server: Server) -> None:
    """DNS rebinding: a name that resolves to 127.0.0.1 is not this server's."""
    r = server.call("GET", "/api/health", headers={"Host": f"evil.example:{server.port}"})
    assert r.status == 403 and "host" in r.json()["error"]
    assert (
        server.call("GET", "/api/health", headers={"Host": f"localhost:{server.port}"}).status
        == 200
    )


def test_an_oversize_body_is_refused(server: Server, root: Root) -> None:
    big = {"reason": "x" * (BODY_MAX + 10)}
    r = server.act("/api/pause", big)
    assert r.status == 413 and "over the cap" in r.json()["error"]
    # sent in chunks, with no Content-Length to declare it
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        chunks = (b"x" * 8192 for _ in range(BODY_MAX // 8192 + 2))
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        conn.request("POST", "/api/pause", body=chunks, headers=headers, encode_chunked=True)
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    assert not (root.state / "paused.json").exists()


def test_the_token_is_private_shown_once_and_rotates(root: Root, cli: Cli) -> None:
    capture(cli, message="token=abc password=hunter2 failed")  # a secret-looking message
    with running(root.path) as first:
        token = first.token
        assert stat.S_IMODE((root.state / "serve.token").stat().st_mode) == 0o600
        assert sum(token in line for line in first.out_lines) == 2  # the token and the link
        page = first.call("GET", "/")
        assert page.status == 200 and token.encode() not in page.body
        assert first.act("/api/pause", {"reason": "x"}).status == 200
        r = cli("serve", "--new-token")
        assert r.code == 0 and "a new API token" in r.out
        new = first.token
        assert new != token and new in r.out
        assert first.call("POST", "/api/resume", {}, token=token).status == 401
        assert first.call("POST", "/api/resume", {}, token=new).status == 200
        out, err = first.stop()
    with running(root.path) as second:
        assert not any(new in line for line in second.out_lines)  # not shown again
        assert second.call("GET", "/api/incidents").status == 200
        out2, err2 = second.stop()
    for text in (err, err2, out2, out.split("serving ", 1)[1]):
        assert token not in text and new not in text


def test_binding_beyond_loopback_needs_allow_remote(cli: Cli) -> None:
    r = cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert r.code == 2
    assert "not a loopback address" in r.err and "--allow-remote" in r.err


def test_the_page_sets_a_strict_policy(server: Server) -> None:
    page = server.call("GET", "/")
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp
    assert "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert b"<script src=" not in page.body and b"<link" not in page.body  # no external asset
